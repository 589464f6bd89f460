package http

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

func TestHostAllowList(t *testing.T) {
	store := dbtest.Open(t)
	handler := func(allowed ...string) http.Handler {
		h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), AllowedHosts: allowed})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	loopback, named, anyHost := handler(), handler("kubegcd.example.com"), handler("*")

	cases := []struct {
		name    string
		handler http.Handler
		path    string
		host    string
		want    int
	}{
		{"a rebinding name", loopback, "/status", "evil.example", http.StatusForbidden},
		{"a rebinding name with a port", loopback, "/status", "evil.example:8080", http.StatusForbidden},
		{"health checks are not exempt", loopback, "/healthz", "evil.example:8080", http.StatusForbidden},
		{"the UI is not exempt", loopback, "/", "evil.example:8080", http.StatusForbidden},
		{"localhost", loopback, "/status", "localhost:8080", http.StatusOK},
		{"localhost, any case, trailing dot", loopback, "/status", "LocalHost.:8080", http.StatusOK},
		{"IPv4 loopback", loopback, "/status", "127.0.0.1:8080", http.StatusOK},
		{"IPv6 loopback", loopback, "/status", "[::1]:8080", http.StatusOK},
		{"any IP address", loopback, "/status", "10.1.2.3", http.StatusOK},
		{"an allowed name", named, "/status", "KUBEGCD.example.com:8080", http.StatusOK},
		{"another name", named, "/status", "kubegcd.example.com.evil.example", http.StatusForbidden},
		{"any host", anyHost, "/status", "evil.example", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			req.Host = tc.host
			rec := httptest.NewRecorder()
			tc.handler.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("GET %s with Host %q: %d, want %d: %s", tc.path, tc.host, rec.Code, tc.want, rec.Body)
			}
			if tc.want != http.StatusForbidden {
				return
			}
			var e errorJSON
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Errorf("body %q is not the JSON error: %v", rec.Body, err)
			}
		})
	}
}

// blockingStore holds /status (ResourceStats) until release is closed, so
// that a request can occupy an in-flight slot.
type blockingStore struct {
	db.Reads
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) ResourceStats(ctx context.Context) ([]db.ResourceStat, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Reads.ResourceStats(ctx)
}

// Every answer carries the security headers, the refusals included: a
// 403 for a Host not allowed, a 401 without a token, a 429 when the API is
// full.
func TestRefusalsCarrySecurityHeaders(t *testing.T) {
	store := dbtest.Open(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte("refusal-test-token,alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := LoadTokens(tokenFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	blocking := &blockingStore{Reads: store.Reads(), entered: make(chan struct{}), release: make(chan struct{})}
	newHandler := func(opts Options) http.Handler {
		t.Helper()
		opts.Ingest, opts.Registry = fakeIngest{}, prometheus.NewRegistry()
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		h, err := NewHandler(opts)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	plain := newHandler(Options{DB: store.Reads()})
	withTokens := newHandler(Options{DB: store.Reads(), Tokens: tokens})
	full := newHandler(Options{DB: blocking, MaxInflight: 1})
	held := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		full.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/status", nil))
		held <- rec.Code
	}()
	<-blocking.entered // the one slot is taken
	t.Cleanup(func() {
		close(blocking.release)
		if code := <-held; code != http.StatusOK {
			t.Errorf("the request holding the slot: %d", code)
		}
	})

	tests := []struct {
		name    string
		handler http.Handler
		host    string
		want    int
	}{
		{"a Host not allowed", plain, "evil.example", http.StatusForbidden},
		{"a Host not allowed, with tokens", withTokens, "evil.example:8080", http.StatusForbidden},
		{"no token", withTokens, "127.0.0.1", http.StatusUnauthorized},
		{"too many requests", full, "127.0.0.1", http.StatusTooManyRequests},
		{"an answer", plain, "127.0.0.1", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/status", nil)
			req.Host = tc.host
			rec := httptest.NewRecorder()
			tc.handler.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("GET /status with Host %q: %d, want %d: %s", tc.host, rec.Code, tc.want, rec.Body)
			}
			for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
				"Referrer-Policy": "no-referrer", "Content-Security-Policy": contentSecurityPolicy} {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%d: %s = %q, want %q", rec.Code, k, got, want)
				}
			}
		})
	}
}
