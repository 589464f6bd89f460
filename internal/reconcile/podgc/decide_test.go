package podgc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// t0 is the time of the pass in these tests.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// pod returns a pod of namespace ns created the given hours before t0.
func pod(name, phase string, hours int, opts ...func(*db.Object)) *db.Object {
	created := t0.Add(-time.Duration(hours) * time.Hour)
	o := &db.Object{UID: "uid-" + name, APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: name, ResourceVersion: "1",
		CreationTimestamp: &created, Pod: &db.Pod{Phase: phase}}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

func evictedPod(o *db.Object)  { o.Pod.Phase, o.Pod.Reason = "Failed", "Evicted" }
func noCreated(o *db.Object)   { o.CreationTimestamp = nil }
func zeroCreated(o *db.Object) { o.CreationTimestamp = &time.Time{} }
func deleting(o *db.Object) {
	at := t0.Add(-time.Minute)
	o.DeletionTimestamp = &at
}
func inNamespace(ns string) func(*db.Object)  { return func(o *db.Object) { o.Namespace = ns } }
func onNode(node string) func(*db.Object)     { return func(o *db.Object) { o.Pod.NodeName = node } }
func createdAt(t time.Time) func(*db.Object)  { return func(o *db.Object) { o.CreationTimestamp = &t } }
func withUID(uid string) func(*db.Object)     { return func(o *db.Object) { o.UID = uid } }
func finalizers(f ...string) func(*db.Object) { return func(o *db.Object) { o.Finalizers = f } }

func names(jobs []job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.pod.Name)
	}
	return out
}

// reversed returns pods last first: the decisions must not rest on the
// order they are given in.
func reversed(pods []*db.Object) []*db.Object {
	out := slices.Clone(pods)
	slices.Reverse(out)
	return out
}

// sweepOver runs a sweep over pods as a pass over a store holding them
// would: the count is of the pods its filter selects.
func sweepOver(pods []*db.Object, mk func(total int) sweep) []job {
	total := 0
	for _, p := range pods {
		if selects(mk(0).filter, p) {
			total++
		}
	}
	s := mk(total)
	return s.take(reversed(pods), s.n)
}

func TestTerminated(t *testing.T) {
	for phase, want := range map[string]bool{
		"Pending": false, "Running": false, "Unknown": false,
		"Succeeded": true, "Failed": true, "": true, "running": true,
	} {
		if got := terminated(&db.Pod{Phase: phase}); got != want {
			t.Errorf("phase %q: terminated %v, want %v", phase, got, want)
		}
	}
}

// TestDeletionOrder: Evicted first, then the oldest (none first), then by
// name, then by UID.
func TestDeletionOrder(t *testing.T) {
	want := []*db.Object{
		pod("e", "", 0, evictedPod, noCreated, withUID("1")),
		pod("e", "", 5, evictedPod, withUID("2")),
		pod("d", "", 1, evictedPod, withUID("3")),
		pod("z", "Failed", 0, noCreated, withUID("4")),
		pod("a", "Succeeded", 9, withUID("6")),
		pod("b", "Succeeded", 9, withUID("5")),
		pod("b", "Failed", 9, withUID("7")),
		pod("a", "Succeeded", 8, withUID("0")),
	}
	uids := func(pods []*db.Object) (out string) {
		for _, p := range pods {
			out += p.UID
		}
		return out
	}
	for _, in := range [][]*db.Object{want, reversed(want), {want[3], want[7], want[0], want[5], want[1], want[6], want[4], want[2]}} {
		if got := slices.SortedFunc(slices.Values(in), deletionOrder); uids(got) != uids(want) {
			t.Errorf("sorted %s, want %s", uids(got), uids(want))
		}
	}
	for i, p := range want {
		if deletionOrder(p, p) != 0 {
			t.Errorf("pod %d is not equal to itself", i)
		}
	}
}

// TestGCTerminated is upstream's TestGCTerminated, and BR-24-01's edges.
func TestGCTerminated(t *testing.T) {
	tests := []struct {
		name      string
		pods      []*db.Object
		threshold int
		want      []string
	}{
		{name: "threshold 0 turns the rule off",
			pods: []*db.Object{pod("a", "Failed", 3), pod("b", "Succeeded", 2)}, threshold: 0},
		{name: "a negative threshold too",
			pods: []*db.Object{pod("a", "Failed", 3), pod("b", "Succeeded", 2)}, threshold: -1},
		{name: "the oldest beyond the threshold go, oldest first",
			pods:      []*db.Object{pod("a", "Failed", 3), pod("b", "Succeeded", 2), pod("c", "Failed", 1)},
			threshold: 1, want: []string{"a", "b"}},
		{name: "pods not terminated are not counted",
			pods:      []*db.Object{pod("a", "Running", 3), pod("b", "Succeeded", 2), pod("c", "Failed", 1)},
			threshold: 1, want: []string{"b"}},
		{name: "Pending and Unknown are not terminated",
			pods:      []*db.Object{pod("a", "Pending", 4), pod("b", "Unknown", 3), pod("c", "Succeeded", 2), pod("d", "Failed", 1)},
			threshold: 1, want: []string{"c"}},
		{name: "one beyond the threshold",
			pods: []*db.Object{pod("a", "Failed", 3), pod("b", "Succeeded", 2)}, threshold: 1, want: []string{"a"}},
		{name: "exactly at the threshold",
			pods: []*db.Object{pod("a", "Failed", 3), pod("b", "Succeeded", 2)}, threshold: 2},
		{name: "below the threshold",
			pods: []*db.Object{pod("a", "Failed", 3), pod("b", "Succeeded", 2)}, threshold: 5},
		{name: "no pods", threshold: 1},
		{name: "Evicted first, then the oldest",
			pods: []*db.Object{pod("old", "Succeeded", 10), pod("evicted", "", 1, evictedPod), pod("mid", "Failed", 5),
				pod("new", "Succeeded", 0)},
			threshold: 2, want: []string{"evicted", "old"}},
		{name: "Evicted pods among themselves: the oldest first",
			pods:      []*db.Object{pod("e1", "", 1, evictedPod), pod("e2", "", 2, evictedPod), pod("x", "Failed", 9)},
			threshold: 1, want: []string{"e2", "e1"}},
		{name: "a Failed pod of another reason is not Evicted",
			pods: []*db.Object{pod("old", "Failed", 5, func(o *db.Object) { o.Pod.Reason = "Error" }), pod("new", "Failed", 1,
				func(o *db.Object) { o.Pod.Reason = "evicted" })},
			threshold: 1, want: []string{"old"}},
		{name: "an empty phase counts as terminated",
			pods: []*db.Object{pod("a", "", 2), pod("b", "Succeeded", 1)}, threshold: 1, want: []string{"a"}},
		{name: "a pod without a creationTimestamp goes first",
			pods:      []*db.Object{pod("a", "Succeeded", 50), pod("b", "Succeeded", 0, noCreated), pod("c", "Failed", 0, zeroCreated)},
			threshold: 1, want: []string{"b", "c"}},
		{name: "an Evicted pod goes before one without a creationTimestamp",
			pods: []*db.Object{pod("a", "Succeeded", 0, noCreated), pod("b", "", 0, evictedPod)}, threshold: 1, want: []string{"b"}},
		{name: "a tie on creationTimestamp goes by name, then by UID",
			pods: []*db.Object{pod("b", "Succeeded", 1), pod("a", "Succeeded", 1, withUID("2")), pod("a", "Failed", 1, withUID("1")),
				pod("c", "Succeeded", 0)},
			threshold: 1, want: []string{"a", "a", "b"}},
		{name: "within one microsecond, creationTimestamps tie, as the mirror keeps them",
			pods: []*db.Object{pod("b", "Succeeded", 0, createdAt(t0.Add(-time.Hour))),
				pod("a", "Succeeded", 0, createdAt(t0.Add(-time.Hour+999*time.Nanosecond))), pod("c", "Succeeded", 0)},
			threshold: 2, want: []string{"a"}},
		{name: "pods already being deleted count, and go",
			pods: []*db.Object{pod("a", "Succeeded", 2, deleting), pod("b", "Succeeded", 1)}, threshold: 1, want: []string{"a"}},
		{name: "the threshold is cluster-wide",
			pods: []*db.Object{pod("a", "Succeeded", 3, inNamespace("x")), pod("b", "Succeeded", 2, inNamespace("y")),
				pod("c", "Succeeded", 1, inNamespace("z"))},
			threshold: 1, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sweepOver(tt.pods, func(total int) sweep { return overThreshold(total, tt.threshold) })
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("deleted %q, want %q", names(got), tt.want)
			}
			for _, j := range got {
				if j.rule != ruleTerminated || j.label != reasonTerminated || j.condition {
					t.Errorf("%s: rule %s, label %s, condition %v", j.pod.Name, j.rule, j.label, j.condition)
				}
			}
		})
	}
}

// TestGCTerminatedMaxAge covers KG-24-02.
func TestGCTerminatedMaxAge(t *testing.T) {
	const day = 24 * time.Hour
	cutoff := t0.Add(-day)
	tests := []struct {
		name   string
		maxAge time.Duration
		now    time.Time
		pods   []*db.Object
		want   []string
	}{
		{name: "0 turns the rule off", pods: []*db.Object{pod("a", "Succeeded", 1000)}},
		{name: "every terminated pod past the age goes, in deletion order", maxAge: day,
			pods: []*db.Object{pod("a", "Succeeded", 30), pod("b", "Failed", 50), pod("c", "", 40, evictedPod), pod("young", "Failed", 2)},
			want: []string{"c", "b", "a"}},
		{name: "pods not terminated stay however old", maxAge: day,
			pods: []*db.Object{pod("a", "Running", 100), pod("b", "Pending", 100), pod("c", "Unknown", 100)}},
		{name: "created exactly max age ago: stays", maxAge: day,
			pods: []*db.Object{pod("a", "Succeeded", 0, createdAt(cutoff))}},
		{name: "a microsecond older: goes", maxAge: day,
			pods: []*db.Object{pod("a", "Succeeded", 0, createdAt(cutoff.Add(-time.Microsecond)))}, want: []string{"a"}},
		{name: "within the cutoff's microsecond: stays, as the mirror compares microseconds", maxAge: day,
			now:  t0.Add(700 * time.Nanosecond),
			pods: []*db.Object{pod("a", "Succeeded", 0, createdAt(cutoff.Add(300*time.Nanosecond)))}},
		{name: "a pod without a creationTimestamp has no age", maxAge: time.Nanosecond,
			pods: []*db.Object{pod("a", "Succeeded", 0, noCreated), pod("b", "Succeeded", 0, zeroCreated)}},
		{name: "pods already being deleted go too", maxAge: day,
			pods: []*db.Object{pod("a", "Succeeded", 48, deleting)}, want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = t0
			}
			s := pastMaxAge(tt.maxAge, now)
			if tt.maxAge > 0 && s.n != math.MaxInt {
				t.Errorf("n %d, want no bound", s.n)
			}
			got := s.take(reversed(tt.pods), s.n)
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("deleted %q, want %q", names(got), tt.want)
			}
			for _, j := range got {
				if j.rule != ruleMaxAge || j.label != reasonTerminated {
					t.Errorf("%s: rule %s, label %s", j.pod.Name, j.rule, j.label)
				}
			}
		})
	}
}

// TestGCTerminatedNamespaceThreshold covers KG-24-03.
func TestGCTerminatedNamespaceThreshold(t *testing.T) {
	tests := []struct {
		name      string
		threshold int
		pods      []*db.Object
		want      []string
	}{
		{name: "0 keeps none of the namespace's terminated pods", threshold: 0,
			pods: []*db.Object{pod("a", "Succeeded", 2), pod("b", "Failed", 1), pod("run", "Running", 3)}, want: []string{"a", "b"}},
		{name: "beyond its threshold: Evicted first, then the oldest", threshold: 1,
			pods: []*db.Object{pod("a", "Succeeded", 9), pod("b", "Failed", 5), pod("e", "", 1, evictedPod)}, want: []string{"e", "a"}},
		{name: "exactly at its threshold", threshold: 2,
			pods: []*db.Object{pod("a", "Succeeded", 9), pod("b", "Failed", 5)}},
		{name: "other namespaces neither count nor go", threshold: 1,
			pods: []*db.Object{pod("a", "Succeeded", 9, inNamespace("other")), pod("b", "Succeeded", 8, inNamespace("other")),
				pod("c", "Failed", 5), pod("d", "Failed", 1)},
			want: []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sweepOver(tt.pods, func(total int) sweep { return overNamespaceThreshold("ns", total, tt.threshold) })
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("deleted %q, want %q", names(got), tt.want)
			}
			for _, j := range got {
				if j.rule != ruleNamespaceThreshold || j.label != reasonTerminated {
					t.Errorf("%s: rule %s, label %s", j.pod.Name, j.rule, j.label)
				}
			}
		})
	}
	if got := namespaces(map[string]int{"b": 1, "c": 0, "a": 2}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("namespaces swept in the order %q", got)
	}
}

// TestTakeStopsAtN: a page holds more than the sweep still takes.
func TestTakeStopsAtN(t *testing.T) {
	s := overThreshold(5, 1)
	pods := []*db.Object{pod("a", "Succeeded", 3), pod("r", "Running", 9), pod("b", "Succeeded", 2), pod("c", "Succeeded", 1)}
	for n, want := range map[int][]string{0: nil, 1: {"a"}, 2: {"a", "b"}, 10: {"a", "b", "c"}} {
		if got := names(s.take(pods, n)); !slices.Equal(got, want) {
			t.Errorf("take %d: %q, want %q", n, got, want)
		}
	}
}

// TestGCTerminating is upstream's TestGCTerminating: BR-24-02.
func TestGCTerminating(t *testing.T) {
	taint := func(key, effect string) db.Taint { return db.Taint{Key: key, Effect: effect} }
	oos := corev1.TaintNodeOutOfService
	nodes := map[string]*db.Node{
		"down-tainted":      {Ready: "False", Taints: []db.Taint{taint(oos, "NoExecute")}},
		"unknown-tainted":   {Ready: "Unknown", Taints: []db.Taint{taint("other", "NoSchedule"), taint(oos, "NoExecute")}},
		"no-ready-tainted":  {Taints: []db.Taint{taint(oos, "NoSchedule")}},
		"ready-tainted":     {Ready: "True", Taints: []db.Taint{taint(oos, "NoExecute")}},
		"down-untainted":    {Ready: "False", Taints: []db.Taint{taint(corev1.TaintNodeUnreachable, "NoExecute")}},
		"down-no-taints":    {Ready: "False"},
		"ready-not-tainted": {Ready: "True"},
	}
	for name, want := range map[string]bool{"down-tainted": true, "unknown-tainted": true, "no-ready-tainted": true} {
		if got := outOfService(nodes[name]); got != want {
			t.Errorf("node %s: out of service %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"ready-tainted", "down-untainted", "down-no-taints", "ready-not-tainted"} {
		if outOfService(nodes[name]) {
			t.Errorf("node %s: out of service", name)
		}
	}

	tests := []struct {
		name string
		pods []*db.Object
		want []string
	}{
		{name: "terminating pods on out-of-service nodes go, in any phase",
			pods: []*db.Object{pod("a", "Running", 1, onNode("down-tainted"), deleting),
				pod("b", "Succeeded", 2, onNode("unknown-tainted"), deleting), pod("c", "Pending", 3, onNode("no-ready-tainted"), deleting)},
			want: []string{"a", "b", "c"}},
		{name: "pods not being deleted stay",
			pods: []*db.Object{pod("a", "Running", 1, onNode("down-tainted")), pod("b", "Failed", 1, onNode("down-tainted"))}},
		{name: "a Ready node keeps its pods, tainted or not",
			pods: []*db.Object{pod("a", "Running", 1, onNode("ready-tainted"), deleting),
				pod("b", "Running", 1, onNode("ready-not-tainted"), deleting)}},
		{name: "a node not Ready without the taint keeps its pods",
			pods: []*db.Object{pod("a", "Running", 1, onNode("down-untainted"), deleting),
				pod("b", "Running", 1, onNode("down-no-taints"), deleting)}},
		{name: "the order given is kept",
			pods: []*db.Object{pod("z", "Running", 1, onNode("down-tainted"), deleting), pod("y", "Running", 9, onNode("down-tainted"), deleting)},
			want: []string{"z", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The store lists the pods on out-of-service nodes.
			var listed []*db.Object
			for _, p := range tt.pods {
				if outOfService(nodes[p.Pod.NodeName]) {
					listed = append(listed, p)
				}
			}
			got := terminatingOutOfService(listed)
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("deleted %q, want %q", names(got), tt.want)
			}
			for _, j := range got {
				if j.rule != ruleOutOfService || j.label != reasonOutOfService || j.condition {
					t.Errorf("%s: rule %s, label %s, condition %v", j.pod.Name, j.rule, j.label, j.condition)
				}
			}
		})
	}
	// A pod bound to no node is unscheduledTerminating's, not this rule's.
	if got := terminatingOutOfService([]*db.Object{pod("a", "Running", 1, deleting)}); len(got) != 0 {
		t.Errorf("an unbound pod went: %q", names(got))
	}
}

// TestMissingNode is the quarantine of upstream's TestGCOrphaned: BR-24-03.
func TestMissingNode(t *testing.T) {
	const q = 40 * time.Second
	earlier := t0.Add(-10 * time.Second)
	tests := []struct {
		name       string
		since      time.Time
		quarantine time.Duration
		check      nodeCheck
		want       missing
	}{
		{name: "first seen missing: quarantined from now", quarantine: q,
			want: missing{step: inQuarantine, since: t0, until: t0.Add(q)}},
		{name: "within its quarantine", since: earlier, quarantine: q,
			want: missing{step: inQuarantine, since: earlier, until: earlier.Add(q)}},
		{name: "a nanosecond before its end", since: t0.Add(-q + time.Nanosecond), quarantine: q,
			want: missing{step: inQuarantine, since: t0.Add(-q + time.Nanosecond), until: t0.Add(time.Nanosecond)}},
		{name: "exactly at its end: checked live", since: t0.Add(-q), quarantine: q,
			want: missing{step: checkLive, since: t0.Add(-q)}},
		{name: "past its end: checked live", since: t0.Add(-time.Hour), quarantine: q,
			want: missing{step: checkLive, since: t0.Add(-time.Hour)}},
		{name: "no quarantine: checked live at once", quarantine: 0,
			want: missing{step: checkLive, since: t0}},
		{name: "not found live: its pods are orphans", since: t0.Add(-time.Hour), quarantine: q, check: nodeAbsent,
			want: missing{step: orphanPods, since: t0.Add(-time.Hour)}},
		{name: "found live: the mirror lags, a new quarantine starts", since: t0.Add(-time.Hour), quarantine: q, check: nodePresent,
			want: missing{step: inQuarantine, since: t0, until: t0.Add(q)}},
		{name: "the check failed: its pods are kept", since: t0.Add(-time.Hour), quarantine: q, check: checkFailed,
			want: missing{step: keepPods, since: t0.Add(-time.Hour)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := missingNode(tt.since, t0, tt.quarantine, tt.check); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCheckOf(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "n")
	for _, c := range []struct {
		err  error
		want nodeCheck
	}{
		{nil, nodePresent},
		{notFound, nodeAbsent},
		{fmt.Errorf("getting: %w", notFound), nodeAbsent},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n", errors.New("no")), checkFailed},
		{errors.New("connection refused"), checkFailed},
	} {
		if got := checkOf(c.err); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}

// TestGCOrphaned is upstream's TestGCOrphaned: every pod bound to a node
// that is gone goes, whatever its phase, with the DisruptionTarget
// condition (BR-24-04); within the quarantine they are only pending.
func TestGCOrphaned(t *testing.T) {
	since := t0.Add(-time.Hour)
	pods := []*db.Object{pod("a", "Failed", 3, onNode("gone")), pod("b", "Succeeded", 2, onNode("gone")),
		pod("c", "Running", 1, onNode("gone")), pod("d", "Running", 1, onNode("gone"), deleting),
		pod("e", "Pending", 1, onNode("gone"), noCreated), pod("elsewhere", "Running", 1, onNode("other"))}
	got := orphans("gone", pods, since, 40*time.Second)
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(names(got), want) {
		t.Errorf("deleted %q, want %q", names(got), want)
	}
	for _, j := range got {
		if j.rule != ruleOrphaned || j.label != reasonOrphaned || !j.condition {
			t.Errorf("%s: rule %s, label %s, condition %v", j.pod.Name, j.rule, j.label, j.condition)
		}
		if j.facts["nodeMissingSince"] != since || j.facts["nodeCheck"] != "not found" {
			t.Errorf("%s: facts %v", j.pod.Name, j.facts)
		}
	}

	held := quarantined("gone", pods, 40*time.Second)
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(names(held), want) {
		t.Errorf("in quarantine %q, want %q", names(held), want)
	}
	for _, j := range held {
		if j.rule != ruleOrphaned || j.facts != nil {
			t.Errorf("%s: rule %s, facts %v", j.pod.Name, j.rule, j.facts)
		}
	}
}

// TestGCUnscheduledTerminating is upstream's TestGCUnscheduledTerminating:
// KG-24-01.
func TestGCUnscheduledTerminating(t *testing.T) {
	tests := []struct {
		name string
		pods []*db.Object
		want []string
	}{
		{name: "an unscheduled pod being deleted goes, in any phase",
			pods: []*db.Object{pod("a", "Failed", 1, deleting), pod("b", "Succeeded", 1, deleting), pod("c", "Running", 1, deleting),
				pod("d", "Pending", 1, deleting, noCreated)},
			want: []string{"a", "b", "c", "d"}},
		{name: "a scheduled pod, or one not being deleted, stays",
			pods: []*db.Object{pod("a", "Failed", 1), pod("b", "Succeeded", 1, onNode("node")),
				pod("c", "Running", 1, onNode("node"), deleting)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unscheduledTerminating(tt.pods)
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("deleted %q, want %q", names(got), tt.want)
			}
			for _, j := range got {
				if j.rule != ruleUnscheduled || j.label != reasonUnscheduled || j.condition {
					t.Errorf("%s: rule %s, label %s, condition %v", j.pod.Name, j.rule, j.label, j.condition)
				}
			}
		})
	}
}

// TestReasonsAndFacts pins what each rule records: the audit history and
// its readers rest on the wording.
func TestReasonsAndFacts(t *testing.T) {
	created := t0.Add(-2 * time.Hour)
	since := time.Date(2026, 11, 23, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	p := pod("p", "Failed", 2, onNode("n1"), deleting)
	evictedP := pod("p", "", 2, evictedPod)
	base := func(phase, node string, evicted, terminating bool) map[string]any {
		return map[string]any{"phase": phase, "node": node, "evicted": evicted, "terminating": terminating, "created": created}
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name      string
		got       []job
		rule, why string
		facts     map[string]any
	}{
		{name: "BR-24-01", got: overThreshold(7, 3).take([]*db.Object{evictedP}, 1), rule: "BR-24-01",
			why: "the cluster holds more terminated pods than --terminated-pod-gc-threshold=3; " +
				"this one is among the excess (Evicted first, then the oldest)",
			facts: with(base("Failed", "", true, false), "terminatedPods", 7, "threshold", 3)},
		{name: "KG-24-02", got: pastMaxAge(90*time.Minute, t0).take([]*db.Object{p}, 1), rule: "KG-24-02",
			why:   "terminated, and created more than --terminated-pod-max-age=1h30m0s ago",
			facts: with(base("Failed", "n1", false, true), "maxAge", "1h30m0s")},
		{name: "KG-24-03", got: overNamespaceThreshold("ns", 4, 0).take([]*db.Object{p}, 4), rule: "KG-24-03",
			why: "namespace ns holds more terminated pods than its threshold of 0 (--terminated-pod-gc-threshold-namespace); " +
				"this one is among the excess (Evicted first, then the oldest)",
			facts: with(base("Failed", "n1", false, true), "terminatedPodsInNamespace", 4, "threshold", 0)},
		{name: "BR-24-02", got: terminatingOutOfService([]*db.Object{p}), rule: "BR-24-02",
			why:   "terminating on node n1, which is not Ready and is tainted node.kubernetes.io/out-of-service",
			facts: with(base("Failed", "n1", false, true), "nodeReady", false, "taint", "node.kubernetes.io/out-of-service")},
		{name: "BR-24-03", got: orphans("n1", []*db.Object{p}, since, 40*time.Second), rule: "BR-24-03",
			why: "bound to node n1, which is gone: missing from the mirror past its quarantine (--podgc-quarantine=40s) " +
				"and not found by a live GET",
			facts: with(base("Failed", "n1", false, true), "nodeMissingSince", since.UTC(), "nodeCheck", "not found")},
		{name: "BR-24-03 in quarantine", got: quarantined("n1", []*db.Object{p}, 40*time.Second), rule: "BR-24-03",
			why: "bound to node n1, which is missing from the mirror: in quarantine (--podgc-quarantine=40s), " +
				"then the node is looked up live"},
		{name: "KG-24-01", got: unscheduledTerminating([]*db.Object{pod("p", "Running", 2, deleting)}), rule: "KG-24-01",
			why:   "terminating, and bound to no node: no kubelet will ever finish it",
			facts: base("Running", "", false, true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.got) != 1 {
				t.Fatalf("%d jobs, want 1", len(tt.got))
			}
			j := tt.got[0]
			if j.rule != tt.rule || j.why != tt.why {
				t.Errorf("rule %s, reason\n %q\nwant %s,\n %q", j.rule, j.why, tt.rule, tt.why)
			}
			if diff := cmp.Diff(tt.facts, j.facts); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}

	// A pod without a creationTimestamp records none.
	if f := podFacts(pod("p", "Failed", 0, noCreated), nil); f["created"] != nil || len(f) != 4 {
		t.Errorf("facts of a pod without a creationTimestamp: %v", f)
	}
	// The extra facts of one sweep are not shared between its pods.
	jobs := overThreshold(3, 1).take([]*db.Object{pod("a", "Failed", 2), pod("b", "Failed", 1)}, 2)
	jobs[0].facts["finalizers"] = []string{"x"}
	if _, ok := jobs[1].facts["finalizers"]; ok {
		t.Error("two pods share one map of facts")
	}

	held := heldWhy(pod("p", "Failed", 1, finalizers("a/b", "c")), 3, "the reason")
	if want := "held by finalizers [a/b c] after 3 delete(s); the next waits out a back-off: the reason"; held != want {
		t.Errorf("held: %q, want %q", held, want)
	}
}

// TestDecideAgreesWithTheStore: the pass takes the store's selection and
// order on trust, page by page. The decisions must agree with them: the
// same terminated pods counted and listed, in the same order, and the
// same pods on out-of-service nodes.
func TestDecideAgreesWithTheStore(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	podsID, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	nodesID, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatal(err)
	}
	oos := db.Taint{Key: corev1.TaintNodeOutOfService, Effect: "NoExecute"}
	nodes := map[string]*db.Node{
		"down-tainted":  {Ready: "False", Taints: []db.Taint{oos}},
		"blank-tainted": {Taints: []db.Taint{{Key: "x", Effect: "NoSchedule"}, oos}},
		"ready-tainted": {Ready: "True", Taints: []db.Taint{oos}},
		"down":          {Ready: "False"},
	}
	var events []db.Event
	for name, n := range nodes {
		events = append(events, db.Event{ResourceID: nodesID, Object: &db.Object{UID: "node-" + name, APIVersion: "v1",
			Kind: "Node", Name: name, ResourceVersion: "1", Node: n}})
	}
	cutoff := t0.Add(-5*time.Hour + 700*time.Nanosecond)
	var pods []*db.Object
	phases := []string{"Succeeded", "Failed", "", "Running", "Pending", "Unknown"}
	nodeNames := []string{"", "down-tainted", "blank-tainted", "ready-tainted", "down", "gone"}
	for i := range 60 {
		opts := []func(*db.Object){inNamespace([]string{"a", "b", "c"}[i%3]), onNode(nodeNames[i%len(nodeNames)])}
		switch {
		case i%7 == 0:
			opts = append(opts, evictedPod)
		case i%11 == 0:
			opts = append(opts, noCreated)
		case i%13 == 0:
			opts = append(opts, createdAt(cutoff.Add(-400*time.Nanosecond)))
		case i%17 == 0:
			opts = append(opts, createdAt(cutoff.Add(-time.Microsecond)))
		}
		if i%4 == 0 {
			opts = append(opts, deleting)
		}
		// Names repeat across namespaces and creation times repeat, so
		// the later keys of the order are needed.
		p := pod(fmt.Sprintf("p%02d", i%20), phases[i%len(phases)], i%9, append(opts, withUID(fmt.Sprintf("u%03d", 997*i%1000)))...)
		pods = append(pods, p)
		events = append(events, db.Event{ResourceID: podsID, Object: p})
	}
	if _, err := store.Mirror().ApplyEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	uids := func(pods []*db.Object) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.UID)
		}
		return out
	}

	for _, f := range []db.TerminatedFilter{{}, {Namespace: "b"}, {CreatedBefore: &cutoff}, {Namespace: "c", CreatedBefore: &cutoff}} {
		var want []*db.Object
		for _, p := range slices.SortedStableFunc(slices.Values(pods), deletionOrder) {
			if selects(f, p) {
				want = append(want, p)
			}
		}
		n, err := store.PodGC().CountTerminatedPods(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Errorf("filter %+v: the store counts %d, the decisions %d", f, n, len(want))
		}
		var got []*db.Object
		var after *db.PodCursor
		for {
			page, next, err := store.PodGC().TerminatedPods(ctx, f, after, 4)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSortedFunc(page, deletionOrder) {
				t.Errorf("filter %+v: a page is not in deletion order: %q", f, uids(page))
			}
			got = append(got, page...)
			if len(page) < 4 {
				break
			}
			after = next
		}
		if diff := cmp.Diff(uids(want), uids(got)); diff != "" {
			t.Errorf("filter %+v: the store's terminated pods (-decisions +store):\n%s", f, diff)
		}
	}

	var want []string
	for _, p := range pods {
		if n := nodes[p.Pod.NodeName]; n != nil && outOfService(n) && len(terminatingOutOfService([]*db.Object{p})) == 1 {
			want = append(want, p.UID)
		}
	}
	got, err := store.PodGC().TerminatingPodsOnOutOfServiceNodes(ctx, corev1.TaintNodeOutOfService)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no pod on an out-of-service node: the test proves nothing")
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(uids(got)))); diff != "" {
		t.Errorf("terminating pods on out-of-service nodes (-decisions +store):\n%s", diff)
	}
}
