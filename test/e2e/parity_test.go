package e2e

// Parity with upstream: every ownergc scenario also runs with
// kube-controller-manager's garbage collector in place of kubegcd (kcm mode,
// see eachMode), and must leave the scenario's objects in the same state as
// kubegcd in enforce mode does.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// kcmArgs run only the garbage collector, as quick as kubegcd's gcArgs.
var kcmArgs = []string{"--controllers=garbagecollector", "--kube-api-qps=500", "--kube-api-burst=1000"}

const (
	// kcmTimeout bounds kube-controller-manager's start and the sync of its
	// dependency graph.
	kcmTimeout = 60 * time.Second
	// settleQuiet is how long the scenario's objects must stay unchanged to
	// count as settled: longer than kubegcd's resync period (gcArgs), while
	// kube-controller-manager's collector acts on watch events at once.
	settleQuiet = 1500 * time.Millisecond
	// kcmSynced is what kube-controller-manager logs once every resource
	// monitor of the garbage collector has synced, before its workers start.
	kcmSynced = "Garbage collector: all resource monitors have synced"
)

// controllerManager is a kube-controller-manager running the garbage
// collector for one kcm-mode scenario.
type controllerManager struct {
	t       *testing.T
	halt    func() error
	logPath string
}

// startControllerManager runs kube-controller-manager's garbage collector
// until stop or the end of the test. Callers must not run a kubegcd at the
// same time.
func startControllerManager(t *testing.T) *controllerManager {
	t.Helper()
	pattern := filepath.Join(cluster.Dir, "controller-manager-*.log")
	before, _ := filepath.Glob(pattern)
	ctx, cancel := context.WithTimeout(context.Background(), kcmTimeout)
	defer cancel()
	halt, err := cluster.StartControllerManager(ctx, kcmArgs...)
	if err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	cm := &controllerManager{t: t, halt: halt}
	after, _ := filepath.Glob(pattern)
	for _, p := range after {
		if !slices.Contains(before, p) {
			cm.logPath = p
		}
	}
	t.Cleanup(func() {
		cm.stop()
		if t.Failed() {
			t.Logf("kube-controller-manager log (%s):\n%s", cm.logPath, tail(cm.log(), 60))
		}
	})
	return cm
}

// stop ends kube-controller-manager and waits; later calls do nothing.
func (cm *controllerManager) stop() {
	if err := cm.halt(); err != nil {
		cm.t.Errorf("kube-controller-manager: %v", err)
	}
}

func (cm *controllerManager) log() string {
	if cm.logPath == "" {
		return "(log file not found)"
	}
	b, err := os.ReadFile(cm.logPath)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(b)
}

var probeSeq atomic.Int64

// waitCollecting proves the garbage collector is at work before the
// scenario begins: a probe dependent whose owner is deleted must be
// collected. Its workers only start once the dependency graph has synced
// (or the initial sync timed out, which the log then tells and which fails
// the test).
func (cm *controllerManager) waitCollecting(s *scenario) {
	s.t.Helper()
	start := time.Now()
	name := fmt.Sprintf("kcm-probe-%d", probeSeq.Add(1))
	cms := kube.CoreV1().ConfigMaps(s.ns)
	owner, err := cms.Create(s.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	dep, err := cms.Create(s.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-dep", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID},
	}}}, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cms.Delete(s.ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		s.t.Fatal(err)
	}
	eventually(s.t, kcmTimeout, func() error {
		got, err := cms.Get(s.ctx, dep.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case got.UID != dep.UID:
			return nil
		}
		return fmt.Errorf("kube-controller-manager has not collected the probe dependent %s", dep.Name)
	})
	if !strings.Contains(cm.log(), kcmSynced) {
		s.t.Fatalf("kube-controller-manager collects garbage, but did not log %q: some resource monitor did not sync", kcmSynced)
	}
	s.t.Logf("kube-controller-manager collecting %v after its start", time.Since(start).Round(time.Millisecond))
}

// ownerState is an ownerReference with the owner named as the scenario
// named it: UIDs differ from run to run.
type ownerState struct {
	Kind, Name string
	Block      bool
}

// objState is what parity compares of one object.
type objState struct {
	Exists, Deleting bool
	Owners           []ownerState
	Finalizers       []string
}

func (o objState) String() string {
	if !o.Exists {
		return "gone"
	}
	var b strings.Builder
	b.WriteString("exists")
	if o.Deleting {
		b.WriteString(", being deleted")
	}
	var owners []string
	for _, r := range o.Owners {
		block := ""
		if r.Block {
			block = " (blocking)"
		}
		owners = append(owners, r.Kind+" "+r.Name+block)
	}
	fmt.Fprintf(&b, ", owners [%s], finalizers %v", strings.Join(owners, ", "), o.Finalizers)
	return b.String()
}

// clusterState is the state of a scenario's objects, by normalised key.
type clusterState map[string]objState

func (st clusterState) String() string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(st)) {
		lines = append(lines, fmt.Sprintf("  %s: %s", k, st[k]))
	}
	return strings.Join(lines, "\n")
}

// only keeps the given keys.
func (st clusterState) only(keys ...string) clusterState {
	out := clusterState{}
	for _, k := range keys {
		if v, ok := st[k]; ok {
			out[k] = v
		}
	}
	return out
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// diffStates lists the objects whose state differs, one line each.
func diffStates(want, got clusterState, wantName, gotName string) []string {
	all := mapKeys(want)
	for k := range got {
		if _, ok := want[k]; !ok {
			all = append(all, k)
		}
	}
	slices.Sort(all)
	var out []string
	for _, k := range all {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inWant:
			out = append(out, fmt.Sprintf("%s: only %s captured it (%s)", k, gotName, g))
		case !inGot:
			out = append(out, fmt.Sprintf("%s: only %s captured it (%s)", k, wantName, w))
		case !reflect.DeepEqual(w, g):
			out = append(out, fmt.Sprintf("%s:\n    %-8s %s\n    %-8s %s", k, wantName+":", w, gotName+":", g))
		}
	}
	return out
}

// norm makes a namespace or name comparable across modes: the scenario's
// namespace, which names and cluster-scoped objects embed, becomes "<ns>".
func (s *scenario) norm(name string) string {
	if rest, ok := strings.CutPrefix(name, s.ns); ok {
		return "<ns>" + rest
	}
	return name
}

// key names o the same way in every mode.
func (s *scenario) key(o obj) string {
	return fmt.Sprintf("%s %s/%s", o.kind, s.norm(o.namespace), s.norm(o.name))
}

// state captures the scenario's objects (all of them unless objs are given).
func (s *scenario) state(objs ...obj) clusterState {
	s.t.Helper()
	if len(objs) == 0 {
		objs = s.objects
	}
	names := map[types.UID]string{}
	for _, o := range s.objects {
		names[o.uid] = s.norm(o.name)
	}
	st := clusterState{}
	for _, o := range objs {
		got := s.get(o)
		if got == nil {
			st[s.key(o)] = objState{}
			continue
		}
		cur := objState{Exists: true, Deleting: got.GetDeletionTimestamp() != nil, Finalizers: slices.Sorted(slices.Values(got.GetFinalizers()))}
		for _, r := range got.GetOwnerReferences() {
			name, ok := names[r.UID]
			if !ok {
				// Not one of the scenario's objects: a made-up UID, the same
				// in every mode.
				name = fmt.Sprintf("%s (uid %s)", s.norm(r.Name), r.UID)
			}
			cur.Owners = append(cur.Owners, ownerState{Kind: r.Kind, Name: name, Block: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion})
		}
		st[s.key(o)] = cur
	}
	return st
}

// settled waits until the objects (all of the scenario's unless given) have
// stayed unchanged for settleQuiet, and returns their state. Objects held
// by a finalizer settle as "being deleted".
func (s *scenario) settled(objs ...obj) clusterState {
	s.t.Helper()
	var last clusterState
	var since time.Time
	eventually(s.t, gcTimeout, func() error {
		now := s.state(objs...)
		if last == nil || !reflect.DeepEqual(now, last) {
			last, since = now, time.Now()
			return errors.New("the scenario's objects are still changing")
		}
		if time.Since(since) < settleQuiet {
			return errors.New("the scenario's objects have not been quiet for long enough")
		}
		return nil
	})
	return last
}

// requireParity fails unless kube-controller-manager left the scenario's
// objects as kubegcd in enforce mode did.
func (s *scenario) requireParity(enforced, kcm clusterState) {
	s.t.Helper()
	if diff := diffStates(enforced, kcm, "kubegcd", "kcm"); len(diff) > 0 {
		s.t.Errorf("kube-controller-manager ends in another state than kubegcd (enforce):\n  %s\nkubegcd:\n%s\nkcm:\n%s",
			strings.Join(diff, "\n  "), enforced, kcm)
		return
	}
	s.t.Logf("same end state as kubegcd:\n%s", kcm)
}

// invalidNamespaceWarnings lists the scenario's objects that an
// OwnerRefInvalidNamespace Warning event is about (events of cluster-scoped
// objects go to "default").
func (s *scenario) invalidNamespaceWarnings() []string {
	s.t.Helper()
	byUID := map[types.UID]obj{}
	namespaces := map[string]bool{"default": true}
	for _, o := range s.objects {
		byUID[o.uid] = o
		if o.namespace != "" {
			namespaces[o.namespace] = true
		}
	}
	var out []string
	for ns := range namespaces {
		evs, err := kube.CoreV1().Events(ns).List(s.ctx, metav1.ListOptions{FieldSelector: "reason=OwnerRefInvalidNamespace"})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, ev := range evs.Items {
			if o, ok := byUID[ev.InvolvedObject.UID]; ok && ev.Type == corev1.EventTypeWarning && !slices.Contains(out, s.key(o)) {
				out = append(out, s.key(o))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestOwnerGCParityComparison checks that the comparison itself can fail.
func TestOwnerGCParityComparison(t *testing.T) {
	base := clusterState{
		"ConfigMap <ns>/a":            {Exists: true, Owners: []ownerState{{Kind: "ConfigMap", Name: "other", Block: true}}},
		"ConfigMap <ns>/b":            {},
		"ClusterRole /<ns>-held":      {Exists: true, Deleting: true, Finalizers: []string{holdFinalizer}},
		"ConfigMap <ns>-other/owner":  {Exists: true},
		"ConfigMap <ns>/of-old-owner": {Exists: true, Owners: []ownerState{{Kind: "ConfigMap", Name: "owner (uid 00000000-0000-0000-0000-00000000cafe)"}}},
	}
	clone := func(edit func(clusterState)) clusterState {
		c := clusterState{}
		for k, v := range base {
			v.Owners = slices.Clone(v.Owners)
			v.Finalizers = slices.Clone(v.Finalizers)
			c[k] = v
		}
		edit(c)
		return c
	}
	if d := diffStates(base, clone(func(clusterState) {}), "a", "b"); len(d) != 0 {
		t.Fatalf("equal states differ: %v", d)
	}
	for name, edit := range map[string]func(clusterState){
		"kept instead of deleted": func(c clusterState) { c["ConfigMap <ns>/b"] = objState{Exists: true} },
		"deleted instead of kept": func(c clusterState) { c["ConfigMap <ns>-other/owner"] = objState{} },
		"not being deleted": func(c clusterState) {
			v := c["ClusterRole /<ns>-held"]
			v.Deleting = false
			c["ClusterRole /<ns>-held"] = v
		},
		"reference kept": func(c clusterState) {
			v := c["ConfigMap <ns>/a"]
			v.Owners = append(v.Owners, ownerState{"ConfigMap", "gone", false})
			c["ConfigMap <ns>/a"] = v
		},
		"reference unblocked": func(c clusterState) { c["ConfigMap <ns>/a"].Owners[0].Block = false },
		"another owner":       func(c clusterState) { c["ConfigMap <ns>/of-old-owner"].Owners[0].Name = "owner" },
		"finalizer left": func(c clusterState) {
			v := c["ConfigMap <ns>/a"]
			v.Finalizers = []string{"orphan"}
			c["ConfigMap <ns>/a"] = v
		},
		"object missing":     func(c clusterState) { delete(c, "ConfigMap <ns>/b") },
		"object only in one": func(c clusterState) { c["ConfigMap <ns>/c"] = objState{} },
	} {
		if d := diffStates(base, clone(edit), "kubegcd", "kcm"); len(d) != 1 {
			t.Errorf("%s: %d differences %q, want 1", name, len(d), d)
		}
	}
}
