package db

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"k8s.io/apimachinery/pkg/util/diff"
)

// stuckFixture mirrors namespace "gone" (being deleted) holding: owner O
// deleting in the foreground ← D1 (blocking, held by a finalizer) ← nothing;
// O ← D2 (blocking, deleting in the foreground) ← D3 (blocking) ← D2 (a
// cycle); O ← N (not blocking); plain ConfigMaps; and in namespace "live"
// a pod being deleted with a grace period, a Widget being deleted, and OR
// being deleted with orphan ← R1, R2.
func stuckFixture(t *testing.T, now time.Time) *DB {
	goneStatus := &NamespaceStatus{Phase: "Terminating", SpecFinalizers: []string{"kubernetes"}, Conditions: []Condition{
		{Type: "NamespaceContentRemaining", Status: "True", Reason: "SomeResourcesRemain", Message: "Some resources are remaining: configmaps. has 7 resource instances"},
	}}
	t.Helper()
	ctx := context.Background()
	d := openTemp(t)
	ensure := func(r Resource) int64 {
		id, err := d.Mirror().EnsureResource(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	nsID := ensure(Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"})
	cmID := ensure(Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	podID := ensure(Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	wID := ensure(Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true})
	at := func(ago time.Duration) *time.Time { t := now.Add(-ago); return &t }
	block := func(uid string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: uid, UID: uid, BlockOwnerDeletion: boolp(true)}
	}
	cm := func(uid string, deleted *time.Time, fins []string, refs ...api.OwnerRef) *Object {
		return &Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "gone", Name: uid, ResourceVersion: "1",
			DeletionTimestamp: deleted, Finalizers: fins, OwnerReferences: refs}
	}
	events := eventsOf(nsID,
		&Object{UID: "ns-gone", APIVersion: "v1", Kind: "Namespace", Name: "gone", ResourceVersion: "1", DeletionTimestamp: at(time.Hour),
			NamespaceStatus: goneStatus},
		&Object{UID: "ns-live", APIVersion: "v1", Kind: "Namespace", Name: "live", ResourceVersion: "1"})
	events = append(events, eventsOf(cmID,
		cm("O", at(10*time.Minute), []string{"foregroundDeletion"}),
		cm("D1", at(9*time.Minute), []string{"example.com/hold"}, block("O")),
		cm("D2", at(8*time.Minute), []string{"foregroundDeletion"}, block("O"), block("D3")),
		cm("D3", nil, nil, block("D2")),
		cm("N", nil, nil, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "O", UID: "O"}),
		cm("a", nil, nil), cm("b", nil, nil),
	)...)
	events = append(events, Event{ResourceID: podID, Object: &Object{UID: "P", APIVersion: "v1", Kind: "Pod", Namespace: "live", Name: "p",
		ResourceVersion: "1", DeletionTimestamp: at(-30 * time.Second), DeletionGracePeriodSeconds: ptr(int64(30 * 60)),
		Pod: &Pod{Phase: "Running", NodeName: "n1"}}})
	orphaning := func(uid string, deleted *time.Time, fins []string, refs ...api.OwnerRef) *Object {
		o := cm(uid, deleted, fins, refs...)
		o.Namespace = "live"
		return o
	}
	events = append(events, eventsOf(cmID,
		orphaning("OR", at(3*time.Minute), []string{"orphan"}),
		orphaning("R1", nil, nil, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "OR", UID: "OR"}),
		orphaning("R2", nil, nil, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "OR", UID: "OR"}),
	)...)
	events = append(events, Event{ResourceID: wID, Object: &Object{UID: "W", APIVersion: "example.com/v1", Kind: "Widget", Namespace: "live",
		Name: "w", ResourceVersion: "1", DeletionTimestamp: at(2 * time.Minute), Finalizers: []string{"example.com/keep"}}})
	if _, err := d.Mirror().ApplyEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	return d
}

func uidsOf(objs []*Object) string {
	var out []string
	for _, o := range objs {
		out = append(out, o.UID)
	}
	return strings.Join(out, ",")
}

func TestStuck(t *testing.T) {
	now := time.Now().UTC()
	d := stuckFixture(t, now)
	ctx := context.Background()

	tests := []struct {
		name string
		f    StuckFilter
		want string // UIDs of Objects, in order
		more bool
	}{
		// The pod's deletion was asked for 29.5 minutes ago: its
		// deletionTimestamp, 30 s ahead, is the end of its grace period.
		{name: "all, oldest request first", f: StuckFilter{}, want: "ns-gone,P,O,D1,D2,OR,W"},
		{name: "min age", f: StuckFilter{RequestedBefore: now.Add(-8*time.Minute - 30*time.Second)}, want: "ns-gone,P,O,D1"},
		{name: "a namespace and what is in it", f: StuckFilter{Namespace: "gone"}, want: "ns-gone,O,D1,D2"},
		{name: "kind, any case", f: StuckFilter{Kind: "widget"}, want: "W"},
		{name: "kind as a resource plural", f: StuckFilter{Kind: "Pods"}, want: "P"},
		{name: "limit", f: StuckFilter{Limit: 2}, want: "ns-gone,P", more: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.Objects().Stuck(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if uidsOf(got.Objects) != tt.want || got.Truncated != tt.more {
				t.Errorf("Objects %s (truncated %v), want %s (truncated %v)", uidsOf(got.Objects), got.Truncated, tt.want, tt.more)
			}
		})
	}

	got, err := d.Objects().Stuck(ctx, StuckFilter{Namespace: "gone", ContentLimit: 3, DependentLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Content["gone"]
	if c == nil {
		t.Fatal("no content for namespace gone")
	}
	// Those being deleted come first, then by kind and name.
	if uidsOf(c.Objects) != "D1,D2,O" || c.Total != 7 || !slices.Equal([]int{c.ByKind["ConfigMap"]}, []int{7}) {
		t.Errorf("content %s, %d in all, by kind %v; want D1,D2,O, 7, ConfigMap: 7", uidsOf(c.Objects), c.Total, c.ByKind)
	}
	blocking := map[string]string{}
	for owner, deps := range got.Blocking {
		blocking[owner] = uidsOf(deps)
	}
	// O's second blocking dependent is counted, not named; the cycle D2 ⇄
	// D3 is read once; N does not block.
	want := map[string]string{"O": "D1", "D2": "D3"}
	if d := diff.Diff(want, blocking); d != "" {
		t.Errorf("Blocking (-want +got):\n%s", d)
	}
	if got.MoreBlocking["O"] != 1 {
		t.Errorf("MoreBlocking[O] = %d, want 1", got.MoreBlocking["O"])
	}
	for _, o := range got.Objects {
		if o.UID == "P" && (o.Pod == nil || o.Pod.NodeName != "n1") {
			t.Errorf("pod P lacks its node: %+v", o.Pod)
		}
	}
	// A namespace's spec finalizers and conditions come with it, in /stuck
	// and in GetObject.
	nsObj, err := d.Objects().GetObject(ctx, "ns-gone")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*Object{got.Objects[0], nsObj} {
		if o.UID != "ns-gone" || o.NamespaceStatus == nil || o.NamespaceStatus.Phase != "Terminating" ||
			!slices.Equal(o.NamespaceStatus.SpecFinalizers, []string{"kubernetes"}) || len(o.NamespaceStatus.Conditions) != 1 ||
			o.NamespaceStatus.Conditions[0].Reason != "SomeResourcesRemain" {
			t.Errorf("namespace %s: status %+v", o.UID, o.NamespaceStatus)
		}
	}

	// The dependents that still name an owner being deleted with orphan.
	got, err = d.Objects().Stuck(ctx, StuckFilter{Namespace: "live", DependentLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if o := uidsOf(got.Orphaning["OR"]); o != "R1" || got.MoreOrphaning["OR"] != 1 || len(got.Blocking) != 0 {
		t.Errorf("Orphaning[OR] = %s and %d more, want R1 and 1 more; Blocking %v", o, got.MoreOrphaning["OR"], got.Blocking)
	}

	counts, terminating, err := d.Objects().StuckCounts(ctx, now.Add(-5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i := range counts {
		counts[i].Oldest = counts[i].Oldest.Truncate(time.Second)
	}
	wantCounts := []StuckCount{
		{Group: "", Kind: "ConfigMap", Count: 3, Oldest: now.Add(-10 * time.Minute).Truncate(time.Second)},
		{Group: "", Kind: "Namespace", Count: 1, Oldest: now.Add(-time.Hour).Truncate(time.Second)},
		{Group: "", Kind: "Pod", Count: 1, Oldest: now.Add(-29*time.Minute - 30*time.Second).Truncate(time.Second)},
	}
	if d := diff.Diff(wantCounts, counts); d != "" || terminating != 1 {
		t.Errorf("StuckCounts: %d namespaces terminating, want 1; (-want +got):\n%s", terminating, d)
	}
}

// TestStuckQueryPlans keeps /stuck off full scans of the mirror.
func TestStuckQueryPlans(t *testing.T) {
	d := stuckFixture(t, time.Now())
	ctx := context.Background()
	for _, q := range []string{
		`SELECT o.uid FROM objects o WHERE o.deletion_timestamp IS NOT NULL ORDER BY ` + requestedSeconds,
		`SELECT o.uid FROM objects o WHERE o.resource_id IN (SELECT id FROM resources WHERE namespaced = 1)
			AND o.namespace IN (SELECT value FROM json_each('["gone"]'))`,
	} {
		rows, err := d.read.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, p := range plan {
			if strings.HasPrefix(p, "SCAN o") {
				t.Errorf("query scans objects:\n%s\nplan:\n%s", q, strings.Join(plan, "\n"))
			}
		}
	}
}
