package e2enodes

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

const holdFinalizer = "e2e.kubegcd.io/hold"

var eventually = e2eutil.Eventually

// podSpec is a pod no kubelet will run; node binds it directly.
type podSpec struct {
	name, node string
	phase      corev1.PodPhase // set through the status subresource
	reason     string
	finalizer  bool
}

func createPod(t *testing.T, ns string, s podSpec) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.name},
		Spec: corev1.PodSpec{NodeName: s.node, Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			TerminationGracePeriodSeconds: ptr(int64(30))},
	}
	if s.finalizer {
		p.Finalizers = []string{holdFinalizer}
	}
	p, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.phase != "" && s.phase != corev1.PodPending {
		p.Status.Phase, p.Status.Reason = s.phase, s.reason
		if p, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// nextSecond waits until the wall clock is past the second of ts, so that
// objects created next have a later creationTimestamp (it has second
// precision).
func nextSecond(t *testing.T, ts metav1.Time) {
	t.Helper()
	eventually(t, 3*time.Second, func() error {
		if time.Now().Truncate(time.Second).After(ts.Time) {
			return nil
		}
		return fmt.Errorf("still in the second of %s", ts.UTC().Format(time.RFC3339))
	})
}

// nodeSpec is a node with a Ready condition of the given status and taints.
type nodeSpec struct {
	name   string
	ready  corev1.ConditionStatus
	taints []corev1.Taint
}

// createNode creates a node and removes it at the end of the test.
func createNode(t *testing.T, s nodeSpec) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.name},
		Spec: corev1.NodeSpec{Taints: s.taints}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Nodes().Delete(context.Background(), s.name, metav1.DeleteOptions{}) })
	if s.ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s.ready, LastHeartbeatTime: metav1.Now(),
			LastTransitionTime: metav1.Now(), Reason: "e2e"}}
		if n, err = kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

func getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// podNames lists the names of the pods in ns.
func podNames(t *testing.T, ns string) map[string]bool {
	t.Helper()
	pods, err := kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[p.Name] = true
	}
	return out
}

func setOf(names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// waitPasses waits until kubegcd has finished n more PodGC passes.
func waitPasses(t *testing.T, d *e2eutil.Daemon, n int) {
	t.Helper()
	start := d.Metric(t, "kubegcd_podgc_pass_duration_seconds_count")
	eventually(t, time.Duration(n)*5*time.Second+10*time.Second, func() error {
		if got := d.Metric(t, "kubegcd_podgc_pass_duration_seconds_count"); got < start+float64(n) {
			return fmt.Errorf("%v passes of %d", got-start, n)
		}
		return nil
	})
}

type pendingItem struct {
	db.Pending
	TimeLeft string `json:"timeLeft"`
}

func pending(t *testing.T, d *e2eutil.Daemon, controller string) []pendingItem {
	t.Helper()
	var out struct{ Items []pendingItem }
	d.GetJSON(t, "/pending?controller="+controller, 200, &out)
	return out.Items
}

func audit(t *testing.T, d *e2eutil.Daemon, query string) []api.AuditEntry {
	t.Helper()
	var out struct{ Items []api.AuditEntry }
	d.GetJSON(t, "/audit?limit=1000&"+query, 200, &out)
	return out.Items
}
