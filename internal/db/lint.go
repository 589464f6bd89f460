package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// LintRef is one ownerReference with what the mirror knows around it: the
// facts the ownerReference lint rules (internal/diagnose) decide on.
type LintRef struct {
	Dependent        Target
	DependentCreated *time.Time
	Ref              OwnerRef
	// Owner is the mirrored object with the reference's UID, nil when there
	// is none.
	Owner *LintOwner
	// KindServed: some discovered resource serves the reference's group and
	// kind; KindNamespaced: one of them is namespaced.
	KindServed, KindNamespaced bool
	// SameNameUID is, when Owner is nil, the UID of an object of the
	// reference's group, kind and name where the owner would have to be (the
	// dependent's namespace for a namespaced kind): a re-created owner.
	SameNameUID string
	// EarlierControllers counts the dependent's references before this one
	// with controller: true; set only when this one has it too.
	EarlierControllers int
	// When Owner is nil: since when ownergc has a decision pending about the
	// dependent, and when kubegcd deleted the owner, if it did.
	PendingSince, OwnerDeletedAt *time.Time
}

// LintOwner is what the lint rules need of a mirrored owner.
type LintOwner struct {
	Target
	Deleting bool
}

// groupSQL is the API group of an apiVersion column: "" for the core group.
func groupSQL(col string) string {
	return `(CASE WHEN instr(` + col + `, '/') > 0 THEN substr(` + col + `, 1, instr(` + col + `, '/') - 1) ELSE '' END)`
}

// earlierControllers counts r's dependent's references before r with
// controller: true; only a later reference can have one, so the subquery
// rarely runs.
const earlierControllers = `CASE WHEN r.controller AND r.position > 0 THEN (
	SELECT count(*) FROM owner_refs c
	WHERE c.dependent_uid = r.dependent_uid AND c.position < r.position AND c.controller) ELSE 0 END`

// sqlLintRefs reads the ownerReferences some lint rule may apply to, from
// the dependents and references that from joins (CROSS JOIN fixes the loop
// order, so that orderBy costs no sort of the whole result), each joined to
// the owner with its UID through the primary key. The WHERE clause passes on only references that may be findings
// (most are not, and reading a row into Go costs more than SQLite's whole
// join); it must let through every reference diagnose.CheckRef flags. The
// lookups that only some rules need run only for them, each through an
// index: objects_by_name, owner_refs' primary key, pending's, audit_by_uid.
func sqlLintRefs(from, orderBy string) string {
	return `
	WITH kinds AS (SELECT api_group, kind, max(namespaced) AS namespaced FROM resources GROUP BY api_group, kind)
	SELECT d.uid, d.api_version, d.kind, d.namespace, d.name, d.creation_timestamp,
		r.api_version, r.kind, r.name, r.owner_uid, r.controller, r.block_owner_deletion,
		o.uid IS NOT NULL, coalesce(o.api_version, ''), coalesce(o.kind, ''), coalesce(o.namespace, ''),
		coalesce(o.name, ''), o.deletion_timestamp IS NOT NULL,
		k.kind IS NOT NULL, coalesce(k.namespaced, 0),
		CASE WHEN o.uid IS NULL AND k.kind IS NOT NULL THEN (
			SELECT s.uid FROM objects s
			WHERE s.kind = r.kind AND s.name = r.name
				AND s.namespace = CASE WHEN k.namespaced THEN d.namespace ELSE '' END
				AND ` + groupSQL("s.api_version") + ` = k.api_group
			ORDER BY s.uid LIMIT 1) END,
		` + earlierControllers + `,
		CASE WHEN o.uid IS NULL THEN (
			SELECT min(p.since) FROM pending p WHERE p.controller = 'ownergc' AND p.uid = d.uid) END,
		CASE WHEN o.uid IS NULL THEN (
			SELECT max(a.time) FROM audit a
			WHERE a.uid = r.owner_uid AND a.action = 'delete' AND a.outcome IN ('applied', 'not-found')) END
	FROM ` + from + `
		LEFT JOIN objects o ON o.uid = r.owner_uid
		LEFT JOIN kinds k ON k.api_group = ` + groupSQL("r.api_version") + ` AND k.kind = r.kind
	WHERE (
		o.uid IS NULL OR k.kind IS NULL
		OR (d.namespace = '' AND k.namespaced)
		OR (o.namespace <> '' AND o.namespace <> d.namespace)
		OR o.kind <> r.kind OR o.name <> r.name
		OR (o.api_version <> r.api_version AND ` + groupSQL("o.api_version") + ` <> ` + groupSQL("r.api_version") + `)
		OR (r.block_owner_deletion AND NOT coalesce(r.controller, 0) AND o.deletion_timestamp IS NULL)
		OR ` + earlierControllers + ` > 0)
	ORDER BY ` + orderBy
}

var (
	// The whole mirror: one pass over owner_refs' primary key.
	sqlLintAll = sqlLintRefs(`owner_refs r CROSS JOIN objects d ON d.uid = r.dependent_uid`, `r.dependent_uid, r.position`)
	// A namespace's objects are found through objects_by_resource, one
	// seek per resource, and their references through owner_refs' primary
	// key: no scan of the whole mirror.
	sqlLintNamespace = sqlLintRefs(`resources res
		CROSS JOIN objects d ON d.resource_id = res.id AND d.namespace = ?1
		CROSS JOIN owner_refs r ON r.dependent_uid = d.uid`, `res.id, d.name, r.position`)
)

// LintRefs calls fn with the ownerReferences of the objects in namespace
// (every object when "") that some lint rule may apply to, as the rows
// come: memory does not grow with the mirror. fn must not keep the
// *LintRef, which is reused.
func (d *DB) LintRefs(ctx context.Context, namespace string, fn func(*LintRef) error) error {
	query, args := sqlLintAll, []any{}
	if namespace != "" {
		query, args = sqlLintNamespace, []any{namespace}
	}
	if err := d.lintRefs(ctx, query, args, fn); err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	return nil
}

// lintRefs runs query, one of sqlLintRefs', and calls fn with each row.
func (d *DB) lintRefs(ctx context.Context, query string, args []any, fn func(*LintRef) error) error {
	// One statement reads one snapshot: no transaction is needed.
	rows, err := d.query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		l                         LintRef
		owner                     LintOwner
		hasOwner                  bool
		created, pending, deleted sql.NullString
		sameName                  sql.NullString
		controller, block         sql.NullBool
	)
	for rows.Next() {
		if err := rows.Scan(&l.Dependent.UID, &l.Dependent.APIVersion, &l.Dependent.Kind, &l.Dependent.Namespace,
			&l.Dependent.Name, &created,
			&l.Ref.APIVersion, &l.Ref.Kind, &l.Ref.Name, &l.Ref.UID, &controller, &block,
			&hasOwner, &owner.APIVersion, &owner.Kind, &owner.Namespace, &owner.Name, &owner.Deleting,
			&l.KindServed, &l.KindNamespaced, &sameName, &l.EarlierControllers, &pending, &deleted); err != nil {
			return err
		}
		l.DependentCreated = parseTime(created)
		l.Ref.Controller, l.Ref.BlockOwnerDeletion = nullBoolPtr(controller), nullBoolPtr(block)
		l.Owner = nil
		if hasOwner {
			owner.UID = l.Ref.UID
			l.Owner = &owner
		}
		l.SameNameUID = sameName.String
		l.PendingSince, l.OwnerDeletedAt = parseTime(pending), parseTime(deleted)
		if err := fn(&l); err != nil {
			return err
		}
	}
	return rows.Err()
}

func nullBoolPtr(b sql.NullBool) *bool {
	if !b.Valid {
		return nil
	}
	v := b.Bool
	return &v
}
