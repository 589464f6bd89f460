package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
)

// serveQuery answers GET path?rawQuery through h, the query string sent as
// is (httptest.NewRequest would parse it).
func serveQuery(t *testing.T, h http.Handler, path, rawQuery string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	req.URL.Path, req.URL.RawQuery = path, rawQuery
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A query string url.ParseQuery refuses is a 400 naming the problem on
// every endpoint: r.URL.Query() would drop the pair it cannot read and
// serve the rest, unfiltered.
func TestMalformedQueryStrings(t *testing.T) {
	srv, _ := testServer(t)
	h := srv.Config.Handler
	tests := []struct {
		path, query string
		want        string // in the error
	}{
		{"/pending", "limit=5;drop", "invalid semicolon separator in query"},
		{"/pending", "kind=ConfigMap;x", "invalid semicolon separator in query"},
		{"/audit", "controller=%zz", `invalid URL escape "%zz"`},
		{"/audit", "limit=1&%zz=1", `invalid URL escape "%zz"`},
		{"/graph", "namespace=a;b", "invalid semicolon separator in query"},
		{"/objects", "kind=ConfigMap&name=%z", `invalid URL escape "%z"`},
		{"/objects/uid-B", ";", "invalid semicolon separator in query"},
		{"/objects/uid-A/cascade", "propagation=%zz", `invalid URL escape "%zz"`},
		{"/objects/uid-B/history", "%", `invalid URL escape "%"`},
		{"/lint", "severity=error;x", "invalid semicolon separator in query"},
		{"/stuck", "minAge=0&kind=%zz", `invalid URL escape "%zz"`},
		{"/leases", "expired=true;", "invalid semicolon separator in query"},
		// Endpoints without parameters refuse these too.
		{"/status", "%zz", `invalid URL escape "%zz"`},
		{"/overview", ";", "invalid semicolon separator in query"},
		{"/healthz", "%zz", `invalid URL escape "%zz"`},
		{"/metrics", "a;b", "invalid semicolon separator in query"},
	}
	for _, tt := range tests {
		t.Run(tt.path+"?"+tt.query, func(t *testing.T) {
			rec := serveQuery(t, h, tt.path, tt.query)
			var e errorJSON
			if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil {
				t.Fatalf("GET %s?%s: %d %.200s, want a 400 JSON error", tt.path, tt.query, rec.Code, rec.Body)
			}
			if !strings.Contains(e.Error, "malformed query string") || !strings.Contains(e.Error, tt.want) {
				t.Errorf("error %q, want it to say the query string is malformed: %s", e.Error, tt.want)
			}
		})
	}
}

// Every endpoint that filters by kind takes the same kinds as /pending: a
// value that cannot name a kind is a 400 naming the parameter, and one
// that can but names nothing the mirror holds (a kind no longer served
// still has its history) is an empty answer. An apiVersion is refused
// unless it is one Kubernetes could serve.
func TestKindsAndAPIVersionsOneRule(t *testing.T) {
	srv, _ := testServer(t)
	h := srv.Config.Handler
	refused := []struct {
		path, query string
		want        string // in the error
	}{
		{"/pending", "kind=%27", `invalid kind "'"`},
		{"/audit", "kind=%27", `invalid kind "'"`},
		{"/stuck", "kind=%27", `invalid kind "'"`},
		{"/stuck", "kind=Config%20Map", `invalid kind "Config Map"`},
		{"/stuck", "kind=-x", `invalid kind "-x"`},
		{"/stuck", "kind=" + strings.Repeat("k", 101), `invalid kind "kkk`},
		{"/objects", "kind=%27", `invalid kind "'"`},
		{"/objects", "kind=config/maps", `invalid kind "config/maps"`},
		{"/objects", "kind=ConfigMap&apiVersion=junk", `invalid apiVersion "junk"`},
		{"/objects", "kind=ConfigMap&apiVersion=v2", `invalid apiVersion "v2"`},
		{"/objects", "kind=ConfigMap&apiVersion=apps/V1", `invalid apiVersion "apps/V1"`},
		{"/objects", "kind=ConfigMap&apiVersion=Apps/v1", `invalid apiVersion "Apps/v1"`},
		{"/objects", "kind=ConfigMap&apiVersion=apps/v1%27", `invalid apiVersion "apps/v1'"`},
		{"/objects", "kind=ConfigMap&apiVersion=example..com/v1", `invalid apiVersion "example..com/v1"`},
	}
	for _, tt := range refused {
		t.Run(tt.path+"?"+tt.query, func(t *testing.T) {
			rec := serveQuery(t, h, tt.path, tt.query)
			var e errorJSON
			if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil {
				t.Fatalf("GET %s?%s: %d %.200s, want a 400 JSON error", tt.path, tt.query, rec.Code, rec.Body)
			}
			if !strings.Contains(e.Error, tt.want) {
				t.Errorf("error %q, want it to contain %q", e.Error, tt.want)
			}
		})
	}
	// Well formed, and naming nothing held: empty, as on /pending.
	empty := []struct{ path, query string }{
		{"/pending", "kind=Widget"},
		{"/audit", "kind=Widget"},
		{"/stuck", "kind=Widget&minAge=0"},
		{"/stuck", "kind=widgets&minAge=0"},
		{"/objects", "kind=Widget"},
		{"/objects", "kind=widgets.example.com&apiVersion=example.com/v1alpha1"},
		{"/objects", "kind=Deployment&apiVersion=apps/v1"},
		{"/objects", "kind=" + strings.Repeat("w", 63) + "." + strings.Repeat("example.", 25) + "com"},
	}
	for _, tt := range empty {
		t.Run(tt.path+"?"+tt.query, func(t *testing.T) {
			rec := serveQuery(t, h, tt.path, tt.query)
			var out struct {
				Items []json.RawMessage `json:"items"`
			}
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
				t.Fatalf("GET %s?%s: %d %.200s, want 200", tt.path, tt.query, rec.Code, rec.Body)
			}
			if out.Items == nil || len(out.Items) != 0 {
				t.Errorf("GET %s?%s: items %s, want []", tt.path, tt.query, out.Items)
			}
		})
	}
	// A valid apiVersion of the core group still finds its objects.
	var got api.Lookup
	getJSON(t, srv, "/objects?kind=ConfigMap&apiVersion=v1&namespace=a&name=A", http.StatusOK, &got)
	if len(got.Items) != 1 || got.Items[0].UID != "uid-A" {
		t.Errorf("ConfigMap v1 a/A: %+v, want uid-A", got.Items)
	}
}
