package http

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
)

func TestHostAllowList(t *testing.T) {
	store, err := db.Open(context.Background(), filepath.Join(t.TempDir(), "kubegcd.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	handler := func(allowed ...string) http.Handler {
		h, err := NewHandler(Options{DB: store, Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), AllowedHosts: allowed})
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
