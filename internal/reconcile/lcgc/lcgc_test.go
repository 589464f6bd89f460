package lcgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// harness is a controller on a real database, which mirrors the
// candidates it is given, and a fake clientset, which holds them live,
// with a fixed clock.
type harness struct {
	t      *testing.T
	store  *db.DB
	client *fake.Clientset
	reg    *prometheus.Registry
	logs   *testutil.SyncBuffer
	c      *Controller
	rid    int64
	passes *reconcile.Passes
	// synced is what ResourceSynced answers.
	synced bool
}

// served are the discovery documents of an API serving LeaseCandidates at
// the given versions.
func served(versions ...string) []*metav1.APIResourceList {
	var out []*metav1.APIResourceList
	for _, v := range versions {
		out = append(out, &metav1.APIResourceList{GroupVersion: "coordination.k8s.io/" + v,
			APIResources: []metav1.APIResource{{Name: "leasecandidates", Namespaced: true, Kind: "LeaseCandidate"}}})
	}
	return out
}

func newHarness(t *testing.T, dryRun bool, discovery []*metav1.APIResourceList, live ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, reconcile.ApplierOptions{DryRun: dryRun}, discovery, live...)
}

// newHarnessWith is newHarness with an applier made of opts (its store,
// log, clock and registry filled in).
func newHarnessWith(t *testing.T, opts reconcile.ApplierOptions, discovery []*metav1.APIResourceList, live ...runtime.Object) *harness {
	t.Helper()
	store := dbtest.Open(t)
	logs := &testutil.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.DB, opts.Instance, opts.Logger, opts.Registerer, opts.Now = store.Ledger(), "test", log, prometheus.NewRegistry(), func() time.Time { return now }
	applier, err := reconcile.NewApplier(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: store, client: fake.NewClientset(live...), reg: prometheus.NewRegistry(), logs: logs, synced: true,
		passes: reconcile.NewPasses(nil)}
	h.client.Discovery().(*fakediscovery.FakeDiscovery).Resources = discovery
	h.rid, err = store.Mirror().EnsureResource(context.Background(), db.Resource{Group: "coordination.k8s.io", Version: "v1beta1",
		Resource: "leasecandidates", Kind: "LeaseCandidate", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	h.c, err = New(Options{
		ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log.With("controller", api.ControllerLCGC), Synced: func() bool { return true },
			Registerer: h.reg, Now: func() time.Time { return now }, Passes: h.passes},
		DB: store.LCGC(), Client: h.client, ResourceSynced: func(g, r string) bool { return h.synced && g == group && r == resource },
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// mirror writes candidates into the mirror as the watch would.
func (h *harness) mirror(lcs ...*coordinationv1beta1.LeaseCandidate) {
	h.t.Helper()
	var evs []db.Event
	for _, lc := range lcs {
		c := fromV1beta1(lc)
		evs = append(evs, db.Event{ResourceID: h.rid, Object: &db.Object{UID: c.UID, APIVersion: c.APIVersion, Kind: kind,
			Namespace: c.Namespace, Name: c.Name, ResourceVersion: c.ResourceVersion,
			LeaseCandidate: &db.LeaseCandidate{LeaseName: c.LeaseName, BinaryVersion: "1.36.0", Strategy: "OldestEmulationVersion", RenewTime: c.RenewTime}}})
	}
	if _, err := h.store.Mirror().ApplyEvents(context.Background(), evs); err != nil {
		h.t.Fatal(err)
	}
}

// pass runs one pass and fails the test on an error.
func (h *harness) pass() (undone bool) {
	h.t.Helper()
	undone, err := h.c.Pass(context.Background())
	if err != nil {
		h.t.Fatalf("pass: %v", err)
	}
	return undone
}

// deletes returns the deletes sent for LeaseCandidates, as "version ns/name".
func (h *harness) deletes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == resource {
			out = append(out, a.GetResource().Version+" "+d.GetNamespace()+"/"+d.GetName())
		}
	}
	return out
}

// pending returns the names of what lcgc holds pending.
func (h *harness) pending() []string {
	h.t.Helper()
	rows, _, err := h.store.Decisions().ListPending(context.Background(), db.PendingFilter{Controller: api.ControllerLCGC})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Target.Namespace+"/"+r.Target.Name)
	}
	slices.Sort(out)
	return out
}

// audit waits until lcgc's audit rows are n, and returns them as
// "ns/name outcome", sorted.
func (h *harness) audit(n int) []string {
	h.t.Helper()
	var out []string
	testutil.Eventually(h.t, 10*time.Second, func() error {
		rows, _, err := h.store.Decisions().ListAudit(context.Background(), db.AuditFilter{Controller: api.ControllerLCGC, Limit: 100})
		if err != nil {
			return err
		}
		out = out[:0]
		for _, r := range rows {
			out = append(out, r.Target.Namespace+"/"+r.Target.Name+" "+string(r.Outcome))
		}
		if len(out) != n {
			return fmt.Errorf("%d audit rows, want %d: %v", len(out), n, out)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// lc is a v1beta1 LeaseCandidate of namespace ns renewed at renew (never
// when nil).
func lc(ns, name string, renew *time.Time) *coordinationv1beta1.LeaseCandidate {
	c := &coordinationv1beta1.LeaseCandidate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name),
		ResourceVersion: "7"}, Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "lease", BinaryVersion: "1.36.0",
		EmulationVersion: "1.36.0", Strategy: "OldestEmulationVersion"}}
	if renew != nil {
		t := metav1.NewMicroTime(*renew)
		c.Spec.RenewTime = &t
	}
	return c
}

// renewed is lc as its holder renewed it at renew: a new resourceVersion.
func renewed(c *coordinationv1beta1.LeaseCandidate, renew *time.Time) *coordinationv1beta1.LeaseCandidate {
	c = c.DeepCopy()
	t := metav1.NewMicroTime(*renew)
	c.Spec.RenewTime, c.ResourceVersion = &t, "8"
	return c
}

// TestPassDeletesTheExpired: enforcing, the candidates never renewed or
// renewed over 30 minutes ago are deleted, on their UID and
// resourceVersion; a fresh one is kept, and so is one the mirror shows
// expired that was renewed before the live read; one already gone is
// nothing to do. Every delete is audited.
func TestPassDeletesTheExpired(t *testing.T) {
	old, never, fresh := lc("a", "old", ago(31*time.Minute)), lc("a", "never", nil), lc("b", "fresh", ago(time.Minute))
	stale := lc("b", "renewed-since", ago(time.Hour))
	gone := lc("b", "gone", ago(time.Hour))
	h := newHarness(t, false, served("v1beta1"), old, never, fresh, renewed(stale, ago(time.Second)))
	h.mirror(old, never, fresh, stale, gone)

	if undone := h.pass(); undone {
		t.Error("the pass left work undone")
	}
	if diff := cmp.Diff([]string{"v1beta1 a/never", "v1beta1 a/old"}, h.deletes()); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			p := d.GetDeleteOptions().Preconditions
			want := "uid-a-" + d.GetName()
			if p == nil || p.UID == nil || string(*p.UID) != want || p.ResourceVersion == nil || *p.ResourceVersion != "7" {
				t.Errorf("delete of %s: preconditions %+v, want UID %s and resourceVersion 7", d.GetName(), p, want)
			}
		}
	}
	if diff := cmp.Diff([]string{"a/never applied", "a/old applied"}, h.audit(2)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	if got := h.pending(); len(got) != 0 {
		t.Errorf("pending after the deletes: %v", got)
	}
	if n := testutil.Metric(t, h.reg, "kubegcd_lcgc_deletes_total"); n != 2 {
		t.Errorf("kubegcd_lcgc_deletes_total %v, want 2", n)
	}
	for _, name := range []string{"fresh", "renewed-since"} {
		if _, err := h.client.CoordinationV1beta1().LeaseCandidates("b").Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("b/%s: %v, want it kept", name, err)
		}
	}
}

// TestDryRunRecordsAndDeletesNothing: in dry-run the expired candidates
// are pending and audited once, with outcome dry-run, and none is
// deleted. One renewed meanwhile leaves what is pending at the next pass.
func TestDryRunRecordsAndDeletesNothing(t *testing.T) {
	old, never := lc("a", "old", ago(31*time.Minute)), lc("a", "never", nil)
	h := newHarness(t, true, served("v1beta1"), old, never)
	h.mirror(old, never)
	h.pass()
	h.pass()
	if got := h.deletes(); len(got) != 0 {
		t.Errorf("dry-run deleted %v", got)
	}
	if diff := cmp.Diff([]string{"a/never", "a/old"}, h.pending()); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a/never dry-run", "a/old dry-run"}, h.audit(2)); diff != "" {
		t.Errorf("audit after two passes (-want +got):\n%s", diff)
	}

	// old's holder renews it; the mirror has not seen it yet.
	if _, err := h.client.CoordinationV1beta1().LeaseCandidates("a").Update(context.Background(), renewed(old, ago(0)), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.pass()
	if diff := cmp.Diff([]string{"a/never"}, h.pending()); diff != "" {
		t.Errorf("pending once old is renewed (-want +got):\n%s", diff)
	}
}

// TestDeleteOfOneAlreadyGone: a candidate deleted by someone else (the
// API server's own collector) between the live read and the delete is
// audited as not-found, not as a failure.
func TestDeleteOfOneAlreadyGone(t *testing.T) {
	old := lc("a", "old", ago(time.Hour))
	h := newHarness(t, false, served("v1beta1"), old)
	h.mirror(old)
	h.client.PrependReactor("delete", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: resource}, "old")
	})
	if undone := h.pass(); undone {
		t.Error("a candidate already gone left work undone")
	}
	if diff := cmp.Diff([]string{"a/old " + string(api.OutcomeNotFound)}, h.audit(1)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	if n := testutil.Metric(t, h.reg, "kubegcd_lcgc_deletes_total"); n != 0 {
		t.Errorf("kubegcd_lcgc_deletes_total %v, want 0", n)
	}
	if got := h.pending(); len(got) != 0 {
		t.Errorf("pending: %v", got)
	}
}

// TestConflictIsRetried: a delete refused on its preconditions (renewed
// after the live read) is audited as a conflict, stays pending, and asks
// for a pass soon.
func TestConflictIsRetried(t *testing.T) {
	old := lc("a", "old", ago(time.Hour))
	h := newHarness(t, false, served("v1beta1"), old)
	h.mirror(old)
	h.client.PrependReactor("delete", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: group, Resource: resource}, "old", errors.New("precondition failed"))
	})
	if undone := h.pass(); !undone {
		t.Error("a conflict left nothing undone")
	}
	if diff := cmp.Diff([]string{"a/old " + string(api.OutcomeConflict)}, h.audit(1)); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a/old"}, h.pending()); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	if n := testutil.Metric(t, h.reg, "kubegcd_lcgc_errors_total"); n != 1 {
		t.Errorf("kubegcd_lcgc_errors_total %v, want 1", n)
	}
}

// TestLiveReadFails: a live read that fails other than NotFound deletes
// nothing, keeps what was pending about the candidate, and asks for a
// pass soon.
func TestLiveReadFails(t *testing.T) {
	old := lc("a", "old", ago(time.Hour))
	h := newHarness(t, true, served("v1beta1"), old)
	h.mirror(old)
	h.pass()
	h.client.PrependReactor("get", resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("down")
	})
	if undone := h.pass(); !undone {
		t.Error("a failed read left nothing undone")
	}
	if got := h.deletes(); len(got) != 0 {
		t.Errorf("deleted %v without a live read", got)
	}
	if diff := cmp.Diff([]string{"a/old"}, h.pending()); diff != "" {
		t.Errorf("pending after a failed read (-want +got):\n%s", diff)
	}
	if n := testutil.Metric(t, h.reg, "kubegcd_lcgc_errors_total"); n != 1 {
		t.Errorf("kubegcd_lcgc_errors_total %v, want 1", n)
	}
}

// TestV1alpha2: where only coordination.k8s.io/v1alpha2 serves
// LeaseCandidates, the live read and the delete speak it.
func TestV1alpha2(t *testing.T) {
	old := lc("a", "old", ago(time.Hour))
	alpha := &coordinationv1alpha2.LeaseCandidate{ObjectMeta: old.ObjectMeta, Spec: coordinationv1alpha2.LeaseCandidateSpec{
		LeaseName: "lease", BinaryVersion: "1.36.0", EmulationVersion: "1.36.0", Strategy: "OldestEmulationVersion", RenewTime: old.Spec.RenewTime}}
	h := newHarness(t, false, served("v1alpha2"), alpha)
	h.mirror(old)
	h.pass()
	if diff := cmp.Diff([]string{"v1alpha2 a/old"}, h.deletes()); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	rows, _, err := h.store.Decisions().ListPending(context.Background(), db.PendingFilter{Controller: api.ControllerLCGC})
	if err != nil || len(rows) != 0 {
		t.Errorf("pending %v, %v", rows, err)
	}
}

// TestIdleWhenNotServed: on an API without LeaseCandidates a pass reads
// neither the mirror nor the cluster beyond discovery, leaves nothing
// undone, and logs nothing above debug.
func TestIdleWhenNotServed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		discovery []*metav1.APIResourceList
	}{
		{"no coordination.k8s.io/v1beta1 or v1alpha2", nil},
		{"the group versions without leasecandidates", []*metav1.APIResourceList{
			{GroupVersion: "coordination.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "leases"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, false, tc.discovery)
			h.mirror(lc("a", "old", ago(time.Hour))) // a stale mirror is not read
			h.synced = false
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- h.c.Run(ctx) }()
			testutil.WaitFor(t, 10*time.Second, "a pass", func() bool {
				st := h.passes.Status()
				return len(st) == 1 && !st[0].LastPass.IsZero() && !st[0].Skipping
			})
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			for _, a := range h.client.Actions() {
				if a.GetResource().Resource == resource {
					t.Errorf("an action on LeaseCandidates: %v", a)
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
				if !strings.Contains(line, "level=DEBUG") {
					t.Errorf("a log line above debug: %s", line)
				}
			}
			if !strings.Contains(h.logs.String(), "not served") {
				t.Errorf("the debug log does not say LeaseCandidates are not served:\n%s", h.logs.String())
			}
		})
	}
}

// TestSkippedWhileTheMirrorIsNotLive: served, but the mirror of
// LeaseCandidates is not live: the pass is skipped, and says so.
func TestSkippedWhileTheMirrorIsNotLive(t *testing.T) {
	old := lc("a", "old", ago(time.Hour))
	h := newHarness(t, false, served("v1beta1"), old)
	h.mirror(old)
	h.synced = false
	if undone := h.pass(); !undone {
		t.Error("a skipped pass left nothing undone")
	}
	if got := h.deletes(); len(got) != 0 {
		t.Errorf("deleted %v from a mirror not live", got)
	}
	if !strings.Contains(h.logs.String(), "skipping passes") {
		t.Errorf("the skip is not logged:\n%s", h.logs.String())
	}
}

// TestWritesGoThroughTheApplier: lcgc's deletes obey the applier. The
// blast-radius cap holds back what is beyond it, pending with its reason;
// an instance that may not write (it lost its Lease) sends none. Either
// way the pass asks to be made again soon.
func TestWritesGoThroughTheApplier(t *testing.T) {
	old1, old2 := lc("a", "old-1", ago(time.Hour)), lc("a", "old-2", ago(time.Hour))
	for _, tc := range []struct {
		name        string
		opts        reconcile.ApplierOptions
		wantDeletes []string
		wantPending []string
	}{
		{"the blast-radius cap", reconcile.ApplierOptions{MaxDeletionsPerMinute: 1},
			[]string{"v1beta1 a/old-1"}, []string{"a/old-2"}},
		{"not the leader", reconcile.ApplierOptions{MayWrite: func() error { return errors.New("not the leader") }},
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, tc.opts, served("v1beta1"), old1, old2)
			h.mirror(old1, old2)
			if undone := h.pass(); !undone {
				t.Error("the pass left nothing undone")
			}
			if diff := cmp.Diff(tc.wantDeletes, h.deletes()); diff != "" {
				t.Errorf("deletes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPending, h.pending()); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
		})
	}
}
