package e2enodes

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// setNodes grows or shrinks the cluster to n nodes named ttl-000…, in
// parallel.
func setNodes(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	have, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 256)
	sem := make(chan struct{}, 16)
	do := func(fn func() error) {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := fn(); err != nil {
				errs <- err
			}
		})
	}
	for i := len(have.Items); i < n; i++ {
		name := fmt.Sprintf("ttl-%03d", i)
		do(func() error {
			_, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			return err
		})
	}
	for i := n; i < len(have.Items); i++ {
		name := fmt.Sprintf("ttl-%03d", i)
		do(func() error { return kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// allTTL waits until kubegcd counts n nodes and every node carries ttl.
func allTTL(t *testing.T, d *e2eutil.Daemon, n int, ttl string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if got := d.Metric(t, "kubegcd_ttl_nodes"); got != float64(n) {
			return fmt.Errorf("kubegcd counts %v nodes, want %d", got, n)
		}
		nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, node := range nodes.Items {
			if v, ok := node.Annotations[corev1.ObjectTTLAnnotationKey]; !ok || v != ttl {
				return fmt.Errorf("node %s has ttl %q (set: %v), want %s", node.Name, v, ok, ttl)
			}
		}
		if got := d.Metric(t, "kubegcd_ttl_seconds"); fmt.Sprint(got) != ttl {
			return fmt.Errorf("kubegcd_ttl_seconds %v, want %s", got, ttl)
		}
		return nil
	})
}

func TestTTLFollowsClusterSizeWithHysteresis(t *testing.T) {
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 0 {
		t.Fatalf("the cluster has %d nodes left by another test; this test starts from none", len(nodes.Items))
	}
	t.Cleanup(func() { setNodes(t, 0) })
	dbPath := filepath.Join(t.TempDir(), "kubegcd.db")
	// No resync within the test: every reconcile after the first is woken
	// by a change to the nodes.
	args := []string{"--controllers=ttl", "--dry-run=false", "--resync-period=10m"}
	d := daemons.Start(t, dbPath, args...)

	setNodes(t, 120)
	allTTL(t, d, 120, "15")

	// 95 is inside band 1 (90–500): 15 stays, and nothing is patched.
	patches := d.Metric(t, "kubegcd_ttl_patches_total")
	setNodes(t, 95)
	allTTL(t, d, 95, "15")
	if got := d.Metric(t, "kubegcd_ttl_patches_total"); got != patches {
		t.Errorf("%v patches at 95 nodes, want none", got-patches)
	}

	// A restart at 95 recovers band 1 from the annotations the nodes carry.
	var lastID int64
	for _, r := range audit(t, d, "controller=ttl") {
		lastID = max(lastID, r.ID)
	}
	d.Stop()
	d = daemons.Start(t, dbPath, args...)
	allTTL(t, d, 95, "15")
	if got := d.Metric(t, "kubegcd_ttl_patches_total"); got != 0 {
		t.Errorf("%v patches after a restart at 95 nodes, want none", got)
	}
	for _, r := range audit(t, d, "controller=ttl") {
		if r.ID > lastID {
			t.Errorf("ttl decision after the restart: %s %s: %s", r.Target.Name, r.Action, r.Reason)
		}
	}

	// All nodes gone and 95 back at once: the count passed below 90, so
	// upstream ends in band 0, and so must kubegcd however few reconciles
	// saw the dip (the band moves with every node event).
	setNodes(t, 0)
	setNodes(t, 95)
	allTTL(t, d, 95, "0")
	setNodes(t, 120)
	allTTL(t, d, 120, "15")

	// Below 90 the cluster falls back to band 0.
	setNodes(t, 85)
	allTTL(t, d, 85, "0")

	// An annotation changed by hand is put back: the change wakes the
	// controller, which a node's status update that changes nothing of
	// it does not.
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"99"}}}`, corev1.ObjectTTLAnnotationKey)
	if _, err := kube.CoreV1().Nodes().Patch(context.Background(), "ttl-007", types.MergePatchType, patch,
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	allTTL(t, d, 85, "0")
}
