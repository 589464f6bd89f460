package gcrules

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
)

var (
	namespacedKind = Kind{Served: true, Namespaced: true}
	clusterKind    = Kind{Served: true}
)

// ref names a ConfigMap "owner" in whatever namespace the dependent is.
var ref = Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-owner"}

func owner(mod func(o *Owner)) *Owner {
	o := &Owner{UID: "u-owner", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "owner"}
	if mod != nil {
		mod(o)
	}
	return o
}

// TestClassify follows upstream's classifyReferences and isDangling
// (pkg/controller/garbagecollector/garbagecollector.go) for one reference.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		namespace string // the dependent's
		ref       Ref
		kind      Kind
		owner     *Owner
		lookup    Lookup
		want      State
	}{
		{name: "owner exists", namespace: "ns", ref: ref, kind: namespacedKind, owner: owner(nil), want: Solid},
		{name: "owner being deleted without foregroundDeletion holds", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.Deleting, o.Finalizers = true, []string{"example.com/hold"} }), want: Solid},
		{name: "owner with foregroundDeletion but not being deleted holds", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.Finalizers = []string{FinalizerForeground} }), want: Solid},
		{name: "owner deleting dependents: waiting", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.Deleting, o.Finalizers = true, []string{FinalizerForeground} }), want: Waiting},
		{name: "BR-21-05 missing from the mirror is only suspected", namespace: "ns", ref: ref, kind: namespacedKind, lookup: Mirror,
			want: Unverified},
		{name: "BR-21-05/06 confirmed absent (live GET or absent cache): dangling", namespace: "ns", ref: ref, kind: namespacedKind,
			lookup: Authoritative, want: Dangling},
		{name: "BR-21-04 live object at that name has another UID: dangling", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.UID = "u-new" }), lookup: Authoritative, want: Dangling},
		{name: "mirror shows the UID under another name: unverified", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.Name = "renamed" }), want: Unverified},
		{name: "mirror shows the UID as another kind", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.Kind = "Secret" }), want: Unverified},
		{name: "mirror shows the UID in another group", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.APIVersion = "apps/v1" }), want: Unverified},
		{name: "another version of the same group is the same owner", namespace: "ns",
			ref: Ref{APIVersion: "e2e.io/v1", Kind: "Widget", Name: "owner", UID: "u-owner"}, kind: namespacedKind,
			owner: &Owner{UID: "u-owner", APIVersion: "e2e.io/v2", Kind: "Widget", Namespace: "ns", Name: "owner"}, want: Solid},
		{name: "BR-21-07 namespaced owner looked up in the dependent's namespace only", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.Namespace = "elsewhere" }), want: Unverified},
		{name: "BR-21-07 namespaced owner in another namespace, confirmed: dangling", namespace: "ns", ref: ref, kind: namespacedKind,
			owner: owner(func(o *Owner) { o.Namespace = "elsewhere" }), lookup: Authoritative, want: Dangling},
		{name: "BR-21-07 cluster-scoped dependent, namespaced owner kind", namespace: "", ref: ref, kind: namespacedKind,
			owner: owner(nil), want: InvalidNamespace},
		{name: "namespaced dependent, cluster-scoped owner", namespace: "ns",
			ref:  Ref{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u-node"},
			kind: clusterKind, owner: &Owner{UID: "u-node", APIVersion: "v1", Kind: "Node", Name: "n1"}, want: Solid},
		{name: "cluster-scoped dependent, cluster-scoped owner", namespace: "",
			ref:  Ref{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u-node"},
			kind: clusterKind, owner: &Owner{UID: "u-node", APIVersion: "v1", Kind: "Node", Name: "n1"}, want: Solid},
		{name: "unknown kind is retried, never absent", namespace: "ns", ref: ref, kind: Kind{}, lookup: Authoritative, want: UnknownKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.namespace, tc.ref, tc.kind, tc.owner, tc.lookup); got != tc.want {
				t.Errorf("Classify = %s, want %s", got, tc.want)
			}
		})
	}
}

func classified(state State, uid string, block bool) Classified {
	return Classified{Ref: Ref{APIVersion: "v1", Kind: "ConfigMap", Name: "o-" + uid, UID: uid, BlockOwnerDeletion: block}, State: state}
}

// TestPlan follows upstream's attemptToDeleteItem, attemptToOrphanWorker
// and processDeletingDependentsItem, one case per branch.
func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  Object
		want Decision
	}{
		{name: "no references: nothing", obj: Object{}, want: Decision{}},
		{name: "only solid owners: nothing", obj: Object{Refs: []Classified{classified(Solid, "a", false), classified(Solid, "b", true)}},
			want: Decision{}},
		{name: "BR-21-01 solid and dangling: remove the dangling reference",
			obj: Object{Refs: []Classified{classified(Solid, "a", false), classified(Dangling, "b", false)}},
			want: Decision{Action: api.ActionRemoveOwnerRefs, Rule: RuleCascade, Refs: []string{"b"},
				Reason: "1 owner still exists; removing 1 reference to an owner that is gone or being deleted"}},
		{name: "BR-21-01 solid and waiting: remove the waiting reference (it would block its owner)",
			obj: Object{Refs: []Classified{classified(Waiting, "w", true), classified(Solid, "a", false), classified(Dangling, "d", false)}},
			want: Decision{Action: api.ActionRemoveOwnerRefs, Rule: RuleCascade, Refs: []string{"d", "w"},
				Reason: "1 owner still exists; removing 2 references to owners that are gone or being deleted"}},
		{name: "BR-21-01 two solid, one dangling: remove the dangling reference",
			obj: Object{Refs: []Classified{classified(Solid, "a", false), classified(Solid, "b", false), classified(Dangling, "d", false)}},
			want: Decision{Action: api.ActionRemoveOwnerRefs, Rule: RuleCascade, Refs: []string{"d"},
				Reason: "2 owners still exist; removing 1 reference to an owner that is gone or being deleted"}},
		{name: "BR-21-01 all dangling: delete in the background",
			obj: Object{Refs: []Classified{classified(Dangling, "a", false), classified(Dangling, "b", true)}},
			want: Decision{Action: api.ActionDelete, Rule: RuleCascade, Propagation: PropagationBackground,
				Reason: "no owner exists (2 gone, 0 being deleted in the foreground): deleting with propagation Background"}},
		{name: "BR-21-02 all dangling, own orphan finalizer: delete orphaning its dependents",
			obj: Object{Finalizers: []string{"example.com/x", FinalizerOrphan}, Refs: []Classified{classified(Dangling, "a", false)}},
			want: Decision{Action: api.ActionDelete, Rule: RuleCascade, Propagation: PropagationOrphan,
				Reason: "no owner exists (1 gone, 0 being deleted in the foreground): deleting with propagation Orphan"}},
		{name: "BR-21-03 all dangling, own foregroundDeletion finalizer: delete in the foreground",
			obj: Object{Finalizers: []string{FinalizerForeground}, Refs: []Classified{classified(Dangling, "a", false)}},
			want: Decision{Action: api.ActionDelete, Rule: RuleCascade, Propagation: PropagationForeground,
				Reason: "no owner exists (1 gone, 0 being deleted in the foreground): deleting with propagation Foreground"}},
		{name: "BR-21-03 waiting, has dependents: delete in the foreground",
			obj: Object{Refs: []Classified{classified(Waiting, "w", true), classified(Dangling, "d", false)}, HasDependents: true},
			want: Decision{Action: api.ActionDelete, Rule: RuleForeground, Propagation: PropagationForeground,
				Reason: "every owner is gone or being deleted in the foreground, and the object has dependents of its own: deleting it in the foreground"}},
		{name: "BR-21-03 waiting, no dependents: delete with its own policy",
			obj: Object{Refs: []Classified{classified(Waiting, "w", true)}},
			want: Decision{Action: api.ActionDelete, Rule: RuleCascade, Propagation: PropagationBackground,
				Reason: "no owner exists (0 gone, 1 being deleted in the foreground): deleting with propagation Background"}},
		{name: "BR-21-03 cycle guard: a dependent deletes its dependents, unblock the blocking references, then delete in the foreground",
			obj: Object{Refs: []Classified{classified(Waiting, "w", true), classified(Dangling, "d", false)},
				HasDependents: true, CycleDependent: "ConfigMap/child"},
			want: Decision{Action: api.ActionUnblockRefs, Rule: RuleForeground, Refs: []string{"w"},
				Reason: "dependent ConfigMap/child is itself deleting its dependents: making this object's owner references non-blocking to break the cycle",
				Then: &Decision{Action: api.ActionDelete, Rule: RuleForeground, Propagation: PropagationForeground,
					Reason: "every owner is gone or being deleted in the foreground, and the object has dependents of its own: deleting it in the foreground"}}},
		{name: "BR-21-03 cycle guard with nothing left to unblock: delete in the foreground",
			obj: Object{Refs: []Classified{classified(Waiting, "w", false)}, HasDependents: true, CycleDependent: "ConfigMap/child"},
			want: Decision{Action: api.ActionDelete, Rule: RuleForeground, Propagation: PropagationForeground,
				Reason: "every owner is gone or being deleted in the foreground, and the object has dependents of its own: deleting it in the foreground"}},
		{name: "BR-21-02 being deleted with orphan: orphan its dependents",
			obj:  Object{Deleting: true, Finalizers: []string{FinalizerForeground, FinalizerOrphan}, Refs: []Classified{classified(Dangling, "a", false)}},
			want: Decision{Action: api.ActionOrphanDependents, Rule: RuleOrphan}},
		{name: "BR-21-03 being deleted with foregroundDeletion: delete its dependents",
			obj:  Object{Deleting: true, Finalizers: []string{FinalizerForeground}},
			want: Decision{Action: api.ActionDeleteDependents, Rule: RuleForeground}},
		{name: "being deleted, other finalizers: never deleted twice",
			obj:  Object{Deleting: true, Finalizers: []string{"example.com/x"}, Refs: []Classified{classified(Dangling, "a", false)}},
			want: Decision{}},
		{name: "BR-21-07 invalid namespace keeps the object, whatever the other references",
			obj: Object{Refs: []Classified{classified(Dangling, "a", false), classified(InvalidNamespace, "n", false)}},
			want: Decision{Action: api.ActionKeep, Rule: RuleNamespace, Refs: []string{"n"},
				Reason: "cluster-scoped object names namespaced owner kind ConfigMap (o-n n): the reference can never resolve, so the object is kept"}},
		{name: "BR-21-05 unverified owner: wait for the live GET",
			obj: Object{Refs: []Classified{classified(Unverified, "u", false)}},
			want: Decision{Rule: RuleVirtualOwner, Refs: []string{"u"},
				Reason: "owner ConfigMap o-u u is not in the mirror: only suspected absent until a live GET confirms it"}},
		{name: "unknown kind: retry, never delete",
			obj: Object{Refs: []Classified{classified(Dangling, "a", false), classified(UnknownKind, "k", false)}},
			want: Decision{Rule: RuleCascade, Refs: []string{"k"},
				Reason: "the API does not serve owner kind ConfigMap in v1: retried after the next discovery"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plan(tc.obj); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestNeedDependents(t *testing.T) {
	for _, tc := range []struct {
		name string
		refs []Classified
		want bool
	}{
		{name: "none", want: false},
		{name: "solid and waiting", refs: []Classified{classified(Solid, "a", false), classified(Waiting, "w", false)}, want: false},
		{name: "waiting and dangling", refs: []Classified{classified(Dangling, "a", false), classified(Waiting, "w", false)}, want: true},
		{name: "only dangling", refs: []Classified{classified(Dangling, "a", false)}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedDependents(tc.refs); got != tc.want {
				t.Errorf("NeedDependents = %v, want %v", got, tc.want)
			}
		})
	}
}

// The reasons made once say what the formatted ones do, within the table
// and past it.
func TestNoOwnerReason(t *testing.T) {
	for d := range 6 {
		for w := range 6 {
			for _, p := range []string{PropagationBackground, PropagationForeground, PropagationOrphan, "Other"} {
				want := fmt.Sprintf("no owner exists (%d gone, %d being deleted in the foreground): deleting with propagation %s", d, w, p)
				if got := noOwnerReason(d, w, p); got != want {
					t.Errorf("noOwnerReason(%d, %d, %s) = %q, want %q", d, w, p, got, want)
				}
			}
		}
	}
}
