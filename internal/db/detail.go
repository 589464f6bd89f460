package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// OwnerRow is one of an object's ownerReferences, with the object the
// mirror holds under its UID (nil when none), and whether discovery knows
// the reference's kind as namespaced. The diagnosis tells what that makes
// of the owner (diagnose.OwnerStates).
type OwnerRow struct {
	Ref            api.OwnerRef
	Owner          *Object
	KindNamespaced bool
}

// DependentInfo is an object that names a given owner.
type DependentInfo struct {
	UID                string
	APIVersion         string
	Kind               string
	Namespace          string
	Name               string
	BlockOwnerDeletion bool // on any of its references to the owner
}

// ObjectDetail is what the mirror knows around one object.
type ObjectDetail struct {
	Object              *Object
	Owners              []OwnerRow
	Dependents          []DependentInfo
	DependentsTruncated bool
	Pending             []Pending
}

// ObjectDetail returns an object with its owners as mirrored, up to
// maxDependents of its dependents, and the decisions pending about it, from
// one snapshot. It returns ErrNotFound when the object is not mirrored.
func (d Objects) ObjectDetail(ctx context.Context, uid string, maxDependents int) (*ObjectDetail, error) {
	var out *ObjectDetail
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		o, err := scanObject(tx.QueryRowContext(ctx, sqlObject, uid))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if o.OwnerReferences, err = ownerRefsOf(ctx, tx, uid); err != nil {
			return err
		}
		out = &ObjectDetail{Object: o}
		if out.Owners, err = ownerRows(ctx, tx, o); err != nil {
			return err
		}
		if out.Dependents, err = dependentsOf(ctx, tx, uid, maxDependents+1); err != nil {
			return err
		}
		if len(out.Dependents) > maxDependents {
			out.Dependents, out.DependentsTruncated = out.Dependents[:maxDependents], true
		}
		out.Pending, err = pendingFor(ctx, tx, uid)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", uid, err)
	}
	return out, nil
}

func ownerRefsOf(ctx context.Context, q querier, uid string) ([]api.OwnerRef, error) {
	rows, err := q.QueryContext(ctx, sqlOwnerRefsOf, uid)
	if err != nil {
		return nil, err
	}
	return scanOwnerRefs(rows)
}

// ownerRows reads the objects o's owner references name.
func ownerRows(ctx context.Context, q querier, o *Object) ([]OwnerRow, error) {
	out := []OwnerRow{}
	if len(o.OwnerReferences) == 0 {
		return out, nil
	}
	namespaced, err := namespacedKinds(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, ref := range o.OwnerReferences {
		gk := groupKind{gcrules.Group(ref.APIVersion), ref.Kind}
		row := OwnerRow{Ref: ref, KindNamespaced: namespaced[gk]}
		owner, err := scanObject(q.QueryRowContext(ctx, sqlObject, ref.UID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, err
		default:
			row.Owner = owner
		}
		out = append(out, row)
	}
	return out, nil
}

// dependentsOf reads up to limit objects that name uid as an owner.
func dependentsOf(ctx context.Context, q querier, uid string, limit int) ([]DependentInfo, error) {
	rows, err := q.QueryContext(ctx, `SELECT o.uid, o.api_version, o.kind, o.namespace, o.name,
			coalesce(max(r.block_owner_deletion), 0)
		FROM owner_refs r JOIN objects o ON o.uid = r.dependent_uid
		WHERE r.owner_uid = ? GROUP BY o.uid ORDER BY o.namespace, o.kind, o.name, o.uid LIMIT ?`, uid, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []DependentInfo{}
	for rows.Next() {
		var dep DependentInfo
		if err := rows.Scan(&dep.UID, &dep.APIVersion, &dep.Kind, &dep.Namespace, &dep.Name,
			&dep.BlockOwnerDeletion); err != nil {
			return nil, err
		}
		out = append(out, dep)
	}
	return out, rows.Err()
}

// pendingFor reads the decisions pending about uid.
func pendingFor(ctx context.Context, q querier, uid string) ([]Pending, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+pendingColumns+` FROM pending WHERE uid = ?
		ORDER BY since, controller, action`, uid)
	if err != nil {
		return nil, err
	}
	return scanPending(rows)
}
