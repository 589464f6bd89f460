package db

import (
	"cmp"
	"context"
	"slices"
	"strings"
)

// graphWalkMax bounds the UIDs a walk from seeds gathers in memory, some
// 100 bytes each and as much per reference. SQLite walks a larger closure
// again, and keeps its sets in its temporary storage.
const graphWalkMax = 200_000

const (
	// sqlDependentsOf and sqlOwnersOf step a walk: one seek per UID of the
	// JSON array ?1, through owner_refs' owner index and primary key. The
	// owner index holds each reference's flags, and k.key is the owner's
	// place in ?1, so a walk down reads its edges whole from the index. The
	// flags come packed with the owner's place in one column, because each
	// column costs the driver a few calls per row.
	sqlDependentsOf = `SELECT r.dependent_uid,
			k.key * 4 + coalesce(r.controller, 0) * 2 + coalesce(r.block_owner_deletion, 0)
		FROM json_each(?1) k CROSS JOIN owner_refs r ON r.owner_uid = k.value`
	sqlOwnersOf = `SELECT r.owner_uid FROM json_each(?1) k CROSS JOIN owner_refs r ON r.dependent_uid = k.value`
	// sqlApart lists the UIDs of ?1 that have no owner and are no one's.
	sqlApart = `SELECT s.value FROM json_each(?1) s
		WHERE NOT EXISTS (SELECT 1 FROM owner_refs p WHERE p.dependent_uid = s.value)
			AND NOT EXISTS (SELECT 1 FROM owner_refs p WHERE p.owner_uid = s.value)`
)

// closureUIDs returns the UIDs graphUIDs does for seeds alone, ordered,
// at most limit+1 of them. They are the seeds and their transitive owners
// and dependents, less the seeds that take no part. edges are the edges
// between the first limit of them, as graphEdges orders them. ok is false
// when the closure is more than graphWalkMax.
//
// It walks level by level, one query a level whatever its width. SQLite's
// recursive walk would keep each set in a temporary B-tree instead. The
// walk down reads the objects it reaches, so that it looks for the
// dependents of the owners among them only. nodes holds those objects, up
// to twice limit of them, as graphNodes makes them (namespaced: see
// namespacedKinds).
func closureUIDs(ctx context.Context, q querier, seeds []string, limit int, namespaced map[groupKind]bool) (
	uids []string, edges []GraphEdge, nodes map[string]GraphNode, ok bool, err error) {
	var refs []GraphEdge
	nodes = map[string]GraphNode{}
	down, ok, err := reach(ctx, seeds, graphWalkMax, func(frontier []string, add func(string)) error {
		// Only objects named as owners, and owners not mirrored, can have
		// dependents. Most objects of a tree are its leaves.
		var owners []string
		err := eachNodeRow(ctx, q, frontier, namespaced, func(i int, n GraphNode, mayOwn bool) error {
			if mayOwn {
				owners = append(owners, n.UID)
			}
			if !n.Missing && len(nodes) < 2*limit {
				nodes[n.UID] = n
			}
			return nil
		})
		if err != nil {
			return err
		}
		return stepDown(ctx, q, owners, func(e GraphEdge) {
			refs = append(refs, e)
			add(e.Dependent)
		})
	})
	if err != nil || !ok {
		return nil, nil, nil, ok, err
	}
	up, ok, err := reach(ctx, seeds, graphWalkMax-len(down), func(frontier []string, add func(string)) error {
		return stepUp(ctx, q, frontier, add)
	})
	if err != nil || !ok {
		return nil, nil, nil, ok, err
	}
	// The owners above the seeds have edges from dependents of theirs that
	// the walk down did not read. A step down from them reads those.
	var above []string
	for u := range up {
		if _, ok := down[u]; !ok {
			above = append(above, u)
			down[u] = struct{}{}
		}
	}
	if len(above) > 0 {
		if err := stepDown(ctx, q, above, func(e GraphEdge) { refs = append(refs, e) }); err != nil {
			return nil, nil, nil, false, err
		}
	}
	// A seed that takes no part is reached by no other's walk, so only the
	// seeds need the check.
	if err := eachString(ctx, q, sqlApart, func(uid string) { delete(down, uid) }, jsonOrNull(seeds)); err != nil {
		return nil, nil, nil, false, err
	}
	uids = make([]string, 0, len(down))
	for u := range down {
		uids = append(uids, u)
	}
	slices.Sort(uids)
	if len(uids) > limit+1 {
		uids = uids[:limit+1]
	}
	return uids, keptEdges(refs, uids[:min(limit, len(uids))], down), nodes, true, nil
}

// keptEdges returns the edges of refs between the nodes kept, in
// graphEdges' order. all holds every node of the walk, of which kept is
// the first part.
func keptEdges(refs []GraphEdge, kept []string, all map[string]struct{}) []GraphEdge {
	// Each owner's references came in its index's order (dependent,
	// position), and the sort keeps the positions of a dependent's
	// references to one owner in order.
	if len(kept) < len(all) {
		in := make(map[string]struct{}, len(kept))
		for _, u := range kept {
			in[u] = struct{}{}
		}
		refs = slices.DeleteFunc(refs, func(e GraphEdge) bool {
			_, dep := in[e.Dependent]
			_, owner := in[e.Owner]
			return !dep || !owner
		})
	} else {
		refs = slices.DeleteFunc(refs, func(e GraphEdge) bool {
			_, dep := all[e.Dependent]
			return !dep
		})
	}
	order := make([]int32, len(refs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &refs[a], &refs[b]
		return cmp.Or(strings.Compare(x.Dependent, y.Dependent), strings.Compare(x.Owner, y.Owner),
			cmp.Compare(a, b))
	})
	edges := make([]GraphEdge, len(order))
	for i, j := range order {
		edges[i] = refs[j]
	}
	return edges
}

// reach returns the seeds and every UID step reaches from them,
// transitively. Once more than max are reached, the walk stops and ok is
// false. step is given each level's UIDs, sorted, and adds those they lead
// to.
func reach(ctx context.Context, seeds []string, max int, step func(frontier []string, add func(string)) error) (
	map[string]struct{}, bool, error) {
	seen := make(map[string]struct{}, len(seeds))
	var frontier []string
	for _, s := range seeds {
		if _, ok := seen[s]; !ok {
			seen[s] = struct{}{}
			frontier = append(frontier, s)
		}
	}
	for len(frontier) > 0 {
		if len(seen) > max {
			return nil, false, nil
		}
		var next []string
		add := func(uid string) {
			if _, ok := seen[uid]; !ok {
				seen[uid] = struct{}{}
				next = append(next, uid)
			}
		}
		// Seeks in key order cost a sixth less, because they share the
		// pages on their way down.
		slices.Sort(frontier)
		if err := step(frontier, add); err != nil {
			return nil, false, err
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		frontier = next
	}
	return seen, len(seen) <= max, nil
}

// stepDown calls fn with each reference to one of owners, in the owner
// index's order. A wide step is split over a paired transaction (see
// splitRead).
func stepDown(ctx context.Context, q querier, owners []string, fn func(GraphEdge)) error {
	if len(owners) == 0 {
		return nil
	}
	var rest []GraphEdge // the second half's, after the first's
	read := func(ctx context.Context, q querier, keys []string, _, half int) error {
		rows, err := q.QueryContext(ctx, sqlDependentsOf, jsonOrNull(keys))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e GraphEdge
			var packed int64
			if err := rows.Scan(&e.Dependent, &packed); err != nil {
				return err
			}
			e.Owner, e.Controller, e.BlockOwnerDeletion = keys[packed>>2], packed&2 != 0, packed&1 != 0
			if half == 1 {
				rest = append(rest, e)
			} else {
				fn(e)
			}
		}
		return rows.Err()
	}
	if err := splitRead(ctx, q, owners, splitSteps, read); err != nil {
		return err
	}
	for _, e := range rest {
		fn(e)
	}
	return nil
}

// stepUp calls fn with the owner of each reference of one of dependents.
func stepUp(ctx context.Context, q querier, dependents []string, fn func(string)) error {
	return eachString(ctx, q, sqlOwnersOf, fn, jsonOrNull(dependents))
}
