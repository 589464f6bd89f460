package http

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsServedWhenACollectorFails: one collector's error leaves out
// its own metric and is logged; the scrape still answers 200 with the
// rest. At 1,000,000 objects a cold start kept the database busy past the
// LeaseCandidates read's deadline, and every scrape answered 500.
func TestMetricsServedWhenACollectorFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	up := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubegcd_test_up", Help: "A metric that never fails."})
	up.Set(1)
	reg.MustRegister(up, newLeaseCollector(fakeLeases{err: errors.New("lease candidates: context deadline exceeded")}))
	var logged bytes.Buffer
	srv := httptest.NewServer(metricsHandler(reg, slog.New(slog.NewTextHandler(&logged, nil))))
	defer srv.Close()
	resp, body := get(t, srv, "/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
	}
	for _, want := range []string{"kubegcd_test_up 1", `kubegcd_leases{role="leader-election"} 0`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the scrape lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(string(body), "kubegcd_lease_candidates{") {
		t.Errorf("the scrape has the failed collector's kubegcd_lease_candidates:\n%s", body)
	}
	if !strings.Contains(logged.String(), "lease candidates: context deadline exceeded") {
		t.Errorf("the error was not logged: %q", logged.String())
	}
}
