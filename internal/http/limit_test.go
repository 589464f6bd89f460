package http

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestLimitInflight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := newInflightSlots(2).limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pending" {
			entered <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
		return rec
	}
	done := make(chan int, 2)
	for range 2 {
		go func() { done <- get("/pending").Code }()
		<-entered
	}
	// Both slots held: the next API request is refused at once, health
	// checks and the UI's files are not.
	rec := get("/status")
	var e errorJSON
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
		json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
		t.Errorf("third request: %d, Retry-After %q, body %s; want a 429 JSON error with Retry-After",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	for _, p := range []string{"/healthz", "/readyz", "/", "/app.js"} {
		if code := get(p).Code; code != http.StatusOK {
			t.Errorf("%s while full: %d, want 200", p, code)
		}
	}
	close(release)
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("held request: %d", code)
		}
	}
	// The slots are free again.
	if code := get("/status").Code; code != http.StatusOK {
		t.Errorf("after release: %d, want 200", code)
	}
}

// heldIngest holds each request that asks whether the mirror is synced
// (/status does) until release is closed.
type heldIngest struct{ entered, release chan struct{} }

func (h heldIngest) Synced() bool {
	h.entered <- struct{}{}
	<-h.release
	return true
}

func (heldIngest) Resources() []ResourceStatus { return nil }

// TestInflightSharedAcrossRoutes: --max-requests-inflight bounds the
// requests the server serves at once, whatever their routes: with every
// slot held by /status, the other API routes get a 429 too, while health
// checks and the held requests are served.
func TestInflightSharedAcrossRoutes(t *testing.T) {
	const slots = 2
	held := heldIngest{entered: make(chan struct{}), release: make(chan struct{})}
	h, err := NewHandler(Options{DB: tokenStore(t), Ingest: held, Registry: prometheus.NewRegistry(), MaxInflight: slots})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(path string) int {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	done := make(chan int, slots)
	for range slots {
		go func() {
			resp, err := srv.Client().Get(srv.URL + "/status")
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		<-held.entered
	}
	for _, path := range []string{"/status", "/pending", "/audit?limit=1000", "/lint?limit=100000", "/graph?namespace=a",
		"/objects?name=x", "/leases", "/stuck", "/objects/x/no-such-endpoint"} {
		if code := get(path); code != http.StatusTooManyRequests {
			t.Errorf("GET %s with the %d slots held by /status: %d, want 429", path, slots, code)
		}
	}
	// Health checks and the UI's files (none here: a 404) are not held.
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/index.html": http.StatusNotFound} {
		if code := get(path); code != want {
			t.Errorf("GET %s with every slot held: %d, want %d", path, code, want)
		}
	}
	close(held.release)
	for range slots {
		if code := <-done; code != http.StatusOK {
			t.Errorf("held /status: %d, want 200", code)
		}
	}
	if code := get("/pending"); code != http.StatusOK {
		t.Errorf("GET /pending once the slots are free: %d, want 200", code)
	}
}

func TestLimitInflightZeroIsNoLimit(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := newInflightSlots(0).limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	done := make(chan int, 20)
	for range 20 {
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/status", nil))
			done <- rec.Code
		}()
		<-entered // every one of the 20 is served at once
	}
	close(release)
	for range 20 {
		if code := <-done; code != http.StatusOK {
			t.Errorf("code %d", code)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	for _, want := range []string{"script-src 'self';", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(contentSecurityPolicy, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", contentSecurityPolicy, want)
		}
	}
	srv, _ := testServer(t)
	for _, path := range []string{"/", "/status", "/no-such-endpoint"} {
		resp, _ := get(t, srv, path)
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
			"Referrer-Policy": "no-referrer", "Content-Security-Policy": contentSecurityPolicy} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", path, k, got, want)
			}
		}
	}
}
