package http

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// metricsTestHandler is a handler as the daemon runs one on a public
// address: tokens, an allow-list of host names, a bound on requests in
// flight, and profiling. Its registry holds only the request metrics.
func metricsTestHandler(t testing.TB) (http.Handler, *prometheus.Registry) {
	t.Helper()
	store := dbtest.Open(t)
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("good-token,ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := LoadTokens(path, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: reg, Tokens: tokens,
		AllowedHosts: []string{"kubegcd.example"}, MaxInflight: 8, Profiling: true})
	if err != nil {
		t.Fatal(err)
	}
	return h, reg
}

// requestSeries returns the label sets of the request metrics' series.
func requestSeries(t testing.TB, reg *prometheus.Registry) []map[string]string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range families {
		if f.GetName() != "kubegcd_http_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, labels)
		}
	}
	return out
}

// checkRequestLabels fails when a series of the request metrics carries a
// label value outside its closed set: a method not among the standard ones
// (or "OTHER"), a route the handler does not serve (or "unmatched"), a code
// that is not an HTTP status.
func checkRequestLabels(t testing.TB, h http.Handler, reg *prometheus.Registry) {
	t.Helper()
	routes := servedRoutes(t, h)
	for _, labels := range requestSeries(t, reg) {
		if m := labels["method"]; !testMethods[m] {
			t.Fatalf("method label %.40q is not in the closed set", m)
		}
		if r := labels["route"]; !routes[r] {
			t.Fatalf("route label %.40q is not a route the handler serves", r)
		}
		if c := labels["code"]; len(c) != 3 || c < "100" || c > "599" {
			t.Fatalf("code label %.40q is not an HTTP status", c)
		}
	}
}

// testMethods are the method labels allowed: the methods of RFC 9110 and
// PATCH by name, and OTHER for any other.
var testMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true, "OTHER": true}

// servedRoutes are the route labels allowed: the patterns the handler's
// router serves, and "unmatched".
func servedRoutes(t testing.TB, h http.Handler) map[string]bool {
	t.Helper()
	routes := map[string]bool{"unmatched": true}
	err := chi.Walk(h.(chi.Routes), func(_ string, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes[route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return routes
}

// shortSeries prints label sets with each value cut to 40 bytes.
func shortSeries(series []map[string]string) string {
	var b strings.Builder
	for _, labels := range series {
		fmt.Fprintf(&b, "{route=%.40q method=%.40q code=%.40q} ", labels["route"], labels["method"], labels["code"])
	}
	return b.String()
}

func serve(h http.Handler, method, target, host, auth string) int {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	req.Method, req.Host, req.RequestURI = method, host, ""
	if u, err := req.URL.Parse(target); err == nil {
		req.URL = u
	} else {
		req.URL.Path = target
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// TestRequestMetricsLabels: refused requests are counted too, but under
// labels from closed sets, whatever method, path, host or credentials the
// client sends.
func TestRequestMetricsLabels(t *testing.T) {
	h, reg := metricsTestHandler(t)
	for _, tc := range []struct {
		name, method, target, host, auth string
		wantCode                         int
		want                             map[string]string
	}{
		{"served", http.MethodGet, "/status", "127.0.0.1", "Bearer good-token", 200,
			map[string]string{"route": "/status", "method": "GET", "code": "200"}},
		{"no token", http.MethodGet, "/pending", "127.0.0.1", "", 401,
			map[string]string{"route": "/pending", "method": "GET", "code": "401"}},
		{"made-up method", "M00001", "/status", "127.0.0.1", "", 401,
			map[string]string{"method": "OTHER", "code": "401"}},
		{"long method, foreign host", strings.Repeat("X", 20<<10), "/status", "evil.example", "", 403,
			map[string]string{"method": "OTHER", "code": "403"}},
		{"lower-case get", "get", "/status", "127.0.0.1", "", 401,
			map[string]string{"method": "OTHER", "code": "401"}},
		{"unknown API path", http.MethodGet, "/objects/a/b/c/d", "127.0.0.1", "Bearer good-token", 404,
			map[string]string{"route": "unmatched", "method": "GET", "code": "404"}},
		{"profile", http.MethodDelete, "/debug/pprof/cmdline", "127.0.0.1", "", 401,
			map[string]string{"method": "DELETE", "code": "401"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := serve(h, tc.method, tc.target, tc.host, tc.auth); code != tc.wantCode {
				t.Fatalf("%.20s %s: %d, want %d", tc.method, tc.target, code, tc.wantCode)
			}
			found := false
			for _, labels := range requestSeries(t, reg) {
				match := true
				for k, v := range tc.want {
					match = match && labels[k] == v
				}
				found = found || match
			}
			if !found {
				t.Fatalf("no series with labels %v in %s", tc.want, shortSeries(requestSeries(t, reg)))
			}
			checkRequestLabels(t, h, reg)
		})
	}
}

// TestRequestMetricsBounded sends thousands of requests with random
// methods, paths, queries and hosts: the request metrics keep at most one
// series a route, standard method and status code.
func TestRequestMetricsBounded(t *testing.T) {
	h, reg := metricsTestHandler(t)
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~%"
		b := make([]byte, 1+rng.IntN(n))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	methods := []string{"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"}
	prefixes := []string{"/status", "/pending", "/audit", "/graph", "/objects/", "/debug/", "/", "/ui/", "/stuck", "/metrics"}
	hosts := []string{"127.0.0.1", "localhost", "kubegcd.example", "evil.example"}
	auths := []string{"", "Bearer good-token", "Bearer bad", "Basic x"}
	const requests = 3000
	for i := range requests {
		method := methods[rng.IntN(len(methods))]
		if i%2 == 0 {
			method = "M" + word(12)
		}
		target := prefixes[rng.IntN(len(prefixes))] + word(20)
		if rng.IntN(2) == 0 {
			target += "?" + word(10) + "=" + word(10)
		}
		serve(h, method, target, hosts[rng.IntN(len(hosts))], auths[rng.IntN(len(auths))])
	}
	checkRequestLabels(t, h, reg)
	series := requestSeries(t, reg)
	methodsSeen := map[string]bool{}
	for _, labels := range series {
		methodsSeen[labels["method"]] = true
	}
	// At most every route × the 7 methods sent and OTHER × a handful of
	// codes: far fewer than the requests, of which half had a method of
	// their own.
	if limit := len(servedRoutes(t, h)) * len(methodsSeen) * 8; len(series) > limit || len(methodsSeen) > len(methods)+1 {
		t.Fatalf("%d requests made %d series over %d methods (at most %d expected)", requests, len(series), len(methodsSeen), limit)
	}
}

// FuzzRequestMetrics: no request, however made, adds a label value outside
// the closed sets.
func FuzzRequestMetrics(f *testing.F) {
	h, reg := metricsTestHandler(f)
	for _, s := range [][4]string{{"GET", "/status", "127.0.0.1", ""}, {"M0", "/pending?limit=5;drop", "evil.example", ""},
		{"PROPFIND", "/debug/pprof/", "localhost", "Bearer good-token"}, {"GET", "/objects/x/y/z", "[::1]:80", "bearer good-token"},
		{"", "/", "", ""}} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	f.Fuzz(func(t *testing.T, method, target, host, auth string) {
		if method == "" || !strings.HasPrefix(target, "/") {
			return // not a request a server can read
		}
		serve(h, method, target, host, auth)
		checkRequestLabels(t, h, reg)
	})
}
