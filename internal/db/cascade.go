package db

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// CascadeOwner is what the mirror shows of the object with an owner
// reference's UID.
type CascadeOwner struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Deleting   bool
	Finalizers []string
}

// CascadeRef is one ownerReference with its owner as mirrored, nil when no
// mirrored object has that UID.
type CascadeRef struct {
	OwnerRef
	Owner    *CascadeOwner
	position int64 // in metadata.ownerReferences
}

// CascadeObject is one object of the subgraph a cascade preview walks.
type CascadeObject struct {
	Target
	Deleting      bool
	Finalizers    []string
	Refs          []CascadeRef
	HasDependents bool
}

// CascadeFacts is what a cascade preview decides from: an object and its
// transitive dependents, each with every owner reference and owner, from
// one snapshot of the mirror.
type CascadeFacts struct {
	// Objects: the root first, then its transitive dependents, each once.
	Objects []*CascadeObject
	// Truncated: the root has more transitive dependents than the limit.
	Truncated bool
	// Kinds maps every discovered group and kind to whether it is
	// namespaced; a kind it lacks is not served.
	Kinds map[CascadeKind]bool
}

// CascadeKind names a kind across its versions.
type CascadeKind struct{ Group, Kind string }

// Cascade reads the object uid and up to limit of its transitive
// dependents; ErrNotFound when uid is not mirrored.
func (d *DB) Cascade(ctx context.Context, uid string, limit int) (*CascadeFacts, error) {
	out := &CascadeFacts{}
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		kinds, err := namespacedKinds(ctx, tx)
		if err != nil {
			return err
		}
		out.Kinds = make(map[CascadeKind]bool, len(kinds))
		for gk, ns := range kinds {
			out.Kinds[CascadeKind{gk.group, gk.kind}] = ns
		}
		// The walk: UNION (not UNION ALL) ends it at cycles, LIMIT bounds it
		// (the root, the limit, and one more to tell that it cut). CROSS
		// JOIN keeps it the outer loop, so objects come in its
		// breadth-first order, each with its references (put back in
		// their order below), and the limit cuts the farthest.
		rows, err := tx.QueryContext(ctx, `
			WITH RECURSIVE down(uid) AS (
				SELECT uid FROM objects WHERE uid = ?1
				UNION SELECT r.dependent_uid FROM owner_refs r JOIN down ON r.owner_uid = down.uid
				LIMIT ?2)
			SELECT o.uid, o.api_version, o.kind, o.namespace, o.name, o.deletion_timestamp IS NOT NULL, o.finalizers,
				r.position, r.api_version, r.kind, r.name, r.owner_uid, r.block_owner_deletion
			FROM down CROSS JOIN objects o ON o.uid = down.uid
				LEFT JOIN owner_refs r ON r.dependent_uid = o.uid`, uid, limit+2)
		if err != nil {
			return err
		}
		defer rows.Close()
		var uids []string
		byUID := map[string]*CascadeObject{}
		for rows.Next() {
			var o CascadeObject
			var fin, refAPIVersion, refKind, refName, refUID sql.NullString
			var position sql.NullInt64
			var block sql.NullBool
			if err := rows.Scan(&o.UID, &o.APIVersion, &o.Kind, &o.Namespace, &o.Name, &o.Deleting, &fin,
				&position, &refAPIVersion, &refKind, &refName, &refUID, &block); err != nil {
				return err
			}
			obj := byUID[o.UID]
			if obj == nil {
				if o.Finalizers, err = decodeFinalizers(fin); err != nil {
					return fmt.Errorf("object %s: %w", o.UID, err)
				}
				obj = &o
				byUID[o.UID] = obj
				uids = append(uids, o.UID)
			}
			if !refUID.Valid {
				continue
			}
			obj.Refs = append(obj.Refs, CascadeRef{OwnerRef: OwnerRef{APIVersion: refAPIVersion.String, Kind: refKind.String,
				Name: refName.String, UID: refUID.String, BlockOwnerDeletion: cascadeBool(block)}, position: position.Int64})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(uids) > limit+1 {
			for _, u := range uids[limit+1:] {
				delete(byUID, u)
			}
			uids, out.Truncated = uids[:limit+1], true
		}
		// Owners are the walk's own objects, but for a few (a second owner
		// outside the tree), read after.
		owners := map[string]*CascadeOwner{}
		var outside []string
		for _, uid := range uids {
			o := byUID[uid]
			if o == nil {
				continue
			}
			owners[uid] = &CascadeOwner{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
				Deleting: o.Deleting, Finalizers: o.Finalizers}
			out.Objects = append(out.Objects, o)
		}
		for _, o := range out.Objects {
			for _, r := range o.Refs {
				if w := byUID[r.UID]; w != nil {
					w.HasDependents = true
				} else if _, ok := owners[r.UID]; !ok {
					owners[r.UID] = nil
					outside = append(outside, r.UID)
				}
			}
		}
		if err := cascadeOwners(ctx, tx, outside, owners); err != nil {
			return err
		}
		for _, o := range out.Objects {
			slices.SortFunc(o.Refs, func(a, b CascadeRef) int { return cmp.Compare(a.position, b.position) })
			for i, r := range o.Refs {
				o.Refs[i].Owner = owners[r.UID]
			}
		}
		if out.Truncated {
			// Where the walk stopped, dependents may lie beyond it.
			return cascadeHasDependents(ctx, tx, out.Objects)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cascade of %s: %w", uid, err)
	}
	if len(out.Objects) == 0 || out.Objects[0].UID != uid {
		return nil, ErrNotFound
	}
	return out, nil
}

// cascadeOwners reads the owners uids from the mirror into owners; those
// it lacks stay nil.
func cascadeOwners(ctx context.Context, q querier, uids []string, owners map[string]*CascadeOwner) error {
	if len(uids) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT o.uid, o.api_version, o.kind, o.namespace, o.name, o.deletion_timestamp IS NOT NULL, o.finalizers
		FROM json_each(?) k JOIN objects o ON o.uid = k.value`, jsonOrNull(uids))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var uid string
		var w CascadeOwner
		var fin sql.NullString
		if err := rows.Scan(&uid, &w.APIVersion, &w.Kind, &w.Namespace, &w.Name, &w.Deleting, &fin); err != nil {
			return err
		}
		if w.Finalizers, err = decodeFinalizers(fin); err != nil {
			return fmt.Errorf("object %s: %w", uid, err)
		}
		owners[uid] = &w
	}
	return rows.Err()
}

// cascadeHasDependents sets HasDependents of the objects that have no dependent
// among objs but may have some elsewhere.
func cascadeHasDependents(ctx context.Context, q querier, objs []*CascadeObject) error {
	var leaves []string
	byUID := map[string]*CascadeObject{}
	for _, o := range objs {
		if !o.HasDependents {
			leaves = append(leaves, o.UID)
			byUID[o.UID] = o
		}
	}
	if len(leaves) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT owner_uid FROM owner_refs WHERE owner_uid IN (SELECT value FROM json_each(?))`,
		jsonOrNull(leaves))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return err
		}
		byUID[uid].HasDependents = true
	}
	return rows.Err()
}

func cascadeBool(b sql.NullBool) *bool {
	if !b.Valid {
		return nil
	}
	return &b.Bool
}
