package e2enodes

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/dbfault"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// controllerStatus is one entry of /status's controllers.
type controllerStatus struct {
	Name          string     `json:"name"`
	LastPass      *time.Time `json:"lastPass"`
	Skipping      bool       `json:"skipping"`
	SkipReason    string     `json:"skipReason"`
	SkipDetail    string     `json:"skipDetail"`
	SkippedPasses int64      `json:"skippedPasses"`
}

func controllers(t *testing.T, d *e2eutil.Daemon) map[string]controllerStatus {
	t.Helper()
	var st struct {
		Controllers []controllerStatus `json:"controllers"`
	}
	d.GetJSON(t, "/status", http.StatusOK, &st)
	out := map[string]controllerStatus{}
	for _, c := range st.Controllers {
		out[c.Name] = c
	}
	return out
}

// waitUntil polls fn until it returns nil or timeout passes, and returns
// its last error: unlike eventually, it lets the test go on.
func waitUntil(timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// logLines counts the daemon's log lines holding every part.
func logLines(d *e2eutil.Daemon, parts ...string) int {
	n := 0
	for _, line := range strings.Split(d.Logs.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// TestPassesResumeAfterMirrorWriteFault: a write to the mirror of nodes that
// fails (its write lock held from outside past the busy timeout) takes nodes
// out of sync. PodGC and TTL must skip their passes meanwhile, and say so
// (/status, the metric, one warning each), then make them again once the
// mirror is back — not skip every pass until a restart.
func TestPassesResumeAfterMirrorWriteFault(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "write-fault")
	d := daemons.Start(t, "", "--controllers=podgc,ttl", "--dry-run=false", "--podgc-period=1s", "--resync-period=1s",
		"--terminated-pod-gc-threshold=1")

	release := dbfault.HoldWriteLock(t, d.DBPath)
	createNode(t, nodeSpec{name: "added-during-fault"})
	// The node's batch fails once the busy timeout (10 s) runs out.
	eventually(t, 60*time.Second, func() error {
		var st struct {
			Resources []struct {
				Group, Resource string
				Synced          bool
			}
		}
		d.GetJSON(t, "/status", http.StatusOK, &st)
		for _, r := range st.Resources {
			if r.Group == "" && r.Resource == "nodes" && !r.Synced {
				return nil
			}
		}
		return fmt.Errorf("/status: nodes still synced")
	})
	// Both controllers skip their passes, and say so. The lock is released
	// before the daemon's next write could time out as well (a short fault,
	// as in the field): its record of nodes being unsynced then commits.
	skipping := waitUntil(8*time.Second, func() error {
		cs := controllers(t, d)
		for _, name := range []string{"podgc", "ttl"} {
			c := cs[name]
			if !c.Skipping || c.SkipReason != "mirror-not-synced" || c.SkipDetail != "the mirror of nodes is not live" || c.SkippedPasses < 3 {
				return fmt.Errorf("/status: %s %+v, want skipping, reason mirror-not-synced, 3 passes skipped", name, c)
			}
		}
		return nil
	})
	if skipping != nil {
		t.Errorf("while the mirror of nodes is not live: %v", skipping)
	}
	release()
	released := time.Now()

	// PodGC collects again: two terminated pods made after the fault,
	// threshold 1.
	older := createPod(t, ns, podSpec{name: "older", phase: corev1.PodSucceeded})
	nextSecond(t, older.CreationTimestamp)
	createPod(t, ns, podSpec{name: "newer", phase: corev1.PodSucceeded})
	waitPods(t, d, ns, setOf("newer"))

	// TTL annotates the node whose event the failed write carried.
	eventually(t, 60*time.Second, func() error {
		n, err := kube.CoreV1().Nodes().Get(ctx, "added-during-fault", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v, ok := n.Annotations[corev1.ObjectTTLAnnotationKey]; !ok || v != "0" {
			return fmt.Errorf("node has ttl %q (set: %v), want 0", v, ok)
		}
		return nil
	})

	cs := controllers(t, d)
	for _, name := range []string{"podgc", "ttl"} {
		c := cs[name]
		if c.Skipping || c.LastPass == nil || !c.LastPass.After(released) {
			t.Errorf("/status after the fault: %s %+v, want passes made since %s", name, c, released.UTC().Format(time.RFC3339Nano))
		}
		series := []string{"controller=" + name, "reason=mirror-not-synced"}
		if got := d.Metric(t, "kubegcd_reconcile_skipped_passes_total", series...); got < 3 || got != float64(c.SkippedPasses) {
			t.Errorf("kubegcd_reconcile_skipped_passes_total{controller=%s} = %v, want /status's %d (at least 3)", name, got, c.SkippedPasses)
		}
		// One warning for the whole stretch of skipped passes, one line
		// when they resume.
		if n := logLines(d, `msg="skipping passes"`, "controller="+name); n != 1 {
			t.Errorf("%d warnings of skipped %s passes, want 1", n, name)
		}
		if n := logLines(d, `msg="passes resume"`, "controller="+name); n != 1 {
			t.Errorf("%d lines of %s passes resuming, want 1", n, name)
		}
	}
}
