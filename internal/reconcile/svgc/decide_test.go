package svgc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

var leasesGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func TestLeaseGone(t *testing.T) {
	for _, c := range []struct {
		name     string
		err      error
		wantGone bool
		wantErr  bool
	}{
		{"found: re-created meanwhile, its entries stay", nil, false, false},
		{"not found: gone", apierrors.NewNotFound(leasesGR, "kube-apiserver-a"), true, false},
		{"a timeout is retried, not taken for absence", apierrors.NewTimeoutError("slow", 1), false, true},
		{"forbidden is retried, not taken for absence", apierrors.NewForbidden(leasesGR, "kube-apiserver-a", errors.New("rbac")), false, true},
		{"a connection error is retried", context.DeadlineExceeded, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gone, err := leaseGone("kube-apiserver-a", c.err)
			if gone != c.wantGone || (err != nil) != c.wantErr {
				t.Fatalf("leaseGone = %v, %v; want %v, error %v", gone, err, c.wantGone, c.wantErr)
			}
			if err != nil && !errors.Is(err, c.err) {
				t.Errorf("the error %v does not wrap %v", err, c.err)
			}
		})
	}
}

// lease is an identity Lease as a live GET returns it: named after its
// server, in kube-system, held by that server, renewed at renewed for
// 3600 s.
func lease(server string, renewed time.Time, labels map[string]string) *coordinationv1.Lease {
	holder, duration := server, int32(3600)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: identityLeasesNS, Name: server, UID: types.UID("uid-" + server), Labels: labels},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration,
			RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

var identity = map[string]string{identityLabel: identityValue}

func TestIsIdentityLease(t *testing.T) {
	for _, c := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"not found", nil, false},
		{"labelled kube-apiserver", lease("kube-apiserver-a", t1, identity), true},
		{"labelled, expired long ago: still there, so it counts", lease("kube-apiserver-a", t0.AddDate(-1, 0, 0), identity), true},
		{"named like one, unlabelled", lease("kube-apiserver-a", t1, nil), false},
		{"the label with another component", lease("kube-apiserver-a", t1, map[string]string{identityLabel: "kube-controller-manager"}), false},
		{"another label only", lease("kube-apiserver-a", t1, map[string]string{"app": "kube-apiserver"}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := isIdentityLease(c.lease); got != c.want {
				t.Errorf("isIdentityLease = %v, want %v", got, c.want)
			}
		})
	}
}

// storageVersion has one entry per server, each encoding at the version
// given after the server's name ("a=apps/v1").
func storageVersion(entries ...string) *v1alpha1.StorageVersion {
	sv := &v1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: "apps.deployments", UID: "uid-sv", ResourceVersion: "5", Generation: 2}}
	for _, e := range entries {
		server, version, _ := strings.Cut(e, "=")
		sv.Status.StorageVersions = append(sv.Status.StorageVersions,
			v1alpha1.ServerStorageVersion{APIServerID: server, EncodingVersion: version, DecodableVersions: []string{version}})
	}
	return sv
}

func withStatus(sv *v1alpha1.StorageVersion, common string, cond v1alpha1.ConditionStatus, ltt time.Time) *v1alpha1.StorageVersion {
	sv = sv.DeepCopy()
	if common != "" {
		sv.Status.CommonEncodingVersion = &common
	}
	reason, message := "CommonEncodingVersionUnset", "Common encoding version unset"
	if cond == v1alpha1.ConditionTrue {
		reason, message = "CommonEncodingVersionSet", "Common encoding version set"
	}
	sv.Status.Conditions = []v1alpha1.StorageVersionCondition{{Type: v1alpha1.AllEncodingVersionsEqual, Status: cond,
		LastTransitionTime: metav1.NewTime(ltt), ObservedGeneration: sv.Generation, Reason: reason, Message: message}}
	return sv
}

const reasonPrefix = "entries of API servers without a kube-apiserver identity lease in kube-system (looked up live): "

// TestDecideStorageVersion covers KG-06-01 and KG-06-02 with the Leases
// present, expired, unlabelled and absent, a StorageVersion with several
// servers of which some or all are stale, and one already being deleted.
func TestDecideStorageVersion(t *testing.T) {
	live := func(servers ...string) map[string]*coordinationv1.Lease {
		m := map[string]*coordinationv1.Lease{}
		for _, s := range servers {
			m[s] = lease(s, t1, identity)
		}
		return m
	}
	deleting := storageVersion("a=apps/v1", "b=apps/v1")
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, c := range []struct {
		name   string
		sv     *v1alpha1.StorageVersion
		leases map[string]*coordinationv1.Lease
		// wantRule is "" when nothing is to be done.
		wantRule      string
		wantAction    api.Action
		wantRemoved   []string
		wantReasonEnd string
		// wantFacts lists the facts beyond removedServers.
		wantFacts map[string]any
		// wantUpdate is the status written, nil for a delete.
		wantUpdate *v1alpha1.StorageVersion
	}{
		{name: "no entries: nothing to do", sv: storageVersion(), leases: nil},
		{name: "every server has its Lease: nothing to do", sv: storageVersion("a=apps/v1", "b=apps/v1"), leases: live("a", "b")},
		{name: "an expired Lease still there keeps its entries", sv: storageVersion("a=apps/v1"),
			leases: map[string]*coordinationv1.Lease{"a": lease("a", t0.AddDate(-1, 0, 0), identity)}},
		{name: "one server of two without a Lease: its entry goes (KG-06-01)", sv: storageVersion("a=apps/v1", "b=apps/v1"),
			leases:   map[string]*coordinationv1.Lease{"a": lease("a", t1, identity), "b": nil},
			wantRule: "KG-06-01", wantAction: "remove-entries", wantRemoved: []string{"b"}, wantReasonEnd: "[b]",
			wantFacts:  map[string]any{"keptEntries": 1, "commonEncodingVersion": "apps/v1"},
			wantUpdate: withStatus(storageVersion("a=apps/v1"), "apps/v1", v1alpha1.ConditionTrue, t1)},
		{name: "a server missing from the lookups counts as without a Lease", sv: storageVersion("a=apps/v1", "b=apps/v1"),
			leases:   live("a"),
			wantRule: "KG-06-01", wantAction: "remove-entries", wantRemoved: []string{"b"}, wantReasonEnd: "[b]",
			wantFacts:  map[string]any{"keptEntries": 1, "commonEncodingVersion": "apps/v1"},
			wantUpdate: withStatus(storageVersion("a=apps/v1"), "apps/v1", v1alpha1.ConditionTrue, t1)},
		{name: "an unlabelled Lease is no identity Lease", sv: storageVersion("a=apps/v1", "b=apps/v1"),
			leases:   map[string]*coordinationv1.Lease{"a": lease("a", t1, identity), "b": lease("b", t1, nil)},
			wantRule: "KG-06-01", wantAction: "remove-entries", wantRemoved: []string{"b"}, wantReasonEnd: "[b]",
			wantFacts:  map[string]any{"keptEntries": 1, "commonEncodingVersion": "apps/v1"},
			wantUpdate: withStatus(storageVersion("a=apps/v1"), "apps/v1", v1alpha1.ConditionTrue, t1)},
		{name: "several servers, two stale, in entry order; the kept ones disagree", sv: storageVersion("a=apps/v1", "b=apps/v1", "c=apps/v2", "d=apps/v1"),
			leases:   map[string]*coordinationv1.Lease{"a": lease("a", t1, identity), "c": lease("c", t1, identity)},
			wantRule: "KG-06-01", wantAction: "remove-entries", wantRemoved: []string{"b", "d"}, wantReasonEnd: "[b d]",
			wantFacts:  map[string]any{"keptEntries": 2},
			wantUpdate: withStatus(storageVersion("a=apps/v1", "c=apps/v2"), "", v1alpha1.ConditionFalse, t1)},
		{name: "the stale server was the one that disagreed: the common version is set", sv: storageVersion("a=apps/v1", "b=apps/v2"),
			leases:   live("a"),
			wantRule: "KG-06-01", wantAction: "remove-entries", wantRemoved: []string{"b"}, wantReasonEnd: "[b]",
			wantFacts:  map[string]any{"keptEntries": 1, "commonEncodingVersion": "apps/v1"},
			wantUpdate: withStatus(storageVersion("a=apps/v1"), "apps/v1", v1alpha1.ConditionTrue, t1)},
		{name: "every server stale: the StorageVersion is deleted (KG-06-02)", sv: storageVersion("a=apps/v1", "b=apps/v1"),
			leases:   map[string]*coordinationv1.Lease{"a": nil, "b": lease("b", t1, nil)},
			wantRule: "KG-06-02", wantAction: "delete", wantRemoved: []string{"a", "b"},
			wantReasonEnd: "[a b]; none is left, so the StorageVersion is deleted",
			wantFacts:     map[string]any{"keptEntries": 0}},
		{name: "already being deleted: decided as any other, as upstream does", sv: deleting,
			leases:   nil,
			wantRule: "KG-06-02", wantAction: "delete", wantRemoved: []string{"a", "b"},
			wantReasonEnd: "[a b]; none is left, so the StorageVersion is deleted",
			wantFacts:     map[string]any{"keptEntries": 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.sv.DeepCopy()
			act, ok := decideStorageVersion(c.sv, c.leases, t1)
			if diff := cmp.Diff(before, c.sv); diff != "" {
				t.Errorf("the StorageVersion given was changed (-before +after):\n%s", diff)
			}
			if ok != (c.wantRule != "") {
				t.Fatalf("decided %v (%+v), want %v", ok, act.decision, c.wantRule != "")
			}
			if !ok {
				return
			}
			facts := map[string]any{"removedServers": c.wantRemoved}
			for k, v := range c.wantFacts {
				facts[k] = v
			}
			want := reconcile.Decision{Controller: api.ControllerSVGC, Rule: c.wantRule, Action: c.wantAction,
				Target:          api.Target{APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion", Name: c.sv.Name, UID: "uid-sv"},
				ResourceVersion: "5", Reason: reasonPrefix + c.wantReasonEnd, Facts: facts, DecidedAt: t1}
			if diff := cmp.Diff(want, act.decision); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			var wantUpdate *v1alpha1.StorageVersion
			if c.wantUpdate != nil {
				wantUpdate = c.sv.DeepCopy()
				wantUpdate.Status = c.wantUpdate.Status
			}
			if diff := cmp.Diff(wantUpdate, act.update); diff != "" {
				t.Errorf("status written (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideStorageVersionKeepsOtherConditions: the entries' removal
// touches only AllEncodingVersionsEqual, and keeps its transition time
// while its status holds.
func TestDecideStorageVersionKeepsOtherConditions(t *testing.T) {
	sv := withStatus(storageVersion("a=apps/v1", "b=apps/v1"), "apps/v1", v1alpha1.ConditionTrue, t0)
	other := v1alpha1.StorageVersionCondition{Type: "Other", Status: v1alpha1.ConditionUnknown, LastTransitionTime: metav1.NewTime(t0), Reason: "R"}
	sv.Status.Conditions = append([]v1alpha1.StorageVersionCondition{other}, sv.Status.Conditions...)
	act, ok := decideStorageVersion(sv, map[string]*coordinationv1.Lease{"a": lease("a", t1, identity)}, t1)
	if !ok || act.update == nil {
		t.Fatalf("no update: %+v", act)
	}
	want := []v1alpha1.StorageVersionCondition{other, {Type: v1alpha1.AllEncodingVersionsEqual, Status: v1alpha1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t0), ObservedGeneration: 2, Reason: "CommonEncodingVersionSet", Message: "Common encoding version set"}}
	if diff := cmp.Diff(want, act.update.Status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

func entries(versions ...string) []v1alpha1.ServerStorageVersion {
	var out []v1alpha1.ServerStorageVersion
	for i, v := range versions {
		out = append(out, v1alpha1.ServerStorageVersion{APIServerID: string(rune('a' + i)), EncodingVersion: v})
	}
	return out
}

func TestSetCommonEncodingVersion(t *testing.T) {
	v1, v2 := "g/v1", "g/v2"
	for _, c := range []struct {
		name       string
		entries    []v1alpha1.ServerStorageVersion
		old        *string
		oldCond    *v1alpha1.StorageVersionCondition
		wantCommon *string
		wantStatus v1alpha1.ConditionStatus
		wantReason string
		wantLTT    time.Time
	}{
		{"all agree", entries(v1, v1), nil, nil, &v1, v1alpha1.ConditionTrue, "CommonEncodingVersionSet", t1},
		{"disagree", entries(v1, v2), nil, nil, nil, v1alpha1.ConditionFalse, "CommonEncodingVersionUnset", t1},
		{"none", nil, &v1, nil, nil, v1alpha1.ConditionFalse, "CommonEncodingVersionUnset", t1},
		{"same status keeps its transition time", entries(v1), &v1,
			&v1alpha1.StorageVersionCondition{Type: v1alpha1.AllEncodingVersionsEqual, Status: v1alpha1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			&v1, v1alpha1.ConditionTrue, "CommonEncodingVersionSet", t0},
		{"a new common version is a transition", entries(v2), &v1,
			&v1alpha1.StorageVersionCondition{Type: v1alpha1.AllEncodingVersionsEqual, Status: v1alpha1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			&v2, v1alpha1.ConditionTrue, "CommonEncodingVersionSet", t1},
		{"set to unset is a transition", entries(v1, v2), &v1,
			&v1alpha1.StorageVersionCondition{Type: v1alpha1.AllEncodingVersionsEqual, Status: v1alpha1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			nil, v1alpha1.ConditionFalse, "CommonEncodingVersionUnset", t1},
		{"unset to set is a transition", entries(v1), nil,
			&v1alpha1.StorageVersionCondition{Type: v1alpha1.AllEncodingVersionsEqual, Status: v1alpha1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0)},
			&v1, v1alpha1.ConditionTrue, "CommonEncodingVersionSet", t1},
	} {
		t.Run(c.name, func(t *testing.T) {
			sv := &v1alpha1.StorageVersion{Status: v1alpha1.StorageVersionStatus{StorageVersions: c.entries, CommonEncodingVersion: c.old}}
			if c.oldCond != nil {
				sv.Status.Conditions = []v1alpha1.StorageVersionCondition{*c.oldCond}
			}
			SetCommonEncodingVersion(sv, t1)
			got := sv.Status.CommonEncodingVersion
			if (got == nil) != (c.wantCommon == nil) || got != nil && *got != *c.wantCommon {
				t.Errorf("common %v, want %v", got, c.wantCommon)
			}
			if len(sv.Status.Conditions) != 1 {
				t.Fatalf("conditions %+v", sv.Status.Conditions)
			}
			cond := sv.Status.Conditions[0]
			if cond.Status != c.wantStatus || cond.Reason != c.wantReason || !cond.LastTransitionTime.Time.Equal(c.wantLTT) {
				t.Errorf("condition %+v", cond)
			}
		})
	}
}
