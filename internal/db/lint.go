package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// LintRef is one ownerReference with what the mirror knows around it: the
// facts the ownerReference lint rules (internal/diagnose) decide on.
type LintRef struct {
	Dependent        api.Target
	DependentCreated *time.Time
	Ref              api.OwnerRef
	// Owner is the mirrored object with the reference's UID, nil when there
	// is none.
	Owner *LintOwner
	// KindServed tells that some discovered resource serves the reference's
	// group and kind. KindNamespaced tells that one of them is namespaced.
	KindServed, KindNamespaced bool
	// SameNameUID is set when Owner is nil. It is the UID of an object of
	// the reference's group, kind and name where the owner would have to
	// be, in the dependent's namespace for a namespaced kind: a re-created
	// owner.
	SameNameUID string
	// EarlierControllers counts the dependent's references before this one
	// with controller: true. It is set only when this one has it too.
	EarlierControllers int
	// When Owner is nil, PendingSince is since when ownergc has had a
	// decision pending about the dependent, and OwnerDeletedAt is when
	// kubegcd deleted the owner, if it did. LintRefs leaves them out (see
	// FillDangling), and LintRefsOf reads them.
	PendingSince, OwnerDeletedAt *time.Time
}

// Clone returns a copy of l that LintRefs does not reuse.
func (l *LintRef) Clone() *LintRef {
	c := *l
	if l.Owner != nil {
		o := *l.Owner
		c.Owner = &o
	}
	return &c
}

// LintOwner is what the lint rules need of a mirrored owner.
type LintOwner struct {
	api.Target
	Deleting bool
}

// groupSQL is the API group of an apiVersion column: "" for the core group.
func groupSQL(col string) string {
	slash := `instr(` + col + `, '/')`
	return `(CASE WHEN ` + slash + ` > 0 THEN substr(` + col + `, 1, ` + slash + ` - 1) ELSE '' END)`
}

// earlierControllers counts the references of r's dependent before r that
// have controller: true. Only a later reference can have one, so the
// subquery rarely runs.
const earlierControllers = `CASE WHEN r.controller AND r.position > 0 THEN (
	SELECT count(*) FROM owner_refs c
	WHERE c.dependent_uid = r.dependent_uid AND c.position < r.position AND c.controller) ELSE 0 END`

// sqlLintRefs reads the ownerReferences some lint rule may apply to, from
// the dependents and references that from joins. CROSS JOIN fixes the loop
// order, so that orderBy costs no sort of the whole result. Each reference
// is joined to the owner with its UID through the primary key.
//
// It reads only the references the mirror keeps marked as lint candidates.
// Migration 0007 keeps the mark as objects and references change. Most
// references are not findings, and joining each of them to its dependent
// and owner costs more than the whole lint of the few that may be. The mark
// must let through every reference diagnose.CheckRef flags.
//
// The lookups that only some rules need run only for them, each through an
// index: objects_by_name, owner_refs' primary key and, with dangling,
// pending's and audit_by_uid. Without dangling, PendingSince and
// OwnerDeletedAt are left out: they only enrich the words of the findings a
// report keeps (see FillDangling).
//
// The kinds are resolved in Go (lintKinds), because a join per row costs
// more.
func sqlLintRefs(from, orderBy string, dangling bool) string {
	whenGone := `NULL, NULL`
	if dangling {
		whenGone = `CASE WHEN o.uid IS NULL THEN (` + sqlPendingSince("d.uid") + `) END,
		CASE WHEN o.uid IS NULL THEN (` + sqlOwnerDeletedAt("r.owner_uid") + `) END`
	}
	return `
	SELECT d.uid, d.api_version, d.kind, d.namespace, d.name, d.creation_timestamp,
		r.api_version, r.kind, r.name, r.owner_uid, r.controller, r.block_owner_deletion,
		o.uid IS NOT NULL, coalesce(o.api_version, ''), coalesce(o.kind, ''), coalesce(o.namespace, ''),
		coalesce(o.name, ''), o.deletion_timestamp IS NOT NULL,
		CASE WHEN o.uid IS NULL THEN coalesce(` + sameName("d.namespace") + `, ` + sameName("''") + `) END,
		` + earlierControllers + `,
		` + whenGone + `
	FROM ` + from + `
		LEFT JOIN objects o ON o.uid = r.owner_uid
	WHERE r.lint_candidate
	ORDER BY ` + orderBy
}

// sameName is the least UID of the objects in namespace, an expression,
// with r's group, kind and name. A kind is namespaced or not for all its
// objects, so the owner of a dangling reference would be in its dependent's
// namespace or in none. sqlLintRefs looks in the dependent's namespace
// first, through objects_by_name, and in none only when that finds nothing.
// A re-created namespaced owner then costs one seek instead of two.
func sameName(namespace string) string {
	return `(SELECT min(s.uid) FROM objects s
		WHERE s.kind = r.kind AND s.namespace = ` + namespace + ` AND s.name = r.name
		AND ` + groupSQL("s.api_version") + ` = ` + groupSQL("r.api_version") + `)`
}

// sqlPendingSince and sqlOwnerDeletedAt read what the mirror knows of when
// a reference began to dangle: since when ownergc has had a decision
// pending about the dependent, and when kubegcd deleted the owner. Each
// takes the expression of a UID.
func sqlPendingSince(dependentUID string) string {
	return `SELECT min(p.since) FROM pending p WHERE p.controller = 'ownergc' AND p.uid = ` + dependentUID
}

func sqlOwnerDeletedAt(ownerUID string) string {
	return `SELECT max(a.time) FROM audit a
		WHERE a.uid = ` + ownerUID + ` AND a.action = 'delete' AND a.outcome IN ('applied', 'not-found')`
}

var (
	// The whole mirror: one pass over the candidates' partial index.
	sqlLintAll = sqlLintRefs(`owner_refs r INDEXED BY owner_refs_lint_candidates
		CROSS JOIN objects d ON d.uid = r.dependent_uid`, `r.dependent_uid, r.position`, false)
	// A namespace's objects are found through objects_by_resource, one seek
	// per resource, and their references through owner_refs' primary key.
	// Nothing scans the whole mirror.
	sqlLintNamespace = sqlLintRefs(`resources res
		CROSS JOIN objects d ON d.resource_id = res.id AND d.namespace = ?1
		CROSS JOIN owner_refs r ON r.dependent_uid = d.uid`, `res.id, d.name, r.position`, false)
)

// LintRefs calls fn with the ownerReferences that some lint rule may apply
// to, of the objects in namespace, or of every object when namespace is "".
// It calls fn as the rows come, so memory does not grow with the mirror. fn
// must not keep the *LintRef, which is reused.
func (d Objects) LintRefs(ctx context.Context, namespace string, fn func(*LintRef) error) error {
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
func (d *core) lintRefs(ctx context.Context, query string, args []any, fn func(*LintRef) error) error {
	return d.readTx(ctx, func(tx *sql.Tx) error {
		kinds, err := namespacedKinds(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, query, args...)
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
			dep := &l.Dependent
			if err := rows.Scan(&dep.UID, &dep.APIVersion, &dep.Kind, &dep.Namespace, &dep.Name, &created,
				&l.Ref.APIVersion, &l.Ref.Kind, &l.Ref.Name, &l.Ref.UID, &controller, &block,
				&hasOwner, &owner.APIVersion, &owner.Kind, &owner.Namespace, &owner.Name,
				&owner.Deleting, &sameName, &l.EarlierControllers, &pending, &deleted); err != nil {
				return err
			}
			l.DependentCreated = parseTime(created)
			l.Ref.Controller, l.Ref.BlockOwnerDeletion = nullBool(controller), nullBool(block)
			l.KindNamespaced, l.KindServed = kinds[groupKind{gcrules.Group(l.Ref.APIVersion), l.Ref.Kind}]
			l.Owner = nil
			if hasOwner {
				owner.UID = l.Ref.UID
				l.Owner = &owner
			}
			l.SameNameUID = ""
			if l.KindServed {
				l.SameNameUID = sameName.String
			}
			l.PendingSince, l.OwnerDeletedAt = parseTime(pending), parseTime(deleted)
			if err := fn(&l); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// FillDangling reads PendingSince and OwnerDeletedAt of refs whose owner
// is not mirrored, in one query.
func (d Objects) FillDangling(ctx context.Context, refs []*LintRef) error {
	var keys [][2]string
	for _, l := range refs {
		if l.Owner == nil {
			keys = append(keys, [2]string{l.Dependent.UID, l.Ref.UID})
		}
	}
	if len(keys) == 0 {
		return nil
	}
	rows, err := d.query(ctx, `SELECT k.uid, k.owner_uid, (`+sqlPendingSince("k.uid")+`),
			(`+sqlOwnerDeletedAt("k.owner_uid")+`)
		FROM (SELECT DISTINCT value ->> 0 AS uid, value ->> 1 AS owner_uid FROM json_each(?)) AS k`,
		jsonOrNull(keys))
	if err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	defer rows.Close()
	type facts struct{ pending, deleted *time.Time }
	got := map[[2]string]facts{}
	for rows.Next() {
		var k [2]string
		var pending, deleted sql.NullString
		if err := rows.Scan(&k[0], &k[1], &pending, &deleted); err != nil {
			return fmt.Errorf("lint: %w", err)
		}
		got[k] = facts{parseTime(pending), parseTime(deleted)}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("lint: %w", err)
	}
	for _, l := range refs {
		if l.Owner == nil {
			f := got[[2]string{l.Dependent.UID, l.Ref.UID}]
			l.PendingSince, l.OwnerDeletedAt = f.pending, f.deleted
		}
	}
	return nil
}

// sqlLintObject reads one object's ownerReferences through the primary keys
// of objects and owner_refs, for /objects/{uid}.
var sqlLintObject = sqlLintRefs(`objects d CROSS JOIN owner_refs r ON r.dependent_uid = d.uid AND d.uid = ?1`,
	`r.position`, true)

// LintRefsOf is LintRefs for the ownerReferences of the object with uid.
func (d Objects) LintRefsOf(ctx context.Context, uid string, fn func(*LintRef) error) error {
	if err := d.lintRefs(ctx, sqlLintObject, []any{uid}, fn); err != nil {
		return fmt.Errorf("lint of %s: %w", uid, err)
	}
	return nil
}
