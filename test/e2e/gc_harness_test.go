package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/kubegcd/kubegcd/internal/db"
)

// gcArgs make the controllers quick for tests.
var gcArgs = []string{"--resync-period=1s", "--kube-api-qps=500", "--kube-api-burst=1000", "--discovery-interval=2s"}

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

// scenario is one ownership-GC situation run against a kubegcd in enforce
// or dry-run mode, in a namespace of its own.
type scenario struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	dry     bool
	d       *daemon
	objects []obj
	// snapshot holds resourceVersions taken after the test's own writes; in
	// dry-run the cluster must still match it at the end.
	snapshot map[types.UID]string
}

type auditKey struct{ Rule, Action, Kind, Name string }

// bothModes runs fn in enforce mode, then in dry-run on a fresh namespace,
// and requires dry-run to record the same decisions, marked dry-run, while
// leaving the cluster as it was. These tests enforce, so they must not run
// in parallel with others (no t.Parallel: they run before the parallel
// tests, one at a time).
func bothModes(t *testing.T, name string, fn func(s *scenario)) {
	var enforced map[auditKey]bool
	for _, dry := range []bool{false, true} {
		mode := "enforce"
		if dry {
			mode = "dry"
		}
		t.Run(mode, func(t *testing.T) {
			s := newScenario(t, name+"-"+mode, dry)
			fn(s)
			if !dry {
				enforced = s.decisions(false)
				if len(enforced) == 0 {
					t.Fatal("enforce mode audited no decision")
				}
				t.Logf("decisions: %v", keys(enforced))
				return
			}
			if enforced == nil {
				t.Fatal("enforce mode did not run")
			}
			// Dry-run reaches the same decisions, then stays quiet.
			eventually(t, gcTimeout, func() error {
				if got := s.decisions(true); !mapsEqual(got, enforced) {
					return fmt.Errorf("dry-run decisions %v, enforce %v", keys(got), keys(enforced))
				}
				return nil
			})
			s.stable(3*time.Second, func() error {
				if got := s.decisions(true); !mapsEqual(got, enforced) {
					return fmt.Errorf("dry-run decisions changed to %v", keys(got))
				}
				return nil
			})
			s.unchanged()
		})
	}
}

func newScenario(t *testing.T, ns string, dry bool, extraArgs ...string) *scenario {
	t.Helper()
	s := &scenario{t: t, ctx: context.Background(), ns: newNamespace(t, ns), dry: dry}
	s.d = startDaemon(t, "", append(append([]string{fmt.Sprintf("--dry-run=%v", dry)}, gcArgs...), extraArgs...)...)
	s.d.waitReady(t, 60*time.Second)
	return s
}

func mapsEqual[K comparable](a, b map[K]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
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
	if namespace == "" {
		namespace = s.ns
	} else if namespace == "-" {
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

// waitGone waits until every object is deleted (enforce only).
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
		if e.Outcome == db.OutcomeConflict || e.Outcome == db.OutcomeFailed {
			continue
		}
		// Cluster-scoped objects carry the namespace in their names.
		out[auditKey{e.Rule, e.Action, e.Target.Kind, strings.TrimPrefix(e.Target.Name, s.ns)}] = true
	}
	return out
}

// audit lists the ownergc audit rows about the scenario's objects.
func (s *scenario) audit() []db.AuditEntry {
	s.t.Helper()
	mine := map[string]bool{}
	for _, o := range s.objects {
		mine[string(o.uid)] = true
	}
	var page struct {
		Items []db.AuditEntry
	}
	s.d.getJSON(s.t, "/audit?controller=ownergc&limit=1000", 200, &page)
	var out []db.AuditEntry
	for _, e := range page.Items {
		if mine[e.Target.UID] {
			out = append(out, e)
		}
	}
	return out
}

// auditFor lists the rows about one object.
func (s *scenario) auditFor(o obj) []db.AuditEntry {
	s.t.Helper()
	var page struct{ Items []db.AuditEntry }
	s.d.getJSON(s.t, "/audit?uid="+url.QueryEscape(string(o.uid)), 200, &page)
	return page.Items
}

// restart stops kubegcd, runs meanwhile, and starts it again on the same
// database.
func (s *scenario) restart(meanwhile func()) {
	s.t.Helper()
	if code := s.d.stop(); code != 0 {
		s.t.Fatalf("kubegcd exited with %d", code)
	}
	meanwhile()
	s.d = startDaemon(s.t, s.d.dbPath, append([]string{fmt.Sprintf("--dry-run=%v", s.dry)}, gcArgs...)...)
	s.d.waitReady(s.t, 60*time.Second)
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
