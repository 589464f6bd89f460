package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// LookupFilter finds objects by kind and, optionally, namespace and name.
type LookupFilter struct {
	// Kind is matched as kubectl does, in any case. It is the kind, or the
	// resource's plural, or a short name discovery lists (deploy). A
	// singular is the lowercase kind. Each may be followed by "." and the
	// group (deployments.apps).
	Kind string
	// Group, when set, keeps only resources of that API group. It is a
	// pointer because "" is the core group.
	Group *string
	// Namespace keeps objects of namespaced kinds in that namespace.
	// Cluster-scoped kinds ignore it, as kubectl does.
	Namespace string
	Name      string
	// Limit bounds the result; 0 means 500.
	Limit int
}

// LookupObjects returns the objects f selects, with their owner references,
// ordered by namespace, name and group, and whether more matched than the
// limit. A kind no resource serves gives none.
func (d Objects) LookupObjects(ctx context.Context, f LookupFilter) ([]*Object, bool, error) {
	if f.Limit <= 0 {
		f.Limit = 500
	}
	var out []*Object
	truncated := false
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		ids, err := lookupResources(ctx, tx, f)
		if err != nil || len(ids) == 0 {
			return err
		}
		// objects_by_resource (resource_id, namespace, name) finds them.
		// SQLite's sort for ORDER BY … LIMIT keeps only limit+1 rows.
		where := []string{`o.resource_id IN (SELECT value FROM json_each(?))`}
		args := []any{jsonOrNull(ids)}
		if f.Namespace != "" {
			// Objects of cluster-scoped kinds, all in namespace "", match
			// whatever the namespace.
			where = append(where, `o.namespace IN (?, '')`)
			args = append(args, f.Namespace)
		}
		if f.Name != "" {
			where = append(where, `o.name = ?`)
			args = append(args, f.Name)
		}
		args = append(args, f.Limit+1)
		rows, err := tx.QueryContext(ctx, `SELECT `+objectColumns+` FROM objects o
			WHERE `+strings.Join(where, " AND ")+`
			ORDER BY o.namespace, o.name, `+groupSQL("o.api_version")+`, o.uid LIMIT ?`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			o, err := scanObject(rows)
			if err != nil {
				return err
			}
			out = append(out, o)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		if len(out) > f.Limit {
			out, truncated = out[:f.Limit], true
		}
		for _, o := range out {
			if o.OwnerReferences, err = ownerRefsOf(ctx, tx, o.UID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("lookup %s: %w", f.Kind, err)
	}
	return out, truncated, nil
}

// lookupResources returns the ids of the resources whose kind, plural or
// short name is f.Kind, in f.Group when set.
func lookupResources(ctx context.Context, q querier, f LookupFilter) ([]int64, error) {
	query := `SELECT id FROM resources WHERE (lower(?1) IN (lower(kind), resource,
		lower(kind) || '.' || api_group, resource || '.' || api_group)
		OR EXISTS (SELECT 1 FROM json_each(short_names) WHERE lower(value) = lower(?1)))`
	args := []any{f.Kind}
	if f.Group != nil {
		query += ` AND api_group = ?2`
		args = append(args, *f.Group)
	}
	rows, err := q.QueryContext(ctx, query+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
