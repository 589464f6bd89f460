package db

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// A watch upsert reports whether it changed a fact the owner GC decides
// on: only then is the object looked at again, as upstream's graph
// builder does nothing for an update that keeps an object's owners and
// its deletion state.
func TestUpsertReportsOwnershipFacts(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lease := func(rv, holder string, renew time.Time, mutate ...func(*Object)) *Object {
		o := &Object{UID: "u", APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "kube-node-lease", Name: "n1",
			ResourceVersion: rv, OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-1"}},
			Lease: &Lease{HolderIdentity: ptr(holder), LeaseDurationSeconds: ptr(int32(40)), RenewTime: &renew}}
		for _, m := range mutate {
			m(o)
		}
		return o
	}
	for _, step := range []struct {
		name  string
		obj   *Object
		facts bool
	}{
		{"first seen", lease("1", "n1", t0), true},
		{"renewed", lease("2", "n1", t0.Add(10*time.Second)), false},
		{"a label or a status", lease("3", "n1", t0.Add(20*time.Second)), false},
		{"holder changed", lease("4", "n2", t0.Add(30*time.Second)), false},
		{"owner changed", lease("5", "n2", t0.Add(40*time.Second), func(o *Object) {
			o.OwnerReferences[0].UID = "node-2"
		}), true},
		{"owner controller flag set", lease("6", "n2", t0.Add(50*time.Second), func(o *Object) {
			o.OwnerReferences[0].UID, o.OwnerReferences[0].Controller = "node-2", boolp(true)
		}), true},
		{"finalizer added", lease("7", "n2", t0.Add(60*time.Second), func(o *Object) {
			o.OwnerReferences[0].UID, o.OwnerReferences[0].Controller = "node-2", boolp(true)
			o.Finalizers = []string{"example.com/hold"}
		}), true},
		{"deletion requested", lease("8", "n2", t0.Add(70*time.Second), func(o *Object) {
			o.OwnerReferences[0].UID, o.OwnerReferences[0].Controller = "node-2", boolp(true)
			o.Finalizers = []string{"example.com/hold"}
			o.DeletionTimestamp = ptr(t0.Add(70 * time.Second))
		}), true},
		{"renewed while deleted", lease("9", "n2", t0.Add(80*time.Second), func(o *Object) {
			o.OwnerReferences[0].UID, o.OwnerReferences[0].Controller = "node-2", boolp(true)
			o.Finalizers = []string{"example.com/hold"}
			o.DeletionTimestamp = ptr(t0.Add(70 * time.Second))
		}), false},
	} {
		changes, err := d.Mirror().ApplyWatchEvents(ctx, rid, step.obj.ResourceVersion, eventsOf(rid, step.obj))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if len(changes) != 1 || changes[0].Type != ChangeUpserted || changes[0].OwnershipChanged != step.facts {
			t.Errorf("%s: changes %+v, want one upsert with Facts %v", step.name, changes, step.facts)
		}
	}
}

// A node's watch upsert reports whether it wrote the node's typed row: the
// TTL controller wakes only then. The row is rewritten only when its
// readiness, taints or TTL annotation change, not for each status update.
func TestUpsertReportsNodeChanges(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatal(err)
	}
	node := func(rv, ready string, ttl *string, taints ...string) *Object {
		n := &Node{Ready: ready, TTLAnnotation: ttl}
		for _, k := range taints {
			n.Taints = append(n.Taints, Taint{Key: k, Effect: "NoSchedule"})
		}
		return &Object{UID: "n1", APIVersion: "v1", Kind: "Node", Name: "n1", ResourceVersion: rv, Node: n}
	}
	for _, step := range []struct {
		name  string
		obj   *Object
		typed bool
	}{
		{"first seen", node("1", "True", nil), true},
		{"a status update", node("2", "True", nil), false},
		{"annotated", node("3", "True", ptr("15")), true},
		{"another status update", node("4", "True", ptr("15")), false},
		{"annotation changed", node("5", "True", ptr("30")), true},
		{"tainted", node("6", "True", ptr("30"), "example.com/x"), true},
		{"not ready", node("7", "False", ptr("30"), "example.com/x"), true},
		{"annotation removed", node("8", "False", nil, "example.com/x"), true},
		{"unchanged again", node("9", "False", nil, "example.com/x"), false},
	} {
		changes, err := d.Mirror().ApplyWatchEvents(ctx, rid, step.obj.ResourceVersion, eventsOf(rid, step.obj))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if len(changes) != 1 || changes[0].Type != ChangeUpserted || changes[0].TypedChanged != step.typed {
			t.Errorf("%s: changes %+v, want one upsert with TypedChanged %v", step.name, changes, step.typed)
		}
		got, err := d.TTL().NodeTTLCounts(ctx)
		want := map[string]int{}
		if a := step.obj.Node.TTLAnnotation; a != nil {
			want[*a] = 1
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: mirrored TTL annotations %v %v, want %v", step.name, got, err, want)
		}
	}
}

// A watch deletion is examined in its own commit: whether anything still
// names the object as an owner, and which of its owners are mirrored with
// a deletionTimestamp — what the owner GC would otherwise read again.
func TestWatchDeletionIsExamined(t *testing.T) {
	ctx := context.Background()
	d, rid := openConfigMaps(t)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cm := func(uid string, deleting bool, owners ...string) *Object {
		o := configMap(uid, owners...)
		if deleting {
			o.DeletionTimestamp = &now
			o.Finalizers = []string{"foregroundDeletion"}
		}
		return o
	}
	var events []Event
	for _, o := range []*Object{cm("owner-deleting", true), cm("owner-live", false),
		cm("middle", false, "owner-deleting", "owner-live", "owner-missing"), cm("leaf", false, "middle")} {
		events = append(events, Event{ResourceID: rid, Object: o})
	}
	if _, err := d.Mirror().ApplyEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		obj           *Object
		hasDependents bool
		deleting      []string
	}{
		{cm("middle", false, "owner-deleting", "owner-live", "owner-missing"), true, []string{"owner-deleting"}},
		{cm("leaf", false, "middle"), false, nil},
		{cm("owner-live", false), false, nil},
	} {
		changes, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Deleted: true, Object: step.obj}})
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 {
			t.Fatalf("%s: changes %+v, want one deletion", step.obj.UID, changes)
		}
		c := changes[0]
		if c.Type != ChangeDeleted || !c.Examined || c.HasDependents != step.hasDependents ||
			strings.Join(c.DeletingOwners, ",") != strings.Join(step.deleting, ",") || len(c.Owners) != len(step.obj.OwnerReferences) {
			t.Errorf("%s: change %+v, want examined, dependents %v, owners being deleted %v", step.obj.UID, c,
				step.hasDependents, step.deleting)
		}
	}
	// The deletion of an object never mirrored (or already gone) changes
	// nothing.
	for _, uid := range []string{"never-mirrored", "leaf"} {
		changes, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Deleted: true, Object: cm(uid, false)}})
		if err != nil || len(changes) != 0 {
			t.Errorf("deleting %s, not mirrored: changes %+v, %v; want none", uid, changes, err)
		}
	}
}
