package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/api"
)

// gcArgs run the ownership GC alone (PodGC and TTL act on the whole
// cluster; they have a control plane of their own in test/e2enodes) and make
// it quick for tests.
var gcArgs = []string{"--controllers=ownergc", "--resync-period=1s", "--kube-api-qps=500", "--kube-api-burst=1000", "--discovery-interval=2s"}

// gcTimeout bounds how long one collection step may take.
const gcTimeout = 20 * time.Second

// obj is an object a scenario made.
type obj struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespace  string
	name       string
	uid        types.UID
	apiVersion string
}

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	clusterRBs = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

var kinds = map[schema.GroupVersionResource]string{configMaps: "ConfigMap", secrets: "Secret", widgetGVR: "Widget", clusterRBs: "ClusterRole"}

// ref is an ownerReference to o.
func (o obj) ref(block bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: o.apiVersion, Kind: o.kind, Name: o.name, UID: o.uid}
	if block {
		r.BlockOwnerDeletion = ptr.To(true)
	}
	return r
}

// gcMode says who collects the garbage in a scenario.
type gcMode string

const (
	// modeEnforce: kubegcd decides and acts.
	modeEnforce gcMode = "enforce"
	// modeDry: kubegcd decides and only records; the cluster stays as it was.
	modeDry gcMode = "dry"
	// modeKCM: no kubegcd; upstream kube-controller-manager's garbage
	// collector acts, for parity with enforce mode.
	modeKCM gcMode = "kcm"
)

// scenario is one ownership-GC situation run against a kubegcd in enforce
// or dry-run mode, or against kube-controller-manager's garbage collector,
// in a namespace of its own.
type scenario struct {
	t    *testing.T
	ctx  context.Context
	ns   string
	mode gcMode
	// dry is mode == modeDry. Scenario bodies branch on it, so kcm mode
	// takes the enforce path, whose waits double as assertions.
	dry bool
	// d is the kubegcd deciding, nil in kcm mode.
	d *daemon
	// kcm is the running kube-controller-manager in kcm mode.
	kcm     *controllerManager
	objects []obj
	// snapshot holds resourceVersions taken after the test's own writes; in
	// dry-run the cluster must still match it at the end.
	snapshot map[types.UID]string
}

// kubegcd reports whether a kubegcd makes the decisions (so that its audit
// can be checked): false in kcm mode.
func (s *scenario) kubegcd() bool { return s.d != nil }

type auditKey struct {
	Rule       string
	Action     api.Action
	Kind, Name string
}

// eachMode runs fn in enforce mode, then in dry-run, then with
// kube-controller-manager as the garbage collector (kcm), each on a fresh
// namespace. Dry-run must record the same decisions as enforce, marked
// dry-run, while leaving the cluster as it was; kcm must leave the
// scenario's objects in the same state as enforce did (see parity_test.go).
// These tests enforce, so they must not run in parallel with others (no
// t.Parallel: they run before the parallel tests, one at a time); that also
// keeps kube-controller-manager from ever running beside a kubegcd.
func eachMode(t *testing.T, name string, fn func(s *scenario)) {
	var enforced map[auditKey]bool
	var enforcedState clusterState
	for _, mode := range []gcMode{modeEnforce, modeDry, modeKCM} {
		t.Run(string(mode), func(t *testing.T) {
			s := newScenarioIn(t, name+"-"+string(mode), mode)
			fn(s)
			switch mode {
			case modeEnforce:
				// Audit rows of applied writes are committed just after the
				// writes: wait until there are some and they have not changed
				// for a second.
				var since time.Time
				eventually(t, gcTimeout, func() error {
					got := s.decisions(false)
					switch {
					case len(got) == 0:
						return errors.New("enforce mode audited no decision")
					case !maps.Equal(got, enforced):
						enforced, since = got, time.Now()
						return errors.New("enforce decisions settling")
					case time.Since(since) < time.Second:
						return errors.New("enforce decisions settling")
					}
					return nil
				})
				t.Logf("decisions: %v", keys(enforced))
				enforcedState = s.settled()
				t.Logf("end state:\n%s", enforcedState)
			case modeKCM:
				got := s.settled()
				if enforcedState == nil {
					t.Fatalf("enforce mode did not run to the end: nothing to compare with; kcm ends in:\n%s", got)
				}
				s.requireParity(enforcedState, got)
			case modeDry:
				if enforced == nil {
					t.Fatal("enforce mode did not run")
				}
				// Dry-run reaches the same decisions, then stays quiet.
				eventually(t, gcTimeout, func() error {
					if got := s.decisions(true); !maps.Equal(got, enforced) {
						return fmt.Errorf("dry-run decisions %v, enforce %v", keys(got), keys(enforced))
					}
					return nil
				})
				s.stable(3*time.Second, func() error {
					if got := s.decisions(true); !maps.Equal(got, enforced) {
						return fmt.Errorf("dry-run decisions changed to %v", keys(got))
					}
					return nil
				})
				s.unchanged()
			}
		})
	}
}

func newScenario(t *testing.T, ns string, dry bool, extraArgs ...string) *scenario {
	t.Helper()
	mode := modeEnforce
	if dry {
		mode = modeDry
	}
	return newScenarioIn(t, ns, mode, extraArgs...)
}

// newScenarioIn makes a scenario in a new namespace ns with its garbage
// collector running and ready: a kubegcd (given extraArgs) in enforce or dry
// mode, or kube-controller-manager in kcm mode.
func newScenarioIn(t *testing.T, ns string, mode gcMode, extraArgs ...string) *scenario {
	t.Helper()
	s := &scenario{t: t, ctx: context.Background(), ns: namespaces.New(t, ns), mode: mode, dry: mode == modeDry}
	s.startCollector(extraArgs...)
	return s
}

// startCollector starts the scenario's garbage collector and waits until it
// is ready.
func (s *scenario) startCollector(extraArgs ...string) {
	s.t.Helper()
	if s.mode == modeKCM {
		s.kcm = startControllerManager(s.t)
		s.kcm.waitCollecting(s)
		return
	}
	s.d = daemons.Start(s.t, "", append(append([]string{fmt.Sprintf("--dry-run=%v", s.dry)}, gcArgs...), extraArgs...)...)
	s.d.WaitReady(s.t, 60*time.Second)
}

func keys[K comparable](m map[K]bool) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// stable requires fn to keep holding for d.
func (s *scenario) stable(d time.Duration, fn func() error) {
	s.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := fn(); err != nil {
			s.t.Fatal(err)
		}
	}
}

// create makes an object of resource gvr in the scenario's namespace (or
// cluster-scoped when namespace is "-") with the given owners and finalizers.
func (s *scenario) create(gvr schema.GroupVersionResource, namespace, name string, finalizers []string, owners ...metav1.OwnerReference) obj {
	s.t.Helper()
	switch namespace {
	case "":
		namespace = s.ns
	case "-":
		namespace = ""
	}
	apiVersion := gvr.GroupVersion().String()
	kind := kinds[gvr]
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetFinalizers(finalizers)
	u.SetOwnerReferences(owners)
	created, err := dyn.Resource(gvr).Namespace(namespace).Create(s.ctx, u, metav1.CreateOptions{})
	if err != nil {
		s.t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	o := obj{gvr: gvr, kind: kind, namespace: namespace, name: name, uid: created.GetUID(), apiVersion: apiVersion}
	s.objects = append(s.objects, o)
	if namespace == "" {
		s.t.Cleanup(func() {
			_ = dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	return o
}

func (s *scenario) cm(name string, owners ...metav1.OwnerReference) obj {
	return s.create(configMaps, "", name, nil, owners...)
}

// get returns the live object, or nil once it is gone (or replaced).
func (s *scenario) get(o obj) *unstructured.Unstructured {
	s.t.Helper()
	got, err := dyn.Resource(o.gvr).Namespace(o.namespace).Get(s.ctx, o.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		s.t.Fatal(err)
	}
	if got.GetUID() != o.uid {
		return nil
	}
	return got
}

func (s *scenario) delete(o obj, policy metav1.DeletionPropagation) {
	s.t.Helper()
	if err := dyn.Resource(o.gvr).Namespace(o.namespace).Delete(s.ctx, o.name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		s.t.Fatalf("deleting %s: %v", o.name, err)
	}
}

// removeFinalizers lets an object held by test finalizers go.
func (s *scenario) removeFinalizers(o obj) {
	s.t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := dyn.Resource(o.gvr).Namespace(o.namespace).Patch(s.ctx, o.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		s.t.Fatal(err)
	}
}

// waitGone waits until every object is deleted (not in dry-run).
func (s *scenario) waitGone(objs ...obj) {
	s.t.Helper()
	eventually(s.t, gcTimeout, func() error {
		for _, o := range objs {
			if s.get(o) != nil {
				return fmt.Errorf("%s %s still exists", o.kind, o.name)
			}
		}
		return nil
	})
}

// waitDeleting waits until every object has a deletionTimestamp.
func (s *scenario) waitDeleting(objs ...obj) {
	s.t.Helper()
	eventually(s.t, gcTimeout, func() error {
		for _, o := range objs {
			got := s.get(o)
			if got == nil || got.GetDeletionTimestamp() == nil {
				return fmt.Errorf("%s %s is not being deleted", o.kind, o.name)
			}
		}
		return nil
	})
}

// exists requires o to be there and not being deleted.
func (s *scenario) exists(o obj) *unstructured.Unstructured {
	s.t.Helper()
	got := s.get(o)
	if got == nil {
		s.t.Fatalf("%s %s was deleted", o.kind, o.name)
	}
	if got.GetDeletionTimestamp() != nil {
		s.t.Fatalf("%s %s is being deleted", o.kind, o.name)
	}
	return got
}

// snap records the resourceVersion of every object the scenario made; call
// it after the test's own writes.
func (s *scenario) snap() {
	s.snapshot = map[types.UID]string{}
	for _, o := range s.objects {
		s.snapshot[o.uid] = s.rv(o)
	}
}

func (s *scenario) rv(o obj) string {
	if got := s.get(o); got != nil {
		return got.GetResourceVersion()
	}
	return "gone"
}

// unchanged requires, in dry-run, that nothing was written.
func (s *scenario) unchanged() {
	s.t.Helper()
	if s.snapshot == nil {
		s.t.Fatal("scenario took no snapshot")
	}
	for _, o := range s.objects {
		if now := s.rv(o); now != s.snapshot[o.uid] {
			s.t.Errorf("dry-run changed %s %s: resourceVersion %s → %s", o.kind, o.name, s.snapshot[o.uid], now)
		}
	}
}

// decisions returns the ownergc decisions audited for the scenario's
// objects, as applied in enforce mode or recorded in dry-run.
func (s *scenario) decisions(dry bool) map[auditKey]bool {
	s.t.Helper()
	out := map[auditKey]bool{}
	for _, e := range s.audit() {
		if e.DryRun != dry {
			s.t.Fatalf("audit row with dryRun=%v in a dry-run=%v run: %+v", e.DryRun, dry, e)
		}
		if e.Outcome == api.OutcomeConflict || e.Outcome == api.OutcomeFailed {
			continue
		}
		// Cluster-scoped objects carry the namespace in their names.
		out[auditKey{e.Rule, e.Action, e.Target.Kind, strings.TrimPrefix(e.Target.Name, s.ns)}] = true
	}
	return out
}

// audit lists the ownergc audit rows about the scenario's objects.
func (s *scenario) audit() []api.AuditEntry {
	s.t.Helper()
	s.needKubegcd()
	mine := map[string]bool{}
	for _, o := range s.objects {
		mine[string(o.uid)] = true
	}
	var page struct {
		Items []api.AuditEntry
	}
	s.d.GetJSON(s.t, "/audit?controller=ownergc&limit=1000", 200, &page)
	var out []api.AuditEntry
	for _, e := range page.Items {
		if mine[e.Target.UID] {
			out = append(out, e)
		}
	}
	return out
}

// auditFor lists the rows about one object.
func (s *scenario) auditFor(o obj) []api.AuditEntry {
	s.t.Helper()
	s.needKubegcd()
	var page struct{ Items []api.AuditEntry }
	s.d.GetJSON(s.t, "/audit?uid="+url.QueryEscape(string(o.uid)), 200, &page)
	return page.Items
}

// needKubegcd fails a kcm-mode scenario that asks for kubegcd's audit.
func (s *scenario) needKubegcd() {
	s.t.Helper()
	if !s.kubegcd() {
		s.t.Fatal("no kubegcd runs in kcm mode: guard kubegcd-only checks with s.kubegcd()")
	}
}

// restart stops the garbage collector (kubegcd, or kube-controller-manager
// in kcm mode), runs meanwhile, and starts it again (kubegcd on the same
// database).
func (s *scenario) restart(meanwhile func()) {
	s.t.Helper()
	if s.mode == modeKCM {
		s.kcm.stop()
		meanwhile()
		s.kcm = startControllerManager(s.t)
		s.kcm.waitCollecting(s)
		return
	}
	if code := s.d.Stop(); code != 0 {
		s.t.Fatalf("kubegcd exited with %d", code)
	}
	meanwhile()
	s.d = daemons.Start(s.t, s.d.DBPath, append([]string{fmt.Sprintf("--dry-run=%v", s.dry)}, gcArgs...)...)
	s.d.WaitReady(s.t, 60*time.Second)
}

// patchOwners replaces an object's ownerReferences.
func (s *scenario) patchOwners(o obj, owners ...metav1.OwnerReference) {
	s.t.Helper()
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": owners}})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := dyn.Resource(o.gvr).Namespace(o.namespace).Patch(s.ctx, o.name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		s.t.Fatal(err)
	}
}
