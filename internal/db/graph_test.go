package db

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// graphFixture mirrors, in namespaces a and b:
//
//	a: chain A ← B ← C; G → missing Deployment "ghost"; H → missing
//	   ClusterRole "ghost-cr"; U → missing owner of an unknown kind; X →
//	   mirrored ClusterRole cr1; Y → P, which is in namespace b; N → A under
//	   another name; L alone; cycle M1 ⇄ M2
//	b: P ← Q (Q also → cr1); D (deleting, foreground) ← E; F (deleting) ← K
func graphFixture(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().EnsureResource(ctx, Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	crs, err := d.Mirror().EnsureResource(ctx, Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cm := func(ns, name string, refs ...api.OwnerRef) *Object {
		return &Object{UID: name, APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name, ResourceVersion: "1", OwnerReferences: refs}
	}
	ref := func(uid string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: uid, UID: uid}
	}
	cr1 := &Object{UID: "cr1", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr1", ResourceVersion: "1"}
	crRef := api.OwnerRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr1", UID: "cr1"}
	b := cm("a", "B", api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "A", UID: "A", Controller: boolp(true), BlockOwnerDeletion: boolp(true)})
	dObj := cm("b", "D")
	dObj.DeletionTimestamp, dObj.Finalizers = &now, []string{"foregroundDeletion"}
	fObj := cm("b", "F")
	fObj.DeletionTimestamp, fObj.Finalizers = &now, []string{"example.com/hold"}
	objs := []*Object{
		cm("a", "A"), b, cm("a", "C", ref("B")),
		cm("a", "G", api.OwnerRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: "ghost"}),
		cm("a", "H", api.OwnerRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "gone", UID: "ghost-cr"}),
		cm("a", "U", api.OwnerRef{APIVersion: "example.com/v1", Kind: "Foo", Name: "foo", UID: "ghost-foo"}),
		cm("a", "X", crRef), cm("a", "Y", ref("P")),
		cm("a", "N", api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "not-A", UID: "A"}),
		cm("a", "L"), cm("a", "M1", ref("M2")), cm("a", "M2", ref("M1")),
		cm("b", "P"), cm("b", "Q", ref("P"), crRef), dObj, cm("b", "E", ref("D")), fObj, cm("b", "K", ref("F")),
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(cms, objs...)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(crs, cr1)); err != nil {
		t.Fatal(err)
	}
	return d
}

func eventsOf(resourceID int64, objs ...*Object) []Event {
	var evs []Event
	for _, o := range objs {
		evs = append(evs, Event{ResourceID: resourceID, Object: o})
	}
	return evs
}

func nodeUIDs(g *Graph) string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.UID)
	}
	return strings.Join(out, ",")
}

func edgeList(g *Graph) string {
	var out []string
	for _, e := range g.Edges {
		out = append(out, e.Dependent+">"+e.Owner)
	}
	return strings.Join(out, ",")
}

func nodeOf(t *testing.T, g *Graph, uid string) GraphNode {
	t.Helper()
	for _, n := range g.Nodes {
		if n.UID == uid {
			return n
		}
	}
	t.Fatalf("no node %s in %s", uid, nodeUIDs(g))
	return GraphNode{}
}

func TestGraphWhole(t *testing.T) {
	ctx := context.Background()
	d := graphFixture(t)
	g, err := d.Objects().Graph(ctx, GraphFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// Everything that takes part, ordered by UID; L (alone) is left out.
	want := "A,B,C,D,E,F,G,H,K,M1,M2,N,P,Q,U,X,Y,cr1,ghost,ghost-cr,ghost-foo"
	if got := nodeUIDs(g); got != want || g.Truncated {
		t.Fatalf("nodes = %s (truncated %v), want %s", got, g.Truncated, want)
	}
	wantEdges := "B>A,C>B,E>D,G>ghost,H>ghost-cr,K>F,M1>M2,M2>M1,N>A,Q>P,Q>cr1,U>ghost-foo,X>cr1,Y>P"
	if got := edgeList(g); got != wantEdges {
		t.Fatalf("edges = %s, want %s", got, wantEdges)
	}
	if e := g.Edges[0]; !e.Controller || !e.BlockOwnerDeletion {
		t.Errorf("B→A edge lost controller/blockOwnerDeletion: %+v", e)
	}
	if e := g.Edges[1]; e.Controller || e.BlockOwnerDeletion {
		t.Errorf("C→B edge with unset flags reads %+v, want false", e)
	}

	// Owners known only from references: identity from the reference,
	// namespace only for a namespaced kind.
	for uid, want := range map[string]GraphNode{
		"ghost":     {UID: "ghost", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "a", Name: "gone", Missing: true, Virtual: true},
		"ghost-cr":  {UID: "ghost-cr", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "gone", Missing: true, Virtual: true},
		"ghost-foo": {UID: "ghost-foo", APIVersion: "example.com/v1", Kind: "Foo", Name: "foo", Missing: true, Virtual: true},
		"cr1":       {UID: "cr1", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr1"},
		"D":         {UID: "D", APIVersion: "v1", Kind: "ConfigMap", Namespace: "b", Name: "D", BeingDeleted: true, DeletingDependents: true},
		"F":         {UID: "F", APIVersion: "v1", Kind: "ConfigMap", Namespace: "b", Name: "F", BeingDeleted: true},
	} {
		if got := nodeOf(t, g, uid); got != want {
			t.Errorf("node %s = %+v, want %+v", uid, got, want)
		}
	}
}

func TestGraphFilters(t *testing.T) {
	ctx := context.Background()
	d := graphFixture(t)
	for _, tc := range []struct {
		name         string
		f            GraphFilter
		nodes, edges string
	}{
		// Objects of a, plus the cluster-scoped and missing owners they
		// name; P (an owner in another namespace) and b's objects are out.
		{"namespace", GraphFilter{Namespace: "a"},
			"A,B,C,G,H,M1,M2,N,U,X,Y,cr1,ghost,ghost-cr,ghost-foo",
			"B>A,C>B,G>ghost,H>ghost-cr,M1>M2,M2>M1,N>A,U>ghost-foo,X>cr1"},
		// Isolated adds L, which has neither owners nor dependents.
		{"namespace with isolated objects", GraphFilter{Namespace: "a", Isolated: true},
			"A,B,C,G,H,L,M1,M2,N,U,X,Y,cr1,ghost,ghost-cr,ghost-foo",
			"B>A,C>B,G>ghost,H>ghost-cr,M1>M2,M2>M1,N>A,U>ghost-foo,X>cr1"},
		{"middle of a chain", GraphFilter{UIDs: []string{"B"}}, "A,B,C", "B>A,C>B"},
		// A's other dependent N comes too: it depends on A transitively.
		{"top of a chain", GraphFilter{UIDs: []string{"A"}}, "A,B,C,N", "B>A,C>B,N>A"},
		{"bottom of a chain", GraphFilter{UIDs: []string{"C"}}, "A,B,C", "B>A,C>B"},
		{"missing owner", GraphFilter{UIDs: []string{"ghost"}}, "G,ghost", "G>ghost"},
		{"two seeds", GraphFilter{UIDs: []string{"C", "G"}}, "A,B,C,G,ghost", "B>A,C>B,G>ghost"},
		{"cycle", GraphFilter{UIDs: []string{"M1"}}, "M1,M2", "M1>M2,M2>M1"},
		{"cluster-scoped owner", GraphFilter{UIDs: []string{"cr1"}}, "Q,X,cr1", "Q>cr1,X>cr1"},
		{"uid and namespace intersect", GraphFilter{UIDs: []string{"cr1"}, Namespace: "b"}, "Q,cr1", "Q>cr1"},
		{"uid outside the namespace", GraphFilter{UIDs: []string{"B"}, Namespace: "b"}, "", ""},
		{"object that takes no part", GraphFilter{UIDs: []string{"L"}}, "", ""},
		{"limit", GraphFilter{Namespace: "a", Limit: 3}, "A,B,C", "B>A,C>B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := d.Objects().Graph(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := nodeUIDs(g); got != tc.nodes {
				t.Errorf("nodes = %s, want %s", got, tc.nodes)
			}
			if got := edgeList(g); got != tc.edges {
				t.Errorf("edges = %s, want %s", got, tc.edges)
			}
			if g.Truncated != (tc.f.Limit == 3) {
				t.Errorf("truncated = %v", g.Truncated)
			}
		})
	}

	// Exactly as many nodes as the limit is not truncated.
	if g, err := d.Objects().Graph(ctx, GraphFilter{UIDs: []string{"B"}, Limit: 3}); err != nil || g.Truncated || len(g.Nodes) != 3 {
		t.Fatalf("limit equal to the node count: %+v, %v", g, err)
	}

	_, err := d.Objects().Graph(ctx, GraphFilter{UIDs: []string{"B", "nope"}})
	var unknown *UnknownUIDError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &unknown) || unknown.UID != "nope" {
		t.Fatalf("unknown uid: err = %v, want UnknownUIDError for nope", err)
	}
}

func TestGraphEmpty(t *testing.T) {
	g, err := openTemp(t).Objects().Graph(context.Background(), GraphFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if g.Nodes == nil || g.Edges == nil || len(g.Nodes)+len(g.Edges) != 0 || g.Truncated {
		t.Fatalf("empty graph = %+v, want empty non-nil slices", g)
	}
}

func TestObjectDetail(t *testing.T) {
	ctx := context.Background()
	d := graphFixture(t)

	b, err := d.Objects().ObjectDetail(ctx, "B", 10)
	if err != nil {
		t.Fatal(err)
	}
	if b.Object.Name != "B" || len(b.Object.OwnerReferences) != 1 || !*b.Object.OwnerReferences[0].BlockOwnerDeletion {
		t.Fatalf("object = %+v", b.Object)
	}
	if len(b.Owners) != 1 || b.Owners[0].Ref.UID != "A" || b.Owners[0].Owner == nil || b.Owners[0].Owner.Name != "A" ||
		!b.Owners[0].KindNamespaced {
		t.Fatalf("owners of B = %+v", b.Owners)
	}
	if len(b.Dependents) != 1 || b.Dependents[0] != (DependentInfo{UID: "C", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "C"}) {
		t.Fatalf("dependents of B = %+v", b.Dependents)
	}
	if b.Pending == nil || len(b.Pending) != 0 {
		t.Fatalf("pending of B = %#v, want empty", b.Pending)
	}

	a, err := d.Objects().ObjectDetail(ctx, "A", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Owners) != 0 || len(a.Dependents) != 1 || a.Dependents[0].UID != "B" || !a.Dependents[0].BlockOwnerDeletion || !a.DependentsTruncated {
		t.Fatalf("A, one dependent at most: %+v", a)
	}

	// The rows as mirrored: what diagnose.OwnerStates makes of them is
	// tested there.
	for uid, want := range map[string]struct {
		ref, owner string // the reference's UID; the mirrored owner's name, "" when none
		namespaced bool
	}{
		"G": {"ghost", "", true},
		"H": {"ghost-cr", "", false},
		"X": {"cr1", "cr1", false},
		"Y": {"P", "P", true},
		"N": {"A", "A", true},
		"E": {"D", "D", true},
		"K": {"F", "F", true},
	} {
		got, err := d.Objects().ObjectDetail(ctx, uid, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Owners) != 1 {
			t.Fatalf("owners of %s = %+v, want one", uid, got.Owners)
		}
		row, name := got.Owners[0], ""
		if row.Owner != nil {
			name = row.Owner.Name
		}
		if row.Ref.UID != want.ref || name != want.owner || row.KindNamespaced != want.namespaced {
			t.Errorf("owner of %s: reference %s, mirrored %q, namespaced kind %v; want %s, %q, %v", uid, row.Ref.UID, name,
				row.KindNamespaced, want.ref, want.owner, want.namespaced)
		}
	}

	p := &Pending{Controller: "ownergc", Rule: "BR-21-01", Action: "delete", Reason: "no owner exists",
		Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "G", UID: "G"}, ResourceVersion: "1"}
	if _, err := d.Ledger().UpsertPending(ctx, p); err != nil {
		t.Fatal(err)
	}
	g, err := d.Objects().ObjectDetail(ctx, "G", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Pending) != 1 || g.Pending[0].Action != "delete" || g.Pending[0].Reason != p.Reason || g.Pending[0].Since.IsZero() {
		t.Fatalf("pending of G = %+v", g.Pending)
	}

	if _, err := d.Objects().ObjectDetail(ctx, "nope", 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown uid: err = %v, want ErrNotFound", err)
	}
	if !slices.Equal(g.Object.Finalizers, nil) {
		t.Fatalf("finalizers of G = %v", g.Object.Finalizers)
	}
}
