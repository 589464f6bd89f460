package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricsLint lints every metric the daemon serves with client_golang's
// promlint (the linter behind testutil.GatherAndLint): the daemon runs every
// controller and leader election, enforcing, and has collected an orphan,
// so that the metrics with labels have series to lint. Any problem fails
// the test: names, help, units and _total are what Prometheus users rely on.
func TestMetricsLint(t *testing.T) {
	ns := newNamespace(t, "metrics-lint")
	d := startDaemon(t, "", "--dry-run=false", "--resync-period=1s", "--leader-elect-name=kubegcd-metrics-lint")
	d.WaitReady(t, 60*time.Second)
	collected(t, ns, "garbage", &instance{url: d.URL})

	code, body, err := d.Get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("linting /metrics: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}

	// The runtime's metrics and kubegcd's build are there.
	for _, want := range []string{"go_goroutines ", "process_resident_memory_bytes ",
		fmt.Sprintf(`goversion=%q`, runtime.Version()), "kubegcd_build_info{"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
