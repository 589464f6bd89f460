package e2eutil

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestCheckResponse: an answer that matches its operation passes and is
// counted, one that does not fails, and a path the document does not
// describe is not checked.
func TestCheckResponse(t *testing.T) {
	for _, tc := range []struct {
		name, method, path string
		status             int
		contentType, body  string
		checked, fails     bool
	}{
		{"health", "GET", "/healthz", 200, "application/json", `{"status":"ok"}`, true, false},
		{"health, another word", "GET", "/healthz", 200, "application/json", `{"status":"fine"}`, true, true},
		{"error form", "GET", "/objects/x?y=1", 400, "application/json", `{"error":"unknown query parameter \"y\""}`, true, false},
		{"error without its field", "GET", "/objects/x", 404, "application/json", `{"message":"no"}`, true, true},
		{"a status the operation does not list", "GET", "/status", 418, "application/json", `{"error":"teapot"}`, true, true},
		{"a field of the wrong type", "GET", "/audit", 200, "application/json", `{"items":null,"next":1}`, true, true},
		{"a field the type does not have", "GET", "/leases", 200, "application/json", `{"items":[],"extra":true}`, true, true},
		{"the graph as GraphViz", "GET", "/graph?format=dot", 200, "text/vnd.graphviz; charset=utf-8", "strict digraph full {\n}\n", true, false},
		{"metrics", "GET", "/metrics", 200, "text/plain", "# HELP x\n", false, false},
		{"an unknown path", "GET", "/nope", 404, "application/json", `{"error":"no such endpoint: /nope"}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, err := CheckResponse(tc.method, tc.path, tc.status, tc.contentType, []byte(tc.body))
			if checked != tc.checked || (err != nil) != tc.fails {
				t.Errorf("checked %v, error %v; want checked %v, failing %v", checked, err, tc.checked, tc.fails)
			}
		})
	}
	if counts := ContractCounts(); !strings.Contains(counts, "GET /healthz") || !strings.Contains(counts, "not reached:") {
		t.Errorf("counts:\n%s", counts)
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestValidatingProxy: the proxy passes every answer on unchanged, and
// reports one that does not match the document.
func TestValidatingProxy(t *testing.T) {
	daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/healthz":
			fmt.Fprint(w, `{"status":"ok"}`)
		case "/leases":
			fmt.Fprint(w, `{"items":[],"renamed":true}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"no such endpoint: %s"}`, r.URL.Path)
		}
	}))
	defer daemon.Close()
	rec := &recorder{TB: t}
	proxy := ValidatingProxy(rec, daemon.URL, nil)
	for _, tc := range []struct {
		path, body string
		code       int
		fails      bool
	}{
		{"/healthz", `{"status":"ok"}`, 200, false},
		{"/leases", `{"items":[],"renamed":true}`, 200, true},
		{"/nope", `{"error":"no such endpoint: /nope"}`, 404, false},
	} {
		rec.errors = nil
		resp, err := http.Get(proxy + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || string(body) != tc.body {
			t.Errorf("%s through the proxy: %d %s, want %d %s", tc.path, resp.StatusCode, body, tc.code, tc.body)
		}
		if failed := len(rec.errors) > 0; failed != tc.fails {
			t.Errorf("%s: reported %q, want failing %v", tc.path, rec.errors, tc.fails)
		}
	}
}
