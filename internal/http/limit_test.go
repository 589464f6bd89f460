package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLimitInflight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := limitInflight(2)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
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
		go func() { done <- get("/slow").Code }()
		<-entered
	}
	// Both slots held: the next request is refused at once, health checks
	// are not.
	rec := get("/status")
	var e errorJSON
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
		json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" {
		t.Errorf("third request: %d, Retry-After %q, body %s; want a 429 JSON error with Retry-After",
			rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
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

func TestLimitInflightZeroIsNoLimit(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := limitInflight(0)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
