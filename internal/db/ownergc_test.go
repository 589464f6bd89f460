package db

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/api"
)

// DependentObjects gives every object that names the owner, once (a
// dependent naming it twice included), with all its references in order,
// and nothing else.
func TestDependentObjects(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(uid string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: uid, UID: uid}
	}
	obj := func(uid string, refs ...api.OwnerRef) *Object {
		return &Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, ResourceVersion: "1",
			OwnerReferences: refs}
	}
	objs := []*Object{
		obj("owner"), obj("other"),
		obj("c", ref("owner")),
		obj("a", ref("other"), ref("owner")),
		obj("b", ref("owner"), ref("other"), ref("owner")), // names it twice
		obj("d", ref("other")),
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(rid, objs...)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		owner string
		want  map[string][]string // dependent → its references' UIDs, in order
	}{
		{"owner", map[string][]string{"a": {"other", "owner"}, "b": {"owner", "other", "owner"}, "c": {"owner"}}},
		{"other", map[string][]string{"a": {"other", "owner"}, "b": {"owner", "other", "owner"}, "d": {"other"}}},
		{"c", map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.owner, func(t *testing.T) {
			got := map[string][]string{}
			var order []string
			if err := d.Objects().DependentObjects(ctx, tt.owner, func(o *Object) error {
				if _, dup := got[o.UID]; dup {
					t.Errorf("%s came twice", o.UID)
				}
				order = append(order, o.UID)
				got[o.UID] = []string{}
				for _, r := range o.OwnerReferences {
					got[o.UID] = append(got[o.UID], r.UID)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("dependents of %s (-want +got):\n%s", tt.owner, diff)
			}
		})
	}
}

// The dependents are read in the owner index's order, so the first comes
// before the others are found: no list of them is built first, and no sort
// of them all.
func TestDependentObjectsStream(t *testing.T) {
	plan := queryPlan(t, openTemp(t), objectsWithRefsQuery(dependentsFrom, dependentsWhere, dependentsBy), "owner")
	if !strings.Contains(plan, "owner_refs_by_owner") || strings.Contains(plan, "LIST SUBQUERY") ||
		strings.Contains(plan, "TEMP B-TREE FOR ORDER BY") {
		t.Errorf("the dependents are not streamed from the owner index:\n%s", plan)
	}
}
