package db

import (
	"context"
	"database/sql"
	"fmt"
)

// KindCount is the number of mirrored objects of one API group and kind.
type KindCount struct {
	Group, Kind string
	Count       int
}

// OwnedCount is the number of mirrored objects of one group and kind with
// at least one ownerReference to an owner of another group and kind.
type OwnedCount struct {
	Group, Kind           string
	OwnerGroup, OwnerKind string
	Count                 int
}

// refGroup is the API group of an ownerReference's apiVersion: "" for the
// core group's "v1", "apps" for "apps/v1".
const refGroup = `CASE WHEN instr(r.api_version, '/') > 0
	THEN substr(r.api_version, 1, instr(r.api_version, '/') - 1) ELSE '' END`

// refGroupKey is equal for two apiVersions of one group: "apps/" for
// "apps/v1" and "apps/v1beta1", "" for "v1".
func refGroupKey(table string) string {
	return `substr(` + table + `.api_version, 1, instr(` + table + `.api_version, '/'))`
}

// ObjectCounts counts the mirrored objects by group and kind. Every
// mirrored resource's kind is included, with 0 when it has no object, so
// that a CRD without instances still has its series. It also counts the
// objects that name an owner, by their group and kind and their owner's. A
// dependent counts once per pair, however many owners of that kind it
// names, and once in each pair when its owners are of different kinds. The
// count answers "how many Ks does some OK own".
func (d Objects) ObjectCounts(ctx context.Context) (objects []KindCount, owned []OwnedCount, err error) {
	err = d.readTx(ctx, func(tx *sql.Tx) error {
		// Counting by resource_id first reads only the index on objects by
		// resource. Several resources (versions) of one kind add up.
		rows, err := tx.QueryContext(ctx, `SELECT res.api_group, res.kind, coalesce(sum(c.n), 0)
			FROM resources res
				LEFT JOIN (SELECT resource_id, count(*) AS n FROM objects GROUP BY resource_id) c
				ON c.resource_id = res.id
			GROUP BY res.api_group, res.kind ORDER BY res.api_group, res.kind`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var c KindCount
			if err := rows.Scan(&c.Group, &c.Kind, &c.Count); err != nil {
				rows.Close()
				return err
			}
			objects = append(objects, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Each dependent counts once per owner group and kind, by its first
		// reference to that pair. refGroupKey compares groups without
		// cutting the string. Counting the rows so chosen, grouped by the
		// columns as stored, costs half of count(DISTINCT) over the group
		// computed per row. The group is cut from the few rows left. A
		// dependent's UID is in one resource only, so the counts per
		// resource add up to counts per kind.
		rows, err = tx.QueryContext(ctx, `SELECT res.api_group, res.kind, `+refGroup+` AS owner_group, r.kind,
				sum(r.n)
			FROM (SELECT o.resource_id, r.api_version, r.kind, count(*) AS n
				FROM owner_refs r JOIN objects o ON o.uid = r.dependent_uid
				WHERE r.position = 0 OR NOT EXISTS (SELECT 1 FROM owner_refs e
					WHERE e.dependent_uid = r.dependent_uid AND e.position < r.position
						AND e.kind = r.kind AND `+refGroupKey("e")+` = `+refGroupKey("r")+`)
				GROUP BY o.resource_id, r.api_version, r.kind) r
			JOIN resources res ON res.id = r.resource_id
			GROUP BY res.api_group, res.kind, owner_group, r.kind
			ORDER BY res.api_group, res.kind, owner_group, r.kind`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c OwnedCount
			if err := rows.Scan(&c.Group, &c.Kind, &c.OwnerGroup, &c.OwnerKind, &c.Count); err != nil {
				return err
			}
			owned = append(owned, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("object counts: %w", err)
	}
	return objects, owned, nil
}
