package http

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestProfilesOutlastTheRequestTimeout: a CPU profile runs as long as
// asked, past the API requests' timeout, which would otherwise end it
// early.
func TestProfilesOutlastTheRequestTimeout(t *testing.T) {
	h, err := NewHandler(Options{Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), Profiling: true,
		RequestTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	start := time.Now()
	resp, err := http.Get(srv.URL + "/debug/pprof/profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil || resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("GET /debug/pprof/profile?seconds=1: %d, %d bytes, %v", resp.StatusCode, len(body), err)
	}
	if took < time.Second {
		t.Errorf("a profile of 1s came back after %s: the request timeout of 300ms cut it", took.Round(time.Millisecond))
	}
	// The API itself keeps the timeout's middleware: the profiler's
	// route only is taken out of it.
	if resp, err := http.Get(srv.URL + "/debug/pprof/nonesuch"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/nonesuch: %v %v, want 404", resp, err)
	} else {
		resp.Body.Close()
	}
}
