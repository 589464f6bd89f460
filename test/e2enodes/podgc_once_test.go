package e2enodes

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodGCDryRunAuditsAnOrphanOnce: in dry-run a pod bound to a node that
// is gone stays, so every pass decides about it again. The decision is the
// same each time: one audit row, and /pending's since does not move, however
// many passes go by.
func TestPodGCDryRunAuditsAnOrphanOnce(t *testing.T) {
	ns := namespaces.New(t, "podgc-once")
	createNode(t, nodeSpec{name: "once-gone", ready: corev1.ConditionTrue})
	pod := createPod(t, ns, podSpec{name: "cache-0", node: "once-gone", phase: corev1.PodRunning})
	if err := kube.CoreV1().Nodes().Delete(context.Background(), "once-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", "--controllers=podgc", "--dry-run=true", "--podgc-period=1s", "--podgc-quarantine=2s")

	// find returns the pod's pending row, if any.
	find := func() *pendingItem {
		for _, p := range pending(t, d, "podgc") {
			if p.Target.UID == string(pod.UID) {
				return &p
			}
		}
		return nil
	}
	var first pendingItem
	eventually(t, 30*time.Second, func() error {
		rows := audit(t, d, "controller=podgc&uid="+string(pod.UID))
		if len(rows) == 0 {
			return fmt.Errorf("no audit row yet about %s", pod.Name)
		}
		p := find()
		if p == nil || p.NotBefore != nil {
			return fmt.Errorf("pending %+v: want the decision past its quarantine", p)
		}
		first = *p
		return nil
	})

	waitPasses(t, d, 5)
	rows := audit(t, d, "controller=podgc&uid="+string(pod.UID))
	if len(rows) != 1 {
		var reasons []string
		for _, r := range rows {
			reasons = append(reasons, r.Reason)
		}
		t.Errorf("%d audit rows about %s after five more passes, want 1: %q", len(rows), pod.Name, reasons)
	}
	p := find()
	switch {
	case p == nil:
		t.Fatalf("%s is no longer pending", pod.Name)
	case !p.Since.Equal(first.Since) || p.Reason != first.Reason:
		t.Errorf("pending since %s %q, was since %s %q: the same decision must keep its since",
			p.Since.Format(time.RFC3339Nano), p.Reason, first.Since.Format(time.RFC3339Nano), first.Reason)
	}
}
