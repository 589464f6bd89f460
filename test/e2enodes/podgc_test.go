package e2enodes

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// podgcArgs run PodGC alone, enforcing, with a one-second period.
func podgcArgs(extra ...string) []string {
	return append([]string{"--controllers=podgc", "--dry-run=false", "--podgc-period=1s"}, extra...)
}

// samePair creates two pods in the same creationTimestamp second, so that
// only their names order them.
func samePair(t *testing.T, ns string, a, b podSpec) (*corev1.Pod, *corev1.Pod) {
	t.Helper()
	for range 5 {
		pa, pb := createPod(t, ns, a), createPod(t, ns, b)
		if pa.CreationTimestamp.Equal(&pb.CreationTimestamp) {
			return pa, pb
		}
		e2eutil.RemovePods(t, kube, ns)
		eventually(t, 30*time.Second, func() error {
			if n := len(podNames(t, ns)); n > 0 {
				return fmt.Errorf("%d pods left", n)
			}
			return nil
		})
	}
	t.Fatal("could not create two pods within one second")
	return nil, nil
}

// waitPods waits until ns holds exactly want, then checks that it still
// does after three more passes: the controller deleted exactly that much.
func waitPods(t *testing.T, d *e2eutil.Daemon, ns string, want map[string]bool) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if got := podNames(t, ns); !maps.Equal(got, want) {
			return fmt.Errorf("pods %v, want %v", got, want)
		}
		return nil
	})
	waitPasses(t, d, 3)
	if got := podNames(t, ns); !maps.Equal(got, want) {
		t.Fatalf("after three more passes: pods %v, want %v", got, want)
	}
}

func TestPodGCTerminatedThreshold(t *testing.T) {
	ns := namespaces.New(t, "terminated")
	// Deletion order: new-evicted (Evicted first), then old-a and old-b
	// (oldest; same second, so by name), then mid, then new-x and new-y.
	_, oldA := samePair(t, ns, podSpec{name: "old-b", phase: corev1.PodSucceeded}, podSpec{name: "old-a", phase: corev1.PodFailed})
	nextSecond(t, oldA.CreationTimestamp)
	mid := createPod(t, ns, podSpec{name: "mid", phase: corev1.PodSucceeded})
	nextSecond(t, mid.CreationTimestamp)
	createPod(t, ns, podSpec{name: "new-evicted", phase: corev1.PodFailed, reason: "Evicted"})
	createPod(t, ns, podSpec{name: "new-x", phase: corev1.PodSucceeded})
	createPod(t, ns, podSpec{name: "new-y", phase: corev1.PodFailed})
	createPod(t, ns, podSpec{name: "running", phase: corev1.PodRunning})
	dbPath := filepath.Join(t.TempDir(), "kubegcd.db")

	// Six terminated, threshold 4: the two first in order go.
	d := daemons.Start(t, dbPath, podgcArgs("--terminated-pod-gc-threshold=4")...)
	waitPods(t, d, ns, setOf("old-b", "mid", "new-x", "new-y", "running"))
	if got := d.Metric(t, "kubegcd_podgc_force_delete_pods_total", "reason=terminated"); got != 2 {
		t.Errorf("kubegcd_podgc_force_delete_pods_total{reason=terminated} = %v, want 2", got)
	}
	d.Stop()

	// Threshold 3: one more, the older of the same-second pair's survivor.
	d = daemons.Start(t, dbPath, podgcArgs("--terminated-pod-gc-threshold=3")...)
	waitPods(t, d, ns, setOf("mid", "new-x", "new-y", "running"))
	rows := audit(t, d, "controller=podgc&namespace="+ns)
	var deleted []string
	for _, r := range rows {
		if r.Rule != "BR-24-01" || r.Action != "delete" || r.Outcome != api.OutcomeApplied || r.DryRun {
			t.Errorf("audit row %+v: want BR-24-01 delete applied", r)
		}
		deleted = append(deleted, r.Target.Name)
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, []string{"new-evicted", "old-a", "old-b"}) {
		t.Errorf("audited deletions %v", deleted)
	}
	d.Stop()

	// Threshold 0 turns gcTerminated off: three terminated pods stay.
	d = daemons.Start(t, dbPath, podgcArgs("--terminated-pod-gc-threshold=0")...)
	waitPods(t, d, ns, setOf("mid", "new-x", "new-y", "running"))
}

func TestPodGCTerminatingOnOutOfServiceNodes(t *testing.T) {
	ns := namespaces.New(t, "out-of-service")
	oos := corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}
	createNode(t, nodeSpec{name: "oos", ready: corev1.ConditionFalse, taints: []corev1.Taint{oos}})
	createNode(t, nodeSpec{name: "ready-tainted", ready: corev1.ConditionTrue, taints: []corev1.Taint{oos}})
	createNode(t, nodeSpec{name: "notready", ready: corev1.ConditionFalse})
	for _, s := range []podSpec{
		{name: "on-oos", node: "oos", phase: corev1.PodRunning},
		{name: "on-oos-live", node: "oos", phase: corev1.PodRunning},
		{name: "on-ready-tainted", node: "ready-tainted", phase: corev1.PodRunning},
		{name: "on-notready", node: "notready", phase: corev1.PodRunning},
	} {
		createPod(t, ns, s)
	}
	// Pods bound to a node stay Terminating until their kubelet confirms;
	// there is none.
	for _, name := range []string{"on-oos", "on-ready-tainted", "on-notready"} {
		if err := kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := daemons.Start(t, "", podgcArgs()...)
	waitPods(t, d, ns, setOf("on-oos-live", "on-ready-tainted", "on-notready"))
	for _, name := range []string{"on-ready-tainted", "on-notready"} {
		if p := getPod(t, ns, name); p.Status.Phase != corev1.PodRunning || *p.DeletionGracePeriodSeconds != 30 {
			t.Errorf("%s: phase %s, grace %d: want it untouched", name, p.Status.Phase, *p.DeletionGracePeriodSeconds)
		}
	}
	rows := audit(t, d, "controller=podgc&namespace="+ns)
	if len(rows) != 1 || rows[0].Target.Name != "on-oos" || rows[0].Rule != "BR-24-02" || rows[0].Outcome != api.OutcomeApplied {
		t.Fatalf("audit %+v: want one BR-24-02 deletion of on-oos", rows)
	}
}

// podEvents records the watch events of a namespace's pods.
type podEvents struct {
	mu     sync.Mutex
	events []watch.Event
}

func watchPods(t *testing.T, ns string) *podEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := &podEvents{}
	go func() {
		for ev := range w.ResultChan() {
			e.mu.Lock()
			e.events = append(e.events, ev)
			e.mu.Unlock()
		}
	}()
	return e
}

// markedBeforeDeleted reports whether pod name was seen Failed with the
// DisruptionTarget condition of PodGC before it was deleted.
func (e *podEvents) markedBeforeDeleted(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	marked := false
	for _, ev := range e.events {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || p.Name != name {
			continue
		}
		if ev.Type == watch.Deleted {
			if !marked {
				return fmt.Errorf("%s deleted without being seen Failed with DisruptionTarget first", name)
			}
			return nil
		}
		for _, c := range p.Status.Conditions {
			if p.Status.Phase == corev1.PodFailed && c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue &&
				c.Reason == "DeletionByPodGC" && c.Message == "PodGC: node no longer exists" {
				marked = true
			}
		}
	}
	return fmt.Errorf("%s not deleted yet", name)
}

func TestPodGCOrphanedAfterQuarantine(t *testing.T) {
	ns := namespaces.New(t, "orphaned")
	createNode(t, nodeSpec{name: "gone", ready: corev1.ConditionTrue})
	createNode(t, nodeSpec{name: "back", ready: corev1.ConditionTrue})
	for _, s := range []podSpec{
		{name: "o1", node: "gone", phase: corev1.PodRunning},
		{name: "o2", node: "gone", phase: corev1.PodPending},
		{name: "b1", node: "back", phase: corev1.PodRunning},
	} {
		createPod(t, ns, s)
	}
	events := watchPods(t, ns)
	const quarantine = 5 * time.Second
	d := daemons.Start(t, "", podgcArgs("--podgc-quarantine="+quarantine.String())...)
	waitPasses(t, d, 1)

	ctx := context.Background()
	for _, n := range []string{"gone", "back"} {
		if err := kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deletedAt := time.Now()
	// In quarantine: kept, and shown as pending with the time left.
	eventually(t, 10*time.Second, func() error {
		items := pending(t, d, "podgc")
		var names []string
		for _, p := range items {
			if p.Rule != "BR-24-03" || p.NotBefore == nil || p.TimeLeft == "" || !strings.Contains(p.Reason, "quarantine") {
				return fmt.Errorf("pending %+v: want a quarantine with its end and time left", p)
			}
			names = append(names, p.Target.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"b1", "o1", "o2"}) {
			return fmt.Errorf("pending pods %v", names)
		}
		return nil
	})
	if got := podNames(t, ns); !maps.Equal(got, setOf("o1", "o2", "b1")) {
		t.Fatalf("pods %v deleted during the quarantine", got)
	}
	// The node comes back within its quarantine: its pod is saved.
	createNode(t, nodeSpec{name: "back", ready: corev1.ConditionTrue})

	eventually(t, quarantine+20*time.Second, func() error {
		for _, name := range []string{"o1", "o2"} {
			if err := events.markedBeforeDeleted(name); err != nil {
				return err
			}
		}
		return nil
	})
	for _, r := range audit(t, d, "controller=podgc&namespace="+ns) {
		if r.Rule != "BR-24-03" || r.Outcome != api.OutcomeApplied || (r.Target.Name != "o1" && r.Target.Name != "o2") {
			t.Errorf("audit row %+v", r)
		}
		if early := deletedAt.Add(quarantine).Sub(r.Time); early > 0 {
			t.Errorf("%s deleted %s before its quarantine ended", r.Target.Name, early)
		}
	}
	waitPods(t, d, ns, setOf("b1"))
	eventually(t, 10*time.Second, func() error {
		if items := pending(t, d, "podgc"); len(items) != 0 {
			return fmt.Errorf("still pending: %+v", items)
		}
		return nil
	})
}

func TestPodGCUnscheduledTerminatingAndHeldPods(t *testing.T) {
	ns := namespaces.New(t, "unscheduled")
	createNode(t, nodeSpec{name: "healthy", ready: corev1.ConditionTrue})
	createPod(t, ns, podSpec{name: "unbound-terminating", finalizer: true})
	createPod(t, ns, podSpec{name: "unbound-pending"})
	createPod(t, ns, podSpec{name: "bound-terminating", node: "healthy", phase: corev1.PodRunning})
	for _, name := range []string{"unbound-terminating", "bound-terminating"} {
		if err := kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := daemons.Start(t, "", podgcArgs()...)
	// Marked Failed, then deleted with grace period 0; its finalizer holds it.
	eventually(t, 20*time.Second, func() error {
		p := getPod(t, ns, "unbound-terminating")
		if p.Status.Phase != corev1.PodFailed || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 0 {
			return fmt.Errorf("phase %s, grace %v", p.Status.Phase, p.DeletionGracePeriodSeconds)
		}
		return nil
	})
	// Held by its finalizer: not deleted again pass after pass. A pass that
	// read the mirror before it saw the deletion may still send its DELETE:
	// count only once the mirror shows it and such a pass has ended.
	uid := getPod(t, ns, "unbound-terminating").UID
	eventually(t, 20*time.Second, func() error {
		o, err := d.DB(t).Objects().GetObject(context.Background(), string(uid))
		if err != nil {
			return err
		}
		if o.DeletionGracePeriodSeconds == nil || *o.DeletionGracePeriodSeconds != 0 {
			return fmt.Errorf("the mirror has grace %v", o.DeletionGracePeriodSeconds)
		}
		return nil
	})
	waitPasses(t, d, 1)
	before := e2eutil.APIDeletes(t, kube, "pods").Sum()
	waitPasses(t, d, 5)
	if after := e2eutil.APIDeletes(t, kube, "pods").Sum(); after != before {
		t.Errorf("%v pod DELETE calls during five passes over a finalizer-held pod, want 0", after-before)
	}
	rows := audit(t, d, "controller=podgc&namespace="+ns)
	if len(rows) != 1 || rows[0].Target.Name != "unbound-terminating" || rows[0].Rule != "KG-24-01" || rows[0].Outcome != api.OutcomeApplied {
		t.Fatalf("audit %+v: want one KG-24-01 deletion of unbound-terminating", rows)
	}
	items := pending(t, d, "podgc")
	if len(items) != 1 || items[0].Target.Name != "unbound-terminating" || items[0].NotBefore == nil ||
		!strings.Contains(items[0].Reason, "held by finalizers") {
		t.Fatalf("pending %+v: want the held pod with its back-off", items)
	}
	for name, phase := range map[string]corev1.PodPhase{"unbound-pending": corev1.PodPending, "bound-terminating": corev1.PodRunning} {
		if p := getPod(t, ns, name); p == nil || p.Status.Phase != phase {
			t.Errorf("%s: %v, want it untouched in phase %s", name, p, phase)
		}
	}
	// Once its finalizer goes, so does the pod, and its pending row.
	if _, err := kube.CoreV1().Pods(ns).Patch(context.Background(), "unbound-terminating", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(t, d, ns, setOf("unbound-pending", "bound-terminating"))
	if items := pending(t, d, "podgc"); len(items) != 0 {
		t.Errorf("still pending: %+v", items)
	}
}

func TestPodGCMaxAgeAndNamespaceThresholds(t *testing.T) {
	aged := namespaces.New(t, "max-age")
	limited := namespaces.New(t, "ns-threshold")
	other := namespaces.New(t, "ns-other")
	createPod(t, aged, podSpec{name: "old", phase: corev1.PodSucceeded})
	createPod(t, aged, podSpec{name: "running", phase: corev1.PodRunning})
	first := createPod(t, limited, podSpec{name: "t1", phase: corev1.PodSucceeded})
	nextSecond(t, first.CreationTimestamp)
	samePair(t, limited, podSpec{name: "t3", phase: corev1.PodFailed}, podSpec{name: "t2", phase: corev1.PodSucceeded})
	for _, n := range []string{"q1", "q2", "q3"} {
		createPod(t, other, podSpec{name: n, phase: corev1.PodSucceeded})
	}
	// Off by default.
	d := daemons.Start(t, "", podgcArgs()...)
	waitPasses(t, d, 3)
	for ns, want := range map[string][]string{aged: {"old", "running"}, limited: {"t1", "t2", "t3"}, other: {"q1", "q2", "q3"}} {
		if got := podNames(t, ns); !maps.Equal(got, setOf(want...)) {
			t.Fatalf("%s: pods %v with the defaults, want %v", ns, got, want)
		}
	}
	d.Stop()

	// A threshold of its own for one namespace: the others keep theirs.
	d = daemons.Start(t, "", podgcArgs("--terminated-pod-gc-threshold-namespace", limited+"=1")...)
	waitPods(t, d, limited, setOf("t3"))
	for ns, want := range map[string][]string{aged: {"old", "running"}, other: {"q1", "q2", "q3"}} {
		if got := podNames(t, ns); !maps.Equal(got, setOf(want...)) {
			t.Fatalf("%s: pods %v, want %v", ns, got, want)
		}
	}
	for _, r := range audit(t, d, "controller=podgc") {
		if (r.Target.Name != "t1" && r.Target.Name != "t2") || r.Rule != "KG-24-03" || r.Target.Namespace != limited {
			t.Errorf("unexpected decision %s %s/%s", r.Rule, r.Target.Namespace, r.Target.Name)
		}
	}
	d.Stop()

	// A maximum age: terminated pods go once that old, whatever their
	// number, and not before.
	const maxAge = 8 * time.Second
	d = daemons.Start(t, "", podgcArgs("--terminated-pod-max-age="+maxAge.String())...)
	young := createPod(t, aged, podSpec{name: "young", phase: corev1.PodFailed})
	waitPods(t, d, aged, setOf("running"))
	for _, r := range audit(t, d, "controller=podgc&namespace="+aged) {
		if r.Rule != "KG-24-02" {
			t.Errorf("%s: rule %s, want KG-24-02", r.Target.Name, r.Rule)
		}
		// creationTimestamp has second precision.
		if age := r.Time.Sub(young.CreationTimestamp.Time); r.Target.Name == "young" && age < maxAge-time.Second {
			t.Errorf("young deleted at age %s, before --terminated-pod-max-age=%s", age, maxAge)
		}
	}
}

func TestPodGCDryRun(t *testing.T) {
	ns := namespaces.New(t, "podgc-dry")
	oos := corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
	createNode(t, nodeSpec{name: "dry-oos", ready: corev1.ConditionFalse, taints: []corev1.Taint{oos}})
	createNode(t, nodeSpec{name: "dry-gone", ready: corev1.ConditionTrue})
	createPod(t, ns, podSpec{name: "done-1", phase: corev1.PodSucceeded})
	createPod(t, ns, podSpec{name: "done-2", phase: corev1.PodSucceeded})
	createPod(t, ns, podSpec{name: "terminating-oos", node: "dry-oos", phase: corev1.PodRunning})
	createPod(t, ns, podSpec{name: "orphan", node: "dry-gone", phase: corev1.PodRunning})
	createPod(t, ns, podSpec{name: "unbound", finalizer: true})
	ctx := context.Background()
	for _, name := range []string{"terminating-oos", "unbound"} {
		if err := kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kube.CoreV1().Nodes().Delete(ctx, "dry-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, ns)
	d := daemons.Start(t, "", "--controllers=podgc,ttl", "--dry-run=true", "--podgc-period=1s", "--podgc-quarantine=2s",
		"--terminated-pod-gc-threshold=1", "--terminated-pod-max-age=1s", "--terminated-pod-gc-threshold-namespace", ns+"=1")
	want := map[string]string{ // pod → rule of its first (deciding) collection
		"done-1": "BR-24-01", "terminating-oos": "BR-24-02", "orphan": "BR-24-03", "unbound": "KG-24-01",
	}
	eventually(t, 30*time.Second, func() error {
		got := map[string]string{}
		for _, r := range audit(t, d, "controller=podgc&namespace="+ns) {
			if !r.DryRun || r.Outcome != api.OutcomeDryRun {
				return e2eutil.StopError{Err: fmt.Errorf("audit row %+v not marked dry-run", r)}
			}
			got[r.Target.Name] = r.Rule
		}
		for name, rule := range want {
			if got[name] != rule {
				return fmt.Errorf("audited %v, want at least %v", got, want)
			}
		}
		// done-2 is beyond the namespace threshold or the age, whichever
		// collection reaches it first.
		if r := got["done-2"]; r != "KG-24-02" && r != "KG-24-03" {
			return fmt.Errorf("done-2 audited under %q", r)
		}
		return nil
	})
	items := pending(t, d, "podgc")
	if len(items) != 5 {
		t.Errorf("pending %d items, want the 5 pods: %+v", len(items), items)
	}
	// ttl in dry-run: the node would be annotated, and is not.
	eventually(t, 10*time.Second, func() error {
		items := pending(t, d, "ttl")
		if len(items) != 1 || items[0].Target.Name != "dry-oos" || items[0].Action != "annotate" {
			return fmt.Errorf("ttl pending %+v, want dry-oos to be annotated", items)
		}
		rows := audit(t, d, "controller=ttl")
		if len(rows) != 1 || !rows[0].DryRun || rows[0].Outcome != api.OutcomeDryRun || rows[0].Rule != "BR-19-01" {
			return fmt.Errorf("ttl audit %+v, want one dry-run BR-19-01 row", rows)
		}
		return nil
	})
	waitPasses(t, d, 2)
	if after := snapshot(t, ns); !maps.Equal(before, after) {
		t.Fatalf("dry-run changed the cluster:\nbefore %v\nafter  %v", before, after)
	}
}

// snapshot maps every pod of ns and every node to its resourceVersion.
func snapshot(t *testing.T, ns string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out["pod/"+p.Name] = p.ResourceVersion
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		out["node/"+n.Name] = n.ResourceVersion
	}
	return out
}

func TestPodGCBlastRadiusCap(t *testing.T) {
	ns := namespaces.New(t, "podgc-cap")
	for i := range 6 {
		createPod(t, ns, podSpec{name: fmt.Sprintf("done-%d", i), phase: corev1.PodSucceeded})
	}
	d := daemons.Start(t, "", podgcArgs("--terminated-pod-gc-threshold=1", "--max-deletions-per-minute=2")...)
	// Five over the threshold, two allowed a minute: two go, three wait.
	eventually(t, 20*time.Second, func() error {
		if n := len(podNames(t, ns)); n != 4 {
			return fmt.Errorf("%d pods left, want 4", n)
		}
		var st struct {
			Enforcement struct {
				Paused       bool
				PausedReason string
			}
		}
		d.GetJSON(t, "/status", 200, &st)
		if !st.Enforcement.Paused || !strings.Contains(st.Enforcement.PausedReason, "--max-deletions-per-minute=2") {
			return fmt.Errorf("/status enforcement %+v, want paused", st.Enforcement)
		}
		items := pending(t, d, "podgc")
		if len(items) != 3 {
			return fmt.Errorf("%d pending, want the 3 held back", len(items))
		}
		for _, p := range items {
			if !strings.HasPrefix(p.Reason, "paused by the blast-radius cap") {
				return fmt.Errorf("pending reason %q", p.Reason)
			}
		}
		return nil
	})
	waitPasses(t, d, 3)
	if n := len(podNames(t, ns)); n != 4 {
		t.Fatalf("%d pods left while paused, want 4", n)
	}
}
