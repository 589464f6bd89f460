package db

import (
	"context"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kubegcd/kubegcd/internal/api"
)

// lintFixture mirrors one case of each lint rule, in namespace a unless
// said otherwise, and a clean namespace c:
//
//	ok → owner (controller, blocking); dangling → ghost (pending in ownergc,
//	deleted by kubegcd); recreated → owner-re under its old uid; cross →
//	foreign in namespace b; ClusterRole cr-dep → a ConfigMap; unserved → a
//	kind no resource serves; two → owner and owner2, both controllers;
//	block → owner, blocking but not controller; renamed → owner's uid under
//	another name; waits → dying (being deleted), blocking; recreated-cr →
//	ClusterRole cr-owner under its old uid; c: c-dep → c-owner.
func lintFixture(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	crs, err := d.Mirror().EnsureResource(ctx, Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole"})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cm := func(ns, name string, refs ...api.OwnerRef) *Object {
		return &Object{UID: "uid-" + name, APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name,
			ResourceVersion: "1", CreationTimestamp: &created, OwnerReferences: refs}
	}
	ref := func(name, uid string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid}
	}
	ctl := func(r api.OwnerRef) api.OwnerRef {
		r.Controller, r.BlockOwnerDeletion = boolp(true), boolp(true)
		return r
	}
	blocking := ref("owner", "uid-owner")
	blocking.BlockOwnerDeletion = boolp(true)
	dying := cm("a", "dying")
	dying.DeletionTimestamp, dying.Finalizers = &created, []string{"foregroundDeletion"}
	blockingDying := ref("dying", "uid-dying")
	blockingDying.BlockOwnerDeletion = boolp(true)
	objs := []*Object{
		cm("a", "owner"), cm("a", "owner2"), cm("a", "ok", ctl(ref("owner", "uid-owner"))),
		cm("a", "dangling", ref("gone", "uid-ghost")),
		cm("a", "owner-re"), cm("a", "recreated", ref("owner-re", "uid-old-re")),
		cm("b", "foreign"), cm("a", "cross", ref("foreign", "uid-foreign")),
		cm("a", "unserved", api.OwnerRef{APIVersion: "gone.example.com/v1", Kind: "Vanished", Name: "v", UID: "uid-v"}),
		cm("a", "two", ctl(ref("owner", "uid-owner")), ctl(ref("owner2", "uid-owner2"))),
		cm("a", "block", blocking),
		cm("a", "renamed", ref("not-owner", "uid-owner")),
		cm("a", "recreated-cr", api.OwnerRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr-owner", UID: "uid-old-cr"}),
		dying, cm("a", "waits", blockingDying),
		cm("c", "c-owner"), cm("c", "c-dep", ctl(ref("c-owner", "uid-c-owner"))),
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(cms, objs...)); err != nil {
		t.Fatal(err)
	}
	crDep := &Object{UID: "uid-cr-dep", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr-dep",
		ResourceVersion: "1", OwnerReferences: []api.OwnerRef{ref("x", "uid-x")}}
	crOwner := &Object{UID: "uid-cr-owner", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr-owner",
		ResourceVersion: "1"}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(crs, crDep, crOwner)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "ownergc", Rule: "BR-21-01", Action: "delete", Reason: "r",
		Since: created, Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "dangling", UID: "uid-dangling"}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Ledger().InsertAudit(ctx, &AuditEntry{Time: created, Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
		Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "gone", UID: "uid-ghost"}, Outcome: api.OutcomeApplied}); err != nil {
		t.Fatal(err)
	}
	return d
}

// lintFacts is what a LintRef says, flattened for comparison.
type lintFacts struct {
	Dependent, RefUID       string
	OwnerNamespace          string // "-" when no owner has the UID
	Served, Namespaced      bool
	SameNameUID             string
	EarlierControllers      int
	Created, Pending, Gone  bool
	Controller, BlockOwners bool
}

func TestLintRefs(t *testing.T) {
	d := lintFixture(t)
	got := map[string][]lintFacts{}
	for _, ns := range []string{"", "a", "c"} {
		got[ns] = nil
		var refs []*LintRef
		err := d.Objects().LintRefs(context.Background(), ns, func(l *LintRef) error {
			if l.PendingSince != nil || l.OwnerDeletedAt != nil {
				t.Errorf("LintRefs read when %s's reference began to dangle: that is FillDangling's", l.Dependent.Name)
			}
			refs = append(refs, l.Clone())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Objects().FillDangling(context.Background(), refs); err != nil {
			t.Fatal(err)
		}
		for _, l := range refs {
			f := lintFacts{Dependent: l.Dependent.Name, RefUID: l.Ref.UID, OwnerNamespace: "-", Served: l.KindServed,
				Namespaced: l.KindNamespaced, SameNameUID: l.SameNameUID, EarlierControllers: l.EarlierControllers,
				Created: l.DependentCreated != nil, Pending: l.PendingSince != nil, Gone: l.OwnerDeletedAt != nil,
				Controller: l.Ref.Controller != nil && *l.Ref.Controller, BlockOwners: l.Ref.BlockOwnerDeletion != nil && *l.Ref.BlockOwnerDeletion}
			if l.Owner != nil {
				f.OwnerNamespace = l.Owner.Namespace
			}
			got[ns] = append(got[ns], f)
		}
	}
	// In dependent UID order, references in their order; references no
	// rule applies to (ok, two's first, waits, namespace c) are left out.
	a := []lintFacts{
		{Dependent: "block", RefUID: "uid-owner", OwnerNamespace: "a", Served: true, Namespaced: true, Created: true, BlockOwners: true},
		{Dependent: "cross", RefUID: "uid-foreign", OwnerNamespace: "b", Served: true, Namespaced: true, Created: true},
		{Dependent: "dangling", RefUID: "uid-ghost", OwnerNamespace: "-", Served: true, Namespaced: true, Created: true, Pending: true, Gone: true},
		{Dependent: "recreated", RefUID: "uid-old-re", OwnerNamespace: "-", Served: true, Namespaced: true, SameNameUID: "uid-owner-re", Created: true},
		{Dependent: "recreated-cr", RefUID: "uid-old-cr", OwnerNamespace: "-", Served: true, SameNameUID: "uid-cr-owner", Created: true},
		{Dependent: "renamed", RefUID: "uid-owner", OwnerNamespace: "a", Served: true, Namespaced: true, Created: true},
		{Dependent: "two", RefUID: "uid-owner2", OwnerNamespace: "a", Served: true, Namespaced: true, EarlierControllers: 1, Created: true, Controller: true, BlockOwners: true},
		{Dependent: "unserved", RefUID: "uid-v", OwnerNamespace: "-", Created: true},
	}
	crDep := lintFacts{Dependent: "cr-dep", RefUID: "uid-x", OwnerNamespace: "-", Served: true, Namespaced: true}
	all := append([]lintFacts{a[0], crDep}, a[1:]...)
	want := map[string][]lintFacts{"": all, "a": a, "c": nil}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("LintRefs (-want +got):\n%s", diff.Diff(want, got))
	}
}
