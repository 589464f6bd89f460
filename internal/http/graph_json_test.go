package http

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// randomJSONStrings returns a source of strings, empty or made of pieces
// that encoding/json escapes in each of its ways.
func randomJSONStrings(r *rand.Rand) func() string {
	pieces := []string{"", "a", "uid-1", "apps/v1", "Deployment", "kube-system", "<b>", "&", ">", `"`, `\`, "\n", "\t", "\x00", "\x1f",
		"\x7f", "é", "日本", "\u2028", "\u2029", "\xff", "\xc3", "😀", "a b"}
	return func() string {
		var s string
		for range r.IntN(4) {
			s += pieces[r.IntN(len(pieces))]
		}
		return s
	}
}

// apiGraph is g as the API's type, node by node.
func apiGraph(g *db.Graph) *api.Graph {
	out := &api.Graph{Truncated: g.Truncated}
	if g.Nodes != nil {
		out.Nodes = make([]api.GraphNode, len(g.Nodes))
		for i, n := range g.Nodes {
			out.Nodes[i] = api.GraphNode(n)
		}
	}
	if g.Edges != nil {
		out.Edges = make([]api.GraphEdge, len(g.Edges))
		for i, e := range g.Edges {
			out.Edges[i] = api.GraphEdge(e)
		}
	}
	return out
}

// checkAppendedJSON checks that writeAppendedJSON answers b as writeJSON
// answers v, compact and indented.
func checkAppendedJSON(t *testing.T, v any, b []byte) {
	t.Helper()
	for _, ua := range []string{"Go-http-client/1.1", "curl/8.5.0", "Wget/1.21"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("User-Agent", ua)
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		writeJSON(want, r, http.StatusOK, v)
		writeAppendedJSON(got, r, b)
		if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Fatalf("%s: writeAppendedJSON:\n got %q\nwant %q", ua, got.Body.Bytes(), want.Body.Bytes())
		}
	}
}

// appendGraphJSON writes what json.Encoder does of the API's graph, byte
// for byte, whatever the strings hold.
func TestAppendGraphJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	str := randomJSONStrings(r)
	for i := range 500 {
		g := &db.Graph{Truncated: r.IntN(2) == 0}
		if i%50 != 1 {
			g.Nodes = []db.GraphNode{}
		}
		if i%50 != 2 {
			g.Edges = []db.GraphEdge{}
		}
		for range r.IntN(5) {
			g.Nodes = append(g.Nodes, db.GraphNode{UID: str(), APIVersion: str(), Kind: str(), Namespace: str(), Name: str(),
				Missing: r.IntN(2) == 0, BeingDeleted: r.IntN(2) == 0, DeletingDependents: r.IntN(2) == 0, Virtual: r.IntN(2) == 0})
		}
		for range r.IntN(5) {
			g.Edges = append(g.Edges, db.GraphEdge{Dependent: str(), Owner: str(), Controller: r.IntN(2) == 0, BlockOwnerDeletion: r.IntN(2) == 0})
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(apiGraph(g)); err != nil {
			t.Fatal(err)
		}
		if got := appendGraphJSON(nil, g, nil); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("graph %+v:\n got %q\nwant %q", g, got, want.Bytes())
		}
		if i%10 == 0 {
			checkAppendedJSON(t, apiGraph(g), appendGraphJSON(nil, g, nil))
		}
	}
}
