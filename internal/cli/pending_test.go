package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestGetPendingOldestFirst: get pending asks the API for the decisions
// waiting longest first (order=oldest, as /stuck lists), whatever the
// server's default, so that --limit keeps those; the table lists them by
// namespace, kind and name (TestListsSorted), -o json as they came.
func TestGetPendingOldestFirst(t *testing.T) {
	var asked []string
	now := time.Now().UTC()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Query().Get("order"))
		item := func(name string, age time.Duration) string {
			return fmt.Sprintf(`{"controller": "podgc", "rule": "BR-24-03", "action": "delete", "reason": "r", "since": %q,
				"target": {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": %q, "uid": "u-%s"}}`,
				now.Add(-age).Format(time.RFC3339Nano), name, name)
		}
		fmt.Fprintf(w, `{"items": [%s, %s]}`, item("old", time.Hour), item("new", time.Minute))
	}))
	defer srv.Close()
	code, stdout, stderr := runCLI(t, map[string]string{envServer: srv.URL}, "get", "pending")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(asked) != 1 || asked[0] != "oldest" {
		t.Errorf("asked for order %q, want one page with order=oldest", asked)
	}
	if o, n := strings.Index(stdout, "old "), strings.Index(stdout, "new "); o < 0 || n < 0 || n > o {
		t.Errorf("table, want new before old, by name:\n%s", stdout)
	}
	_, js, _ := runCLI(t, map[string]string{envServer: srv.URL}, "get", "pending", "-o", "json")
	if o, n := strings.Index(js, `"old"`), strings.Index(js, `"new"`); o < 0 || n < 0 || o > n {
		t.Errorf("-o json, want old before new, as the API answered:\n%s", js)
	}
}
