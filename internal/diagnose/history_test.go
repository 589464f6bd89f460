package diagnose

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestGraphAt(t *testing.T) {
	yes := true
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cm := func(uid string, owners ...api.OwnerRef) db.HistoryEntry {
		return db.HistoryEntry{UID: uid, Event: api.HistoryCreated, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm-" + uid,
			OwnerReferences: owners}
	}
	ref := func(uid string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "cm-" + uid, UID: uid}
	}
	deleting := cm("d", ref("a"))
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"foregroundDeletion"}
	node := func(uid string) db.GraphNode {
		return db.GraphNode{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm-" + uid}
	}
	nsKinds := map[db.GroupKind]bool{{Kind: "ConfigMap"}: true, {Group: "apps", Kind: "Deployment"}: true}

	for _, tc := range []struct {
		name string
		snap db.HistorySnapshot
		want db.Graph
	}{
		{
			name: "nothing existed then",
			snap: db.HistorySnapshot{Closure: []string{"x"}},
			want: db.Graph{Nodes: []db.GraphNode{}, Edges: []db.GraphEdge{}},
		},
		{
			name: "an object alone takes no part",
			snap: db.HistorySnapshot{Closure: []string{"x"}, States: []db.HistoryEntry{cm("x")}},
			want: db.Graph{Nodes: []db.GraphNode{}, Edges: []db.GraphEdge{}},
		},
		{
			name: "owner and dependent, with the reference's flags",
			snap: db.HistorySnapshot{Closure: []string{"a", "x"}, States: []db.HistoryEntry{cm("a"),
				cm("x", api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "cm-a", UID: "a", Controller: &yes, BlockOwnerDeletion: &yes})}},
			want: db.Graph{Nodes: []db.GraphNode{node("a"), node("x")},
				Edges: []db.GraphEdge{{Dependent: "x", Owner: "a", Controller: true, BlockOwnerDeletion: true}}},
		},
		{
			name: "owners that did not exist then are missing, namespaced by kind",
			snap: db.HistorySnapshot{Closure: []string{"gone-cr", "gone-dep", "gone-foo", "x"}, Namespaced: nsKinds,
				States: []db.HistoryEntry{cm("x",
					api.OwnerRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "gone-dep"},
					api.OwnerRef{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr", UID: "gone-cr"},
					api.OwnerRef{APIVersion: "example.com/v1", Kind: "Foo", Name: "foo", UID: "gone-foo"})}},
			want: db.Graph{
				Nodes: []db.GraphNode{
					{UID: "gone-cr", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "cr", Missing: true, Virtual: true},
					{UID: "gone-dep", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web", Missing: true, Virtual: true},
					{UID: "gone-foo", APIVersion: "example.com/v1", Kind: "Foo", Name: "foo", Missing: true, Virtual: true},
					node("x"),
				},
				Edges: []db.GraphEdge{{Dependent: "x", Owner: "gone-cr"}, {Dependent: "x", Owner: "gone-dep"}, {Dependent: "x", Owner: "gone-foo"}},
			},
		},
		{
			name: "references outside the walk draw no edge",
			snap: db.HistorySnapshot{Closure: []string{"a", "x"}, States: []db.HistoryEntry{cm("a"), cm("x", ref("a"), ref("elsewhere"))}},
			want: db.Graph{Nodes: []db.GraphNode{node("a"), node("x")}, Edges: []db.GraphEdge{{Dependent: "x", Owner: "a"}}},
		},
		{
			name: "deleting in the foreground, truncated walk",
			snap: db.HistorySnapshot{Closure: []string{"a", "d"}, States: []db.HistoryEntry{cm("a"), deleting}, Truncated: true},
			want: db.Graph{
				Nodes: []db.GraphNode{node("a"), func() db.GraphNode {
					n := node("d")
					n.BeingDeleted, n.DeletingDependents = true, true
					return n
				}()},
				Edges: []db.GraphEdge{{Dependent: "d", Owner: "a"}}, Truncated: true,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(&tc.want, GraphAt(&tc.snap)); diff != "" {
				t.Errorf("GraphAt (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLeaseTimeline(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) *time.Time { return new(base.Add(time.Duration(s) * time.Second)) }
	row := func(event api.HistoryEvent, holder string, seen, since int, lapsed *time.Time) db.HistoryEntry {
		return db.HistoryEntry{Event: event, Holder: &holder, Time: *at(seen), HolderSince: at(since), LapsedAt: lapsed}
	}
	live := api.Lease{HolderIdentity: new("b"), RenewTime: at(100), LeaseDurationSeconds: new(int32(10))}
	expired := live
	expired.Expired = true

	for _, tc := range []struct {
		name        string
		rows        []db.HistoryEntry
		now         api.Lease
		wantChanges []api.HolderChange
		wantGaps    []api.LeaseGap
	}{
		{
			name:        "no history",
			now:         live,
			wantChanges: []api.HolderChange{}, wantGaps: []api.LeaseGap{},
		},
		{
			name:        "held throughout",
			rows:        []db.HistoryEntry{row(api.HistoryCreated, "a", 1, 0, nil), row(api.HistoryHolderChanged, "b", 21, 20, nil)},
			now:         live,
			wantChanges: []api.HolderChange{{Holder: "a", Since: at(0), Seen: *at(1)}, {Holder: "b", Since: at(20), Seen: *at(21)}},
			wantGaps:    []api.LeaseGap{},
		},
		{
			name:        "ran out before the next holder took it",
			rows:        []db.HistoryEntry{row(api.HistoryCreated, "a", 1, 0, nil), row(api.HistoryHolderChanged, "b", 31, 30, at(15))},
			now:         live,
			wantChanges: []api.HolderChange{{Holder: "a", Since: at(0), Seen: *at(1)}, {Holder: "b", Since: at(30), Seen: *at(31)}},
			wantGaps:    []api.LeaseGap{{From: *at(15), To: at(30)}},
		},
		{
			name: "released, then taken",
			rows: []db.HistoryEntry{row(api.HistoryCreated, "a", 1, 0, nil), row(api.HistoryHolderChanged, "", 41, 40, nil),
				row(api.HistoryHolderChanged, "b", 61, 60, nil)},
			now: live,
			wantChanges: []api.HolderChange{{Holder: "a", Since: at(0), Seen: *at(1)}, {Holder: "", Since: at(40), Seen: *at(41)},
				{Holder: "b", Since: at(60), Seen: *at(61)}},
			wantGaps: []api.LeaseGap{{From: *at(40), To: at(60)}},
		},
		{
			name:        "released and still free",
			rows:        []db.HistoryEntry{row(api.HistoryCreated, "a", 1, 0, nil), row(api.HistoryHolderChanged, "", 41, 40, nil)},
			now:         api.Lease{RenewTime: at(40), Expired: true},
			wantChanges: []api.HolderChange{{Holder: "a", Since: at(0), Seen: *at(1)}, {Holder: "", Since: at(40), Seen: *at(41)}},
			wantGaps:    []api.LeaseGap{{From: *at(40)}},
		},
		{
			name: "a change of the preferred holder alone is no holder change",
			rows: []db.HistoryEntry{row(api.HistoryCreated, "b", 1, 0, nil),
				{Event: api.HistoryPreferredHolderChanged, Holder: new("b"), PreferredHolder: new("c"), Time: *at(50)}},
			now:         live,
			wantChanges: []api.HolderChange{{Holder: "b", Since: at(0), Seen: *at(1)}},
			wantGaps:    []api.LeaseGap{},
		},
		{
			name:        "expired now",
			rows:        []db.HistoryEntry{row(api.HistoryCreated, "b", 1, 0, nil)},
			now:         expired,
			wantChanges: []api.HolderChange{{Holder: "b", Since: at(0), Seen: *at(1)}},
			wantGaps:    []api.LeaseGap{{From: *at(110)}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, gaps := LeaseTimeline(tc.rows, tc.now)
			if diff := cmp.Diff(tc.wantChanges, changes); diff != "" {
				t.Errorf("holder changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantGaps, gaps); diff != "" {
				t.Errorf("gaps (-want +got):\n%s", diff)
			}
		})
	}
}
