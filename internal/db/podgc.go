package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Queries of the podgc controller.
//
// A pod is terminated when its phase is neither Pending, Running nor
// Unknown, so an empty phase is terminated too, as upstream counts it. Pods
// are deleted in upstream's order: Evicted first, then the oldest
// creationTimestamp, then by name. The uid breaks the last ties, so the
// order is total and pages never overlap.

const (
	podColumns      = objectColumns + `, p.phase, p.reason, p.node_name, p.generation, ` + evictedRank
	podFrom         = ` FROM pods p JOIN objects o ON o.uid = p.uid`
	terminatedWhere = `p.phase NOT IN ('Pending', 'Running', 'Unknown')`
	evictedRank     = `(CASE WHEN p.phase = 'Failed' AND p.reason = 'Evicted' THEN 0 ELSE 1 END)`
	podOrderKey     = evictedRank + `, coalesce(o.creation_timestamp, ''), o.name, o.uid`
	// nodeInMirror matches the v1 Node a pod's spec.nodeName names.
	nodeInMirror = `SELECT 1 FROM objects no WHERE no.kind = 'Node' AND no.namespace = '' AND no.name = p.node_name
		AND no.api_version = 'v1'`
)

// PodCursor is a position in the deletion order.
type PodCursor struct {
	evictedRank int
	created     string
	name, uid   string
}

func cursorOf(o *Object) *PodCursor {
	c := &PodCursor{o.Pod.evictedRank, "", o.Name, o.UID}
	if t := formatTime(o.CreationTimestamp); t != nil {
		c.created = t.(string)
	}
	return c
}

func scanPods(rows *sql.Rows) ([]*Object, error) {
	defer rows.Close()
	var out []*Object
	for rows.Next() {
		p := &Pod{}
		o, err := scanObject(rows, &p.Phase, &p.Reason, &p.NodeName, &p.Generation, &p.evictedRank)
		if err != nil {
			return nil, err
		}
		o.Pod = p
		out = append(out, o)
	}
	return out, rows.Err()
}

// queryPods runs a query of podColumns.
func (d *core) queryPods(ctx context.Context, what, where string, args ...any) ([]*Object, error) {
	return d.queryPodsSQL(ctx, what, `SELECT `+podColumns+podFrom+` WHERE `+where, args...)
}

// queryPodsSQL runs query, which selects podColumns, and scans the pods.
func (d *core) queryPodsSQL(ctx context.Context, what, query string, args ...any) ([]*Object, error) {
	rows, err := d.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	pods, err := scanPods(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return pods, nil
}

// TerminatedFilter narrows the terminated pods looked at.
type TerminatedFilter struct {
	// Namespace, when set, limits to one namespace.
	Namespace string
	// CreatedBefore, when set, keeps only pods created before it.
	CreatedBefore *time.Time
}

func (f TerminatedFilter) where() (string, []any) {
	conds, args := []string{terminatedWhere}, []any{}
	if f.Namespace != "" {
		conds = append(conds, "o.namespace = ?")
		args = append(args, f.Namespace)
	}
	if f.CreatedBefore != nil {
		conds = append(conds, "o.creation_timestamp < ?")
		args = append(args, formatTime(f.CreatedBefore))
	}
	return strings.Join(conds, " AND "), args
}

// CountTerminatedPods counts the terminated pods f selects. Each podgc pass
// counts them all against the threshold. Unfiltered, the count reads
// pods_by_phase alone: a pod's row exists only with its object's, so the
// join would only cost a seek per terminated pod.
func (d PodGC) CountTerminatedPods(ctx context.Context, f TerminatedFilter) (int, error) {
	query, args := sqlCountTerminated, []any(nil)
	if f != (TerminatedFilter{}) {
		var where string
		where, args = f.where()
		query = `SELECT count(*)` + podFrom + ` WHERE ` + where
	}
	var n int
	if err := d.queryRow(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting terminated pods: %w", err)
	}
	return n, nil
}

// sqlCountTerminated counts the ranges of pods_by_phase between the three
// phases that are not terminated (terminatedWhere's, in byte order), so it
// reads the terminated pods' entries alone. The whole index it read before held every running pod: 150,000
// entries took 25 ms a pass, every 20 s, to count none.
const sqlCountTerminated = `SELECT (SELECT count(*) FROM pods WHERE phase < 'Pending')
	+ (SELECT count(*) FROM pods WHERE phase > 'Pending' AND phase < 'Running')
	+ (SELECT count(*) FROM pods WHERE phase > 'Running' AND phase < 'Unknown')
	+ (SELECT count(*) FROM pods WHERE phase > 'Unknown')`

// TerminatedPods returns up to limit terminated pods f selects, in deletion
// order, and the cursor of the last one returned. It starts after the
// cursor after, or from the first pod when after is nil.
func (d PodGC) TerminatedPods(ctx context.Context, f TerminatedFilter, after *PodCursor, limit int) (
	[]*Object, *PodCursor, error) {
	where, args := f.where()
	if after != nil {
		where += ` AND (` + podOrderKey + `) > (?, ?, ?, ?)`
		args = append(args, after.evictedRank, after.created, after.name, after.uid)
	}
	where += ` ORDER BY ` + podOrderKey + ` LIMIT ?`
	pods, err := d.queryPods(ctx, "terminated pods", where, append(args, limit)...)
	if err != nil || len(pods) == 0 {
		return pods, after, err
	}
	return pods, cursorOf(pods[len(pods)-1]), nil
}

// TerminatingPodsOnOutOfServiceNodes returns the pods being deleted on
// nodes that are not Ready and carry the taint key outOfService, in
// deletion order.
func (d PodGC) TerminatingPodsOnOutOfServiceNodes(ctx context.Context, outOfService string) ([]*Object, error) {
	return d.queryPods(ctx, "terminating pods on out-of-service nodes",
		`o.deletion_timestamp IS NOT NULL AND p.node_name != ''
		AND EXISTS (`+nodeInMirror+` AND EXISTS (SELECT 1 FROM nodes n
			WHERE n.uid = no.uid AND n.ready != 'True'
			AND EXISTS (SELECT 1 FROM json_each(n.taints) t WHERE json_extract(t.value, '$.key') = ?)))
		ORDER BY `+podOrderKey, outOfService)
}

// MissingNodes returns the node names pods are bound to that the mirror
// does not hold. It looks each name up once, not once per pod: the distinct
// names come first, from pods_by_node. At 50,000 pods on 2,000 nodes, that
// took a seventh of the time, every podgc pass.
//
// Reading the distinct names by seeking pods_by_node from each name to the
// next cost more in the scale benchmark (25 pods a node), where a pass
// finds every page cold (49 ms against 32): the seeks read the same leaves
// as the scan, and search each.
func (d PodGC) MissingNodes(ctx context.Context) ([]string, error) {
	rows, err := d.query(ctx, sqlMissingNodes)
	if err != nil {
		return nil, fmt.Errorf("missing nodes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("missing nodes: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

const sqlMissingNodes = `SELECT p.node_name FROM (SELECT DISTINCT node_name FROM pods WHERE node_name != '') p
	WHERE NOT EXISTS (` + nodeInMirror + `) ORDER BY p.node_name`

// PodsOnNode returns the pods bound to node, in deletion order.
func (d PodGC) PodsOnNode(ctx context.Context, node string) ([]*Object, error) {
	return d.queryPods(ctx, "pods on node "+node, `p.node_name = ? ORDER BY `+podOrderKey, node)
}

// sqlUnscheduledTerminating reads the pods being deleted that are bound to
// no node. It starts from the objects being deleted, by objects_deleting,
// and finds each one's pod by UID. Without statistics SQLite starts from
// pods_by_node instead, and reads every unscheduled pod: 20,000 pods
// pending on a cluster short of nodes took 90 ms a pass, every 20 s. Few
// objects are being deleted at once.
const sqlUnscheduledTerminating = `SELECT ` + podColumns + `
	FROM objects o INDEXED BY objects_deleting CROSS JOIN pods p ON p.uid = o.uid
	WHERE o.deletion_timestamp IS NOT NULL AND p.node_name = ''
	ORDER BY ` + podOrderKey

// UnscheduledTerminatingPods returns the pods being deleted that are bound
// to no node.
func (d PodGC) UnscheduledTerminatingPods(ctx context.Context) ([]*Object, error) {
	return d.queryPodsSQL(ctx, "unscheduled terminating pods", sqlUnscheduledTerminating)
}
