package http

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

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

// appendGraphJSON writes what json.Encoder does, byte for byte, whatever
// the strings hold.
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
		if err := json.NewEncoder(&want).Encode(g); err != nil {
			t.Fatal(err)
		}
		if got := appendGraphJSON(nil, g); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("graph %+v:\n got %q\nwant %q", g, got, want.Bytes())
		}
	}
}
