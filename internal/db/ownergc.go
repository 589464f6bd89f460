package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// ObjectMeta returns an object's metadata without its owner references or
// typed columns, or ErrNotFound.
func (d OwnerGC) ObjectMeta(ctx context.Context, uid string) (*Object, error) {
	o, err := scanObject(d.queryRow(ctx, sqlObject, uid))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", uid, err)
	}
	return o, nil
}

// Dependent is an object whose ownerReferences name a given owner.
type Dependent struct {
	UID                string
	Kind               string
	Namespace          string
	Name               string
	BlockOwnerDeletion bool // on its reference to the owner
	Deleting           bool
	Finalizers         []string
}

// DependentsOf lists the objects that name ownerUID as an owner.
func (d OwnerGC) DependentsOf(ctx context.Context, ownerUID string) ([]Dependent, error) {
	rows, err := d.query(ctx, `SELECT o.uid, o.kind, o.namespace, o.name, coalesce(max(r.block_owner_deletion), 0),
			o.deletion_timestamp IS NOT NULL, o.finalizers
		FROM owner_refs r JOIN objects o ON o.uid = r.dependent_uid
		WHERE r.owner_uid = ? GROUP BY o.uid`, ownerUID)
	if err != nil {
		return nil, fmt.Errorf("dependents of %s: %w", ownerUID, err)
	}
	defer rows.Close()
	var out []Dependent
	for rows.Next() {
		var dep Dependent
		var fin sql.NullString
		if err := rows.Scan(&dep.UID, &dep.Kind, &dep.Namespace, &dep.Name, &dep.BlockOwnerDeletion,
			&dep.Deleting, &fin); err != nil {
			return nil, fmt.Errorf("dependents of %s: %w", ownerUID, err)
		}
		if fin.Valid {
			if err := json.Unmarshal([]byte(fin.String), &dep.Finalizers); err != nil {
				return nil, fmt.Errorf("dependents of %s: %w", ownerUID, err)
			}
		}
		out = append(out, dep)
	}
	return out, rows.Err()
}

// OwnerGCCandidates lists the objects the ownership garbage collector must
// look at. They are the dependents with an owner that is being deleted, or
// that is not in the mirror under that name, and the owners being deleted
// with the orphan or foregroundDeletion finalizer. Every other object has
// only solid owners or none, and needs nothing.
//
// It runs every resync period, so it reads no more than it must at any
// size. A reference whose owner is missing, or differs from it, is a lint
// candidate: migration 0007 keeps the mark, and its partial index lists
// them. The owners being deleted are in objects_deleting. A scan of every
// reference, joined to its owner, took half a second at 55,000 references
// every minute.
func (d OwnerGC) OwnerGCCandidates(ctx context.Context) ([]string, error) {
	rows, err := d.query(ctx, sqlOwnerGCCandidates)
	if err != nil {
		return nil, fmt.Errorf("ownergc candidates: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, fmt.Errorf("ownergc candidates: %w", err)
		}
		out = append(out, uid)
	}
	return out, rows.Err()
}

const sqlOwnerGCCandidates = `
	SELECT r.dependent_uid FROM owner_refs r INDEXED BY owner_refs_lint_candidates
		CROSS JOIN objects d ON d.uid = r.dependent_uid
		LEFT JOIN objects o ON o.uid = r.owner_uid
	WHERE r.lint_candidate AND (o.uid IS NULL OR o.name <> r.name OR o.kind <> r.kind
		-- a namespaced owner outside the dependent's namespace is not its owner
		OR (o.namespace <> '' AND o.namespace <> d.namespace))
	UNION
	SELECT r.dependent_uid FROM objects o INDEXED BY objects_deleting
		CROSS JOIN owner_refs r ON r.owner_uid = o.uid
		CROSS JOIN objects d ON d.uid = r.dependent_uid
	WHERE o.deletion_timestamp IS NOT NULL
	UNION
	SELECT o.uid FROM objects o INDEXED BY objects_deleting, json_each(o.finalizers) f
	WHERE o.deletion_timestamp IS NOT NULL AND f.value IN ('orphan', 'foregroundDeletion')`
