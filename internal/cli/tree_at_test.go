package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// treeAtServer answers as a kubegcd whose mirror holds one Deployment,
// shop/web, that has no owners or dependents, and whose history saw it
// created at 2026-01-10 and asked to be deleted at 2026-01-20: /graph?at=
// is empty whatever the time, as the API's is for a lone object.
func treeAtServer(t *testing.T, asked *[]string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*asked = append(*asked, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/objects":
			fmt.Fprint(w, `{"items": [{"uid": "u-web", "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web"}]}`)
		case "/graph":
			if r.URL.Query().Get("uid") != "u-web" || r.URL.Query().Get("at") == "" {
				t.Errorf("graph asked %s, want uid=u-web and at", r.URL.RawQuery)
			}
			fmt.Fprint(w, `{"nodes": [], "edges": []}`)
		case "/objects/u-web/history":
			fmt.Fprint(w, `{"target": null, "items": [
				{"time": "2026-01-10T00:00:00Z", "event": "created", "ownerReferences": [], "finalizers": [], "deletionTimestamp": null},
				{"time": "2026-01-20T00:00:00Z", "event": "deletion-requested", "ownerReferences": [], "finalizers": ["example.com/hold"],
				 "deletionTimestamp": "2026-01-20T00:00:00Z"}], "audit": []}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error": "no such path"}`)
		}
	}))
}

// TestTreeAt: with --at, tree shows what the API shows for that time. An
// object that did not exist then is an error (exit 1) saying so, not the
// object as it is now; a time in the future is a usage error (exit 2),
// asked of no server.
func TestTreeAt(t *testing.T) {
	tests := []struct {
		name, at     string
		wantCode     int
		wantOut      string // a line of stdout
		wantErr      string // in stderr
		wantNoAsking bool
	}{
		{name: "before it existed", at: "2020-01-01T00:00:00Z", wantCode: 1,
			wantErr: "Deployment shop/web did not exist at 2020-01-01T00:00:00Z: kubegcd's history first saw it at 2026-01-10T00:00:00Z"},
		{name: "while it existed", at: "2026-01-15T00:00:00Z", wantCode: 0,
			wantOut: "shop        Deployment/web ◀               exists"},
		{name: "while it was being deleted", at: "2026-01-21T00:00:00Z", wantCode: 0,
			wantOut: "shop        Deployment/web ◀               being deleted"},
		{name: "in the future", at: "2999-01-01T00:00:00Z", wantCode: 2, wantErr: "in the future", wantNoAsking: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			srv := treeAtServer(t, &asked)
			defer srv.Close()
			code, stdout, stderr := runCLI(t, map[string]string{envServer: srv.URL, "NO_COLOR": "1"}, "tree", "deploy/web", "-n", "shop", "--at", tt.at)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stdout %q, stderr %q", code, tt.wantCode, stdout, stderr)
			}
			if tt.wantOut != "" && !strings.Contains(stdout, tt.wantOut) {
				t.Errorf("stdout:\n%s\nwant a line %q", stdout, tt.wantOut)
			}
			if tt.wantErr != "" && !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stderr %q, want %q", stderr, tt.wantErr)
			}
			if tt.wantErr != "" && stdout != "" {
				t.Errorf("stdout %q on an error", stdout)
			}
			if tt.wantNoAsking && len(asked) > 0 {
				t.Errorf("asked the server %v for a time in the future", asked)
			}
		})
	}
}
