package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestLCGCIdleWithoutLeaseCandidates: on a control plane that serves no
// LeaseCandidates, kubegcd with lcgc on becomes ready, and lcgc makes its
// passes idle: never skipped, nothing pending or audited, and no log line
// of it above debug.
func TestLCGCIdleWithoutLeaseCandidates(t *testing.T) {
	t.Parallel()
	for _, gv := range []string{"coordination.k8s.io/v1beta1", "coordination.k8s.io/v1alpha2"} {
		if _, err := kube.Discovery().ServerResourcesForGroupVersion(gv); !apierrors.IsNotFound(err) {
			t.Fatalf("discovery of %s: %v, want it not served on this control plane", gv, err)
		}
	}
	// lcgc is on by default; alone here, a pass every second.
	d := daemons.Start(t, "", "--controllers=lcgc", "--lease-candidate-gc-period=1s")
	d.WaitReady(t, time.Minute)

	// Three passes, each idle.
	var first time.Time
	eventually(t, 30*time.Second, func() error {
		var st api.Status
		d.GetJSON(t, "/status", http.StatusOK, &st)
		if len(st.Controllers) != 1 || st.Controllers[0].Name != api.ControllerLCGC {
			return stopError{Err: fmt.Errorf("/status lists controllers %+v, want lcgc alone", st.Controllers)}
		}
		c := st.Controllers[0]
		if c.Skipping || c.SkippedPasses != 0 {
			return stopError{Err: fmt.Errorf("lcgc skips its passes: %+v", c)}
		}
		if c.LastPass == nil {
			return fmt.Errorf("lcgc made no pass yet")
		}
		if first.IsZero() {
			first = *c.LastPass
		}
		if c.LastPass.Sub(first) < 2*time.Second {
			return fmt.Errorf("lcgc's last pass at %s, want one 2s after its first, %s", c.LastPass, first)
		}
		return nil
	})
	if n := d.Metric(t, "kubegcd_reconcile_skipped_passes_total", "controller", "lcgc", "reason", "mirror-not-synced"); n != 0 {
		t.Errorf("kubegcd_reconcile_skipped_passes_total{controller=lcgc} %v, want 0", n)
	}
	var pending api.PendingList
	d.GetJSON(t, "/pending?controller=lcgc", http.StatusOK, &pending)
	var audit api.AuditList
	d.GetJSON(t, "/audit?controller=lcgc", http.StatusOK, &audit)
	if len(pending.Items) != 0 || len(audit.Items) != 0 {
		t.Errorf("lcgc pending %+v, audited %+v; want nothing", pending.Items, audit.Items)
	}

	// The daemon logs at debug: every line names its level. lcgc says at
	// debug, and only there, that there is nothing to collect.
	level := regexp.MustCompile(`\blevel=([A-Z]+)`)
	notServed := false
	for _, line := range strings.Split(strings.TrimSpace(d.Logs.String()), "\n") {
		if !strings.Contains(line, "controller=lcgc") {
			continue
		}
		m := level.FindStringSubmatch(line)
		switch {
		case m == nil:
			t.Errorf("a log line without a level: %q", line)
		case m[1] != "DEBUG":
			t.Errorf("lcgc logged above debug: %s", line)
		case strings.Contains(line, "LeaseCandidates are not served"):
			notServed = true
		}
	}
	if !notServed {
		t.Errorf("lcgc's debug log does not say LeaseCandidates are not served:\n%s", tail(d.Logs.String(), 30))
	}
}
