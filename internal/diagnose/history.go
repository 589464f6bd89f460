package diagnose

import (
	"slices"
	"sort"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// GraphAt draws the ownership graph of a history snapshot, in the shape
// /graph gives the present one: the objects of the walk that existed at
// the time and took part in ownership then (they had owners, or one of
// them named them), and the owners they named that did not exist then,
// as missing vertices known only from the reference. An edge joins a
// dependent to an owner when both are in the walk.
func GraphAt(s *db.HistorySnapshot) *db.Graph {
	g := &db.Graph{Nodes: []db.GraphNode{}, Edges: []db.GraphEdge{}, Truncated: s.Truncated}
	inWalk := map[string]bool{}
	for _, u := range s.Closure {
		inWalk[u] = true
	}
	alive := map[string]*db.HistoryEntry{}
	for i := range s.States {
		alive[s.States[i].UID] = &s.States[i]
	}
	named := map[string]bool{}
	// The first reference to each owner that did not exist, in dependent
	// order, gives its identity, as /graph takes it.
	type source struct {
		ref       api.OwnerRef
		namespace string
	}
	missing := map[string]source{}
	for _, st := range s.States { // sorted by UID
		for _, r := range st.OwnerReferences {
			if !inWalk[r.UID] {
				continue
			}
			named[r.UID] = true
			g.Edges = append(g.Edges, db.GraphEdge{Dependent: st.UID, Owner: r.UID, Controller: r.Controller != nil && *r.Controller,
				BlockOwnerDeletion: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion})
			if _, seen := missing[r.UID]; alive[r.UID] == nil && !seen {
				missing[r.UID] = source{ref: r, namespace: st.Namespace}
			}
		}
	}
	for _, u := range s.Closure {
		if st := alive[u]; st != nil {
			if len(st.OwnerReferences) == 0 && !named[u] {
				continue
			}
			n := db.GraphNode{UID: u, APIVersion: st.APIVersion, Kind: st.Kind, Namespace: st.Namespace, Name: st.Name,
				BeingDeleted: st.DeletionTimestamp != nil}
			n.DeletingDependents = n.BeingDeleted && slices.Contains(st.Finalizers, "foregroundDeletion")
			g.Nodes = append(g.Nodes, n)
			continue
		}
		src, ok := missing[u]
		if !ok {
			continue
		}
		n := db.GraphNode{UID: u, APIVersion: src.ref.APIVersion, Kind: src.ref.Kind, Name: src.ref.Name, Missing: true, Virtual: true}
		// A reference gives no namespace: a namespaced owner can only be in
		// its dependent's.
		if s.Namespaced[db.GroupKind{Group: groupOf(src.ref.APIVersion), Kind: src.ref.Kind}] {
			n.Namespace = src.namespace
		}
		g.Nodes = append(g.Nodes, n)
	}
	sort.SliceStable(g.Edges, func(i, j int) bool {
		if g.Edges[i].Dependent != g.Edges[j].Dependent {
			return g.Edges[i].Dependent < g.Edges[j].Dependent
		}
		return g.Edges[i].Owner < g.Edges[j].Owner
	})
	return g
}

// LeaseTimeline tells who held a Lease and when nobody did, from its
// history rows (oldest first, as LeaseHolderHistory gives them; created
// and holder-changed rows count) and its present state. Only what history
// kept is known: gaps before the oldest row, or while kubegcd did not
// watch, are not.
func LeaseTimeline(rows []db.HistoryEntry, now api.Lease) (changes []api.HolderChange, gaps []api.LeaseGap) {
	changes, gaps = []api.HolderChange{}, []api.LeaseGap{}
	// released is when the lease was let go, while nobody holds it.
	var released *time.Time
	for _, r := range rows {
		// A change of the preferred holder alone is no change of holder.
		if r.Event != api.HistoryCreated && r.Event != api.HistoryHolderChanged {
			continue
		}
		holder := ""
		if r.Holder != nil {
			holder = *r.Holder
		}
		since := r.HolderSince
		start := r.Time
		if since != nil {
			start = *since
		}
		changes = append(changes, api.HolderChange{Holder: holder, Since: since, Seen: r.Time})
		switch {
		case released != nil:
			if holder != "" {
				gaps = append(gaps, api.LeaseGap{From: *released, To: &start})
				released = nil
			}
		case holder == "":
			released = &start
		case r.LapsedAt != nil:
			gaps = append(gaps, api.LeaseGap{From: *r.LapsedAt, To: &start})
		}
	}
	switch {
	case released != nil:
		gaps = append(gaps, api.LeaseGap{From: *released})
	case now.Expired && now.HolderIdentity != nil && *now.HolderIdentity != "" && now.RenewTime != nil && now.LeaseDurationSeconds != nil:
		gaps = append(gaps, api.LeaseGap{From: now.RenewTime.Add(time.Duration(*now.LeaseDurationSeconds) * time.Second)})
	}
	return changes, gaps
}
