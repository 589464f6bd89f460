package http

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/prometheus/client_golang/prometheus"
)

// The UI's files carry an ETag of their content, so that a browser
// revalidates them (304, no body) instead of downloading them again.
func TestUIETag(t *testing.T) {
	ui := fstest.MapFS{
		"index.html":             {Data: []byte("<!doctype html><title>kubegcd</title>")},
		"vendor/lib/lib.min.js":  {Data: []byte("var lib = 1;")},
		"vendor/lib/other.js":    {Data: []byte("var lib = 2;")},
		"vendor/lib/LICENSE.txt": {Data: []byte("MIT")},
	}
	h, err := NewHandler(Options{UI: ui, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	type answer struct {
		StatusCode int
		Header     http.Header
	}
	get := func(path, ifNoneMatch string) (answer, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return answer{resp.StatusCode, resp.Header}, string(body)
	}

	resp, body := get("/vendor/lib/lib.min.js", "")
	tag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || body != "var lib = 1;" || len(tag) != 34 || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET lib.min.js: %d, ETag %q, Cache-Control %q, body %q; want 200, a quoted hash, no-cache, the file",
			resp.StatusCode, tag, resp.Header.Get("Cache-Control"), body)
	}
	if resp, body := get("/vendor/lib/lib.min.js", tag); resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("GET lib.min.js If-None-Match its ETag: %d %q, want 304 without a body", resp.StatusCode, body)
	}
	if resp, _ := get("/vendor/lib/other.js", ""); resp.Header.Get("ETag") == tag || resp.Header.Get("ETag") == "" {
		t.Errorf("another file's ETag %q, want one of its own (not %q)", resp.Header.Get("ETag"), tag)
	}
	if resp, body := get("/vendor/lib/other.js", tag); resp.StatusCode != 200 || body != "var lib = 2;" {
		t.Errorf("GET other.js If-None-Match another file's ETag: %d %q, want 200 and the file", resp.StatusCode, body)
	}
	// A route of the single page is index.html, with index.html's ETag.
	index, _ := get("/", "")
	if route, body := get("/objects-page/x", ""); route.StatusCode != 200 || route.Header.Get("ETag") != index.Header.Get("ETag") ||
		body != "<!doctype html><title>kubegcd</title>" {
		t.Errorf("a UI route: %d, ETag %q, body %q; want index.html with its ETag %q", route.StatusCode, route.Header.Get("ETag"), body,
			index.Header.Get("ETag"))
	}
}
