package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// namespacesServer answers as a kubegcd whose mirror holds namespaces and
// nothing else: every list is empty.
func namespacesServer(t *testing.T, namespaces ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		items := []map[string]string{}
		if r.URL.Path == "/objects" && q.Get("kind") == "namespaces" {
			for _, ns := range namespaces {
				if name := q.Get("name"); name == "" || name == ns {
					items = append(items, map[string]string{"apiVersion": "v1", "kind": "Namespace", "name": ns, "uid": "u-" + ns})
				}
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestNamespaceNotInMirror: a namespace the mirror does not hold is an
// error, exit 1, as an object why does not find is, naming the namespaces
// it may have meant, as completion offers them; it is not an empty answer.
// An empty answer about a namespace the mirror holds is news on stderr,
// exit 0, as kubectl says it; so is any when the mirror holds no
// namespaces at all (kubegcd may not be allowed to list them). -o json
// prints the API's answer whatever it is.
func TestNamespaceNotInMirror(t *testing.T) {
	tests := []struct {
		name       string
		namespaces []string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"typo", []string{"demo-shop", "demo-batch"}, []string{"get", "pending", "-n", "demo-shopp"},
			1, `kubegcd: namespace "demo-shopp" not found in kubegcd's mirror, did you mean "demo-shop"?` + "\n"},
		{"two near", []string{"prod-a", "prod-b", "dev"}, []string{"get", "lint", "-n", "prod-c"},
			1, `kubegcd: namespace "prod-c" not found in kubegcd's mirror, did you mean "prod-a" or "prod-b"?` + "\n"},
		{"nothing near", []string{"demo-shop"}, []string{"get", "stuck", "-n", "payments"},
			1, `kubegcd: namespace "payments" not found in kubegcd's mirror` + "\n"},
		{"empty namespace", []string{"demo-shop"}, []string{"get", "audit", "-n", "demo-shop"},
			0, "No audit rows found in namespace demo-shop.\n"},
		{"no namespaces mirrored", nil, []string{"get", "pending", "-n", "demo-shopp"},
			0, "No pending decisions found in namespace demo-shopp.\n"},
		{"why", []string{"demo-shop"}, []string{"why", "cm/x", "-n", "demo-shopp"},
			1, `kubegcd: namespace "demo-shopp" not found in kubegcd's mirror, did you mean "demo-shop"?` + "\n"},
		{"json as it came", []string{"demo-shop"}, []string{"get", "pending", "-n", "demo-shopp", "-o", "json"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := namespacesServer(t, tt.namespaces...)
			code, _, stderr := runCLI(t, map[string]string{envServer: srv.URL}, tt.args...)
			if code != tt.wantCode || stderr != tt.wantStderr {
				t.Errorf("kubegcd %v: exit %d, stderr %q; want %d, %q", tt.args, code, stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
}
