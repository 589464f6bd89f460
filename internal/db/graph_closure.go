package db

import (
	"context"
	"slices"
)

// graphWalkMax bounds the UIDs a walk from seeds gathers in memory (some
// 100 bytes each); a larger closure is walked again by SQLite, whose sets
// stay in its temporary storage.
const graphWalkMax = 200_000

const (
	// sqlDependentsOf and sqlOwnersOf step a walk: one seek per UID of the
	// JSON array ?1, through owner_refs' owner index and primary key.
	sqlDependentsOf = `SELECT r.dependent_uid FROM json_each(?1) k CROSS JOIN owner_refs r ON r.owner_uid = k.value`
	sqlOwnersOf     = `SELECT r.owner_uid FROM json_each(?1) k CROSS JOIN owner_refs r ON r.dependent_uid = k.value`
	// sqlApart lists the UIDs of ?1 that have no owner and are no one's.
	sqlApart = `SELECT s.value FROM json_each(?1) s
		WHERE NOT EXISTS (SELECT 1 FROM owner_refs p WHERE p.dependent_uid = s.value)
			AND NOT EXISTS (SELECT 1 FROM owner_refs p WHERE p.owner_uid = s.value)`
)

// closureUIDs returns the UIDs graphUIDs does for seeds alone (seeds,
// their transitive owners and dependents, less the seeds that take no
// part), ordered, at most limit+1 of them. It walks level by level, a
// query per level whatever its width, instead of SQLite's recursive
// walk, which keeps each set in a temporary B-tree; ok is false when the
// closure is more than graphWalkMax.
func closureUIDs(ctx context.Context, q querier, seeds []string, limit int) (uids []string, ok bool, err error) {
	down, ok, err := reach(ctx, q, sqlDependentsOf, seeds, graphWalkMax)
	if err != nil || !ok {
		return nil, ok, err
	}
	up, ok, err := reach(ctx, q, sqlOwnersOf, seeds, graphWalkMax-len(down))
	if err != nil || !ok {
		return nil, ok, err
	}
	for u := range up {
		down[u] = struct{}{}
	}
	// A seed that takes no part is reached by no other's walk: only the
	// seeds need the check.
	rows, err := q.QueryContext(ctx, sqlApart, jsonOrNull(seeds))
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, false, err
		}
		delete(down, uid)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	uids = make([]string, 0, len(down))
	for u := range down {
		uids = append(uids, u)
	}
	slices.Sort(uids)
	if len(uids) > limit+1 {
		uids = uids[:limit+1]
	}
	return uids, true, nil
}

// reach returns the seeds and every UID step (sqlDependentsOf or
// sqlOwnersOf) reaches from them, transitively; ok is false, and the walk
// stops, once more than max are reached.
func reach(ctx context.Context, q querier, step string, seeds []string, max int) (map[string]struct{}, bool, error) {
	seen := make(map[string]struct{}, len(seeds))
	for _, s := range seeds {
		seen[s] = struct{}{}
	}
	frontier := seeds
	for len(frontier) > 0 {
		if len(seen) > max {
			return nil, false, nil
		}
		rows, err := q.QueryContext(ctx, step, jsonOrNull(frontier))
		if err != nil {
			return nil, false, err
		}
		var next []string
		for rows.Next() {
			var uid string
			if err := rows.Scan(&uid); err != nil {
				rows.Close()
				return nil, false, err
			}
			if _, ok := seen[uid]; !ok {
				seen[uid] = struct{}{}
				next = append(next, uid)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, false, err
		}
		frontier = next
	}
	return seen, len(seen) <= max, nil
}
