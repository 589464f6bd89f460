package http

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
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

// A profile or trace lasts at most 2 minutes: a longer one, or a duration
// that is not one, is refused at once, before anything is collected.
func TestProfileSecondsCapped(t *testing.T) {
	h, err := NewHandler(Options{Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), Profiling: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, query string
		want        string // in the error
	}{
		{"/debug/pprof/profile", "seconds=125", "at most 120 seconds"},
		{"/debug/pprof/profile", "seconds=121", "at most 120 seconds"},
		{"/debug/pprof/trace", "seconds=120.5", "at most 120 seconds"},
		{"/debug/pprof/trace", "seconds=1e9", "at most 120 seconds"},
		{"/debug/pprof/heap", "seconds=3600", "at most 120 seconds"},
		{"/debug/pprof/goroutine", "seconds=%2BInf", "at most 120 seconds"},
		{"/debug/pprof/profile", "seconds=abc", `invalid seconds "abc"`},
		{"/debug/pprof/profile", "seconds=0", `invalid seconds "0"`},
		{"/debug/pprof/profile", "seconds=-5", `invalid seconds "-5"`},
		{"/debug/pprof/profile", "seconds=NaN", `invalid seconds "NaN"`},
		{"/debug/pprof/profile", "seconds=1.5", `invalid seconds "1.5"`},
		{"/debug/pprof/profile", "seconds=1&seconds=200", `"seconds" given more than once`},
		{"/debug/pprof/profile", "seconds=1;x", "malformed query string"},
	}
	for _, tt := range tests {
		t.Run(tt.path+"?"+tt.query, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/", nil)
			req.URL.Path, req.URL.RawQuery = tt.path, tt.query
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var e errorJSON
			if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil {
				t.Fatalf("GET %s?%s: %d %.200q, want a 400 JSON error", tt.path, tt.query, rec.Code, rec.Body)
			}
			if !strings.Contains(e.Error, tt.want) {
				t.Errorf("error %q, want it to contain %q", e.Error, tt.want)
			}
		})
	}
	// At the cap and below, and without seconds, a profile is served.
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/debug/pprof/trace?seconds=0.1", "/debug/pprof/profile?seconds=1", "/debug/pprof/heap",
		"/debug/pprof/allocs?seconds=1"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s: %d, %d bytes, want a profile", path, resp.StatusCode, len(body))
		}
	}
}

// --profiling serves pprof's profiles and nothing else: no expvar
// (/debug/vars: the command line, which may carry flags, and memstats),
// no command line under /debug/pprof/cmdline either.
func TestProfilerServesOnlyProfiles(t *testing.T) {
	h, err := NewHandler(Options{Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), Profiling: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want int
	}{
		{"/debug/vars", http.StatusNotFound},
		{"/debug/pprof/cmdline", http.StatusNotFound},
		{"/debug/pprof/nonesuch", http.StatusNotFound},
		{"/debug/", http.StatusNotFound},
		{"/debug/pprof/", http.StatusOK},
		{"/debug/pprof", http.StatusMovedPermanently},
		{"/debug/pprof/heap?debug=1", http.StatusOK},
		{"/debug/pprof/goroutine?debug=2", http.StatusOK},
		{"/debug/pprof/symbol", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+tt.path, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("GET %s: %d, want %d: %.300s", tt.path, rec.Code, tt.want, rec.Body)
			}
			if strings.Contains(rec.Body.String(), "memstats") || strings.Contains(rec.Body.String(), os.Args[0]) {
				t.Errorf("GET %s shows expvar or the command line: %.300s", tt.path, rec.Body)
			}
		})
	}
	// Without --profiling, none of it.
	off, err := NewHandler(Options{Ingest: fakeIngest{}, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/vars"} {
		rec := httptest.NewRecorder()
		off.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s without --profiling: %d, want 404", path, rec.Code)
		}
	}
}
