package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetricsLint lints every metric the daemon serves with client_golang's
// promlint (the linter behind testutil.GatherAndLint). The daemon runs every
// controller and leader election, enforcing; ownergc has collected an orphan
// and PodGC an orphaned pod, so that most metrics with labels have series to
// lint (a vector without a series is not exposed, so not linted). Any problem
// fails the test: names, help, units and _total are what Prometheus users
// rely on.
func TestMetricsLint(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "metrics-lint")
	d := daemons.Start(t, "", "--dry-run=false", "--resync-period=1s", "--leader-elect-name=kubegcd-metrics-lint",
		"--podgc-period=1s", "--podgc-quarantine=0s")
	d.WaitReady(t, 60*time.Second)
	collected(t, ns, "garbage", &instance{url: d.URL})
	// PodGC's series: a pod bound to a node that does not exist.
	_, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec: corev1.PodSpec{NodeName: "no-such-node", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		_, body, err := d.Get("/metrics")
		if err != nil || !strings.Contains(string(body), "kubegcd_podgc_force_delete_pods_total{") {
			return fmt.Errorf("podgc has not deleted the orphaned pod yet (%v)", err)
		}
		return nil
	})

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
