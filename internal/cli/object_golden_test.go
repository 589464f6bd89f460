package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var updateCLIGoldens = flag.Bool("update-goldens", false, "rewrite testdata/objects from the output printed now")

// goldenAnswer is the compact body of the server's golden answer name
// (internal/http/testdata/api), with the times the goldens scrub set to
// one.
func goldenAnswer(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "http", "testdata", "api", name+".txt"))
	if err != nil {
		t.Error(err)
		return ""
	}
	lines := strings.SplitN(string(b), "\n", 3)
	if len(lines) < 3 {
		t.Errorf("golden %s has no body", name)
		return ""
	}
	return strings.ReplaceAll(lines[1], `"NOW"`, `"2026-01-02T04:04:05Z"`)
}

// goldenObjectsServer answers as the server whose answers the goldens of
// internal/http hold: lookups from lookup.txt, each object's answers from
// its own golden, the graph from graph-uid.txt.
func goldenObjectsServer(t *testing.T) *httptest.Server {
	t.Helper()
	var all struct{ Items []json.RawMessage }
	if err := json.Unmarshal([]byte(goldenAnswer(t, "lookup")), &all); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		// An answer the goldens do not hold is a 404, as for an unknown UID.
		answer := func(name string) string {
			if _, err := os.Stat(filepath.Join("..", "http", "testdata", "api", name+".txt")); err != nil {
				w.WriteHeader(http.StatusNotFound)
				return `{"error":"no golden ` + name + `"}`
			}
			return goldenAnswer(t, name)
		}
		switch p := r.URL.Path; {
		case p == "/objects":
			var items []string
			for _, it := range all.Items {
				var o struct{ Name string }
				if err := json.Unmarshal(it, &o); err != nil {
					t.Error(err)
				}
				if name := q.Get("name"); name == "" || o.Name == name {
					items = append(items, string(it))
				}
			}
			fmt.Fprintf(w, `{"items":[%s]}`, strings.Join(items, ","))
		case p == "/graph" && q.Get("format") == "dot":
			w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
			fmt.Fprint(w, goldenDOT(t, "graph-uid-dot"))
		case p == "/graph":
			fmt.Fprint(w, goldenAnswer(t, "graph-uid"))
		case strings.HasSuffix(p, "/cascade"):
			fmt.Fprint(w, answer(goldenCascades[strings.TrimPrefix(strings.TrimSuffix(p, "/cascade"), "/objects/uid-")+" "+q.Get("propagation")]))
		case strings.HasSuffix(p, "/history"):
			fmt.Fprint(w, answer("history-"+strings.TrimPrefix(strings.TrimSuffix(p, "/history"), "/objects/uid-")))
		default:
			fmt.Fprint(w, answer("object-"+strings.TrimPrefix(p, "/objects/uid-")))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// goldenCascades name the golden cascade previews by object and
// propagation.
var goldenCascades = map[string]string{"A background": "cascade-A", "A foreground": "cascade-A-foreground",
	"A orphan": "cascade-A-orphan", "D foreground": "cascade-D", "L background": "cascade-L"}

// goldenDOT is the body of a golden DOT answer, which spans lines.
func goldenDOT(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "http", "testdata", "api", name+".txt"))
	if err != nil {
		t.Error(err)
	}
	_, body, _ := strings.Cut(string(b), "\n")
	body, _, _ = strings.Cut(body, "}\n")
	return body + "}\n"
}

// TestObjectCommandGoldens runs why, cascade and tree on the server's
// golden answers and compares what they print with testdata/objects: the
// commands read the answers as they did when the goldens were written.
func TestObjectCommandGoldens(t *testing.T) {
	srv := goldenObjectsServer(t)
	now := time.Date(2026, 1, 2, 5, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"why-A", []string{"why", "cm/A"}},
		{"why-B", []string{"why", "configmap", "B"}},
		{"why-D", []string{"why", "cm/D"}},
		{"why-G", []string{"why", "cm/G", "-n", "a"}},
		{"why-L", []string{"why", "cm/L"}},
		{"why-G-json", []string{"why", "cm/G", "-o", "json"}},
		{"why-G-yaml", []string{"why", "cm/G", "-o", "yaml"}},
		{"cascade-A", []string{"cascade", "cm/A"}},
		{"cascade-A-foreground", []string{"cascade", "cm/A", "--propagation", "foreground", "-o", "wide"}},
		{"cascade-A-orphan", []string{"cascade", "cm/A", "--propagation", "orphan"}},
		{"cascade-D", []string{"cascade", "cm/D", "--propagation", "foreground", "-o", "wide"}},
		{"cascade-L", []string{"cascade", "cm/L"}},
		{"cascade-A-json", []string{"cascade", "cm/A", "-o", "json"}},
		{"tree-B", []string{"tree", "cm/B"}},
		{"tree-E", []string{"tree", "cm/E"}},
		{"tree-L", []string{"tree", "cm/L"}},
		{"tree-B-dot", []string{"tree", "cm/B", "-o", "dot"}},
		{"tree-B-yaml", []string{"tree", "cm/B", "-o", "yaml"}},
		{"tree-B-at", []string{"tree", "cm/B", "--at", "2026-01-02T05:00:00Z"}},
		{"tree-L-at", []string{"tree", "cm/L", "--at", "2026-01-02T05:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			e := &env{prog: "kubegcd", stdout: &out, stderr: &errb, lookupEnv: envOf(nil), now: func() time.Time { return now }}
			code := e.main(context.Background(), append(tc.args, "--server", srv.URL))
			got := strings.ReplaceAll(fmt.Sprintf("exit %d\n%s--- stderr\n%s", code, out.String(), errb.String()), srv.URL, "SERVER")
			path := filepath.Join("testdata", "objects", tc.name+".txt")
			if *updateCLIGoldens {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s changed:\n got: %s\nwant: %s", strings.Join(tc.args, " "), got, want)
			}
		})
	}
}
