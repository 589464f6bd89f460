package db

import (
	"context"
	"database/sql"
	"fmt"
)

// NodeTTL is a node and its node.alpha.kubernetes.io/ttl annotation.
type NodeTTL struct {
	Object
	TTL *string // nil when the annotation is absent
}

const nodesWhere = ` FROM nodes n JOIN objects o ON o.uid = n.uid WHERE o.kind = 'Node' AND o.api_version = 'v1'`

// NodeUIDs returns the UIDs of the v1 Nodes.
func (d TTL) NodeUIDs(ctx context.Context) ([]string, error) {
	rows, err := d.query(ctx, `SELECT o.uid`+nodesWhere)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
		out = append(out, uid)
	}
	return out, rows.Err()
}

// NodeTTLCounts counts the nodes by the value of their TTL annotation.
// Nodes without one are not counted.
func (d TTL) NodeTTLCounts(ctx context.Context) (map[string]int, error) {
	rows, err := d.query(ctx, `SELECT n.ttl_annotation, count(*)`+nodesWhere+`
		AND n.ttl_annotation IS NOT NULL GROUP BY n.ttl_annotation`)
	if err != nil {
		return nil, fmt.Errorf("node ttl annotations: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var v string
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			return nil, fmt.Errorf("node ttl annotations: %w", err)
		}
		out[v] = n
	}
	return out, rows.Err()
}

// NodesNotAtTTL returns, by name, the v1 Nodes whose TTL annotation is not
// exactly ttl: absent, or another string. The ttl controller asks after
// every burst of node changes. So the query reads the small nodes table
// whole first, and looks up in objects only the nodes not at ttl, which are
// none once they all are. Through objects_by_name, every node cost two
// seeks: at 2,000 nodes, a tenth of a core while their status heartbeats
// came in.
func (d TTL) NodesNotAtTTL(ctx context.Context, ttl string) ([]NodeTTL, error) {
	rows, err := d.query(ctx, sqlNodesNotAtTTL, ttl)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	defer rows.Close()
	var out []NodeTTL
	for rows.Next() {
		var v sql.NullString
		o, err := scanObject(rows, &v)
		if err != nil {
			return nil, fmt.Errorf("nodes: %w", err)
		}
		n := NodeTTL{Object: *o}
		if v.Valid {
			n.TTL = &v.String
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

const sqlNodesNotAtTTL = `SELECT ` + objectColumns + `, n.ttl_annotation
	FROM nodes n CROSS JOIN objects o ON o.uid = n.uid
	WHERE (n.ttl_annotation IS NULL OR n.ttl_annotation != ?) AND o.kind = 'Node' AND o.api_version = 'v1'
	ORDER BY o.name`
