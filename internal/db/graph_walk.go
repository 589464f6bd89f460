package db

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// allGraphUIDs lists every UID that takes part in the ownership graph, in
// order. It merges owner_refs' primary key and its owner index, with no
// sort. bound, when not empty, is "uid <= ?1", which cuts the list.
func allGraphUIDs(bound string) string {
	dep, own := "", ""
	if bound != "" {
		dep, own = " WHERE dependent_uid <= ?1", " WHERE owner_uid <= ?1"
	}
	return `SELECT dependent_uid AS uid FROM owner_refs` + dep + ` UNION SELECT owner_uid FROM owner_refs` + own
}

// GraphWalk receives the whole ownership graph from WalkGraph.
type GraphWalk struct {
	// Start is called first, and told whether the limit cut the graph.
	Start func(truncated bool) error
	// Node is called for each node, in UID order.
	Node func(GraphNode) error
	// Edge is called for each edge between the nodes, ordered by
	// dependent, then owner.
	Edge func(GraphEdge) error
}

// WalkGraph reads the whole ownership graph, its first limit nodes by UID,
// from one snapshot. It hands each node and edge to w as it reads it, so
// the graph of a million objects is never held in memory. The snapshot is
// held until the walk ends, so a slow reader delays checkpoints, not
// writes. The walk reads through the walks' own connections (see
// Options.StreamConns), so a slow reader holds none of the short reads'.
func (d Objects) WalkGraph(ctx context.Context, limit int, w GraphWalk) error {
	if limit <= 0 {
		limit = 10000
	}
	err := readTxOn(ctx, d.stream, func(tx *sql.Tx) error {
		// Read the last UID kept, and whether one follows it. The nodes and
		// the edges are then read up to it.
		query := `SELECT uid FROM (` + allGraphUIDs("") + `) ORDER BY uid LIMIT 2 OFFSET ?`
		rows, err := tx.QueryContext(ctx, query, limit-1)
		if err != nil {
			return err
		}
		var cut []string
		for rows.Next() {
			var uid string
			if err := rows.Scan(&uid); err != nil {
				rows.Close()
				return err
			}
			cut = append(cut, uid)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		truncated := len(cut) == 2
		if err := w.Start(truncated); err != nil {
			return err
		}
		var args []any
		bound := ""
		if truncated {
			bound, args = "uid <= ?1", []any{cut[0]}
		}
		from := `(` + allGraphUIDs(bound) + `) k`
		if err := scanGraphNodes(ctx, tx, from, "k.uid", "ORDER BY k.uid", args, "", w.Node); err != nil {
			return err
		}
		return walkEdges(ctx, tx, truncated, args, w.Edge)
	})
	if err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	return nil
}

// walkEdges reads the edges in owner_refs' primary key order (dependent,
// position), with no sort. It orders each dependent's few edges by owner
// before it hands them on.
func walkEdges(ctx context.Context, q querier, bounded bool, args []any, fn func(GraphEdge) error) error {
	query := `SELECT dependent_uid, owner_uid, coalesce(controller, 0), coalesce(block_owner_deletion, 0)
		FROM owner_refs`
	if bounded {
		query += ` WHERE dependent_uid <= ?1 AND owner_uid <= ?1`
	}
	rows, err := q.QueryContext(ctx, query+` ORDER BY dependent_uid, position`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var group []GraphEdge
	flush := func() error {
		slices.SortStableFunc(group, func(a, b GraphEdge) int { return cmp.Compare(a.Owner, b.Owner) })
		for _, e := range group {
			if err := fn(e); err != nil {
				return err
			}
		}
		group = group[:0]
		return nil
	}
	for rows.Next() {
		var e GraphEdge
		if err := rows.Scan(&e.Dependent, &e.Owner, &e.Controller, &e.BlockOwnerDeletion); err != nil {
			return err
		}
		if len(group) > 0 && group[0].Dependent != e.Dependent {
			if err := flush(); err != nil {
				return err
			}
		}
		group = append(group, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return flush()
}
