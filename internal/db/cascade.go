package db

import (
	"context"
	"database/sql"
	"fmt"
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
	Owner *CascadeOwner
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
	Kinds map[GroupKind]bool
}

// GroupKind names a kind across its versions.
type GroupKind struct{ Group, Kind string }

// Cascade reads the object uid and up to limit of its transitive
// dependents; ErrNotFound when uid is not mirrored.
func (d *DB) Cascade(ctx context.Context, uid string, limit int) (*CascadeFacts, error) {
	out := &CascadeFacts{}
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		kinds, err := namespacedKinds(ctx, tx)
		if err != nil {
			return err
		}
		out.Kinds = make(map[GroupKind]bool, len(kinds))
		for gk, ns := range kinds {
			out.Kinds[GroupKind{gk.group, gk.kind}] = ns
		}
		uids, err := cascadeUIDs(ctx, tx, uid, limit)
		if err != nil || len(uids) == 0 {
			return err
		}
		if len(uids) > limit+1 {
			uids, out.Truncated = uids[:limit+1], true
		}
		rows, err := tx.QueryContext(ctx, `
			SELECT o.uid, o.api_version, o.kind, o.namespace, o.name, o.deletion_timestamp IS NOT NULL, o.finalizers,
				EXISTS (SELECT 1 FROM owner_refs x WHERE x.owner_uid = o.uid),
				r.api_version, r.kind, r.name, r.owner_uid, r.controller, r.block_owner_deletion,
				w.uid IS NOT NULL, w.api_version, w.kind, w.namespace, w.name, w.deletion_timestamp IS NOT NULL, w.finalizers
			FROM json_each(?1) k JOIN objects o ON o.uid = k.value
				LEFT JOIN owner_refs r ON r.dependent_uid = o.uid
				LEFT JOIN objects w ON w.uid = r.owner_uid
			ORDER BY k.key, r.position`, jsonOrNull(uids))
		if err != nil {
			return err
		}
		defer rows.Close()
		var last *CascadeObject
		for rows.Next() {
			var o CascadeObject
			var fin, refAPIVersion, refKind, refName, refUID, ownerAPIVersion, ownerKind, ownerNamespace, ownerName, ownerFin sql.NullString
			var controller, block, ownerFound, ownerDeleting sql.NullBool
			if err := rows.Scan(&o.UID, &o.APIVersion, &o.Kind, &o.Namespace, &o.Name, &o.Deleting, &fin, &o.HasDependents,
				&refAPIVersion, &refKind, &refName, &refUID, &controller, &block,
				&ownerFound, &ownerAPIVersion, &ownerKind, &ownerNamespace, &ownerName, &ownerDeleting, &ownerFin); err != nil {
				return err
			}
			if last == nil || last.UID != o.UID {
				if o.Finalizers, err = decodeFinalizers(fin); err != nil {
					return fmt.Errorf("object %s: %w", o.UID, err)
				}
				last = &o
				out.Objects = append(out.Objects, last)
			}
			if !refUID.Valid {
				continue
			}
			ref := CascadeRef{OwnerRef: OwnerRef{APIVersion: refAPIVersion.String, Kind: refKind.String, Name: refName.String, UID: refUID.String,
				Controller: nullBool(controller), BlockOwnerDeletion: nullBool(block)}}
			if ownerFound.Bool {
				ref.Owner = &CascadeOwner{APIVersion: ownerAPIVersion.String, Kind: ownerKind.String, Namespace: ownerNamespace.String,
					Name: ownerName.String, Deleting: ownerDeleting.Bool}
				if ref.Owner.Finalizers, err = decodeFinalizers(ownerFin); err != nil {
					return fmt.Errorf("object %s: %w", ref.UID, err)
				}
			}
			last.Refs = append(last.Refs, ref)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("cascade of %s: %w", uid, err)
	}
	if len(out.Objects) == 0 || out.Objects[0].UID != uid {
		return nil, ErrNotFound
	}
	return out, nil
}

// cascadeUIDs returns uid, when mirrored, then its transitive dependents in
// breadth-first order, at most limit+1 of them (one more tells that the
// limit cut). UNION (not UNION ALL) stops the walk at cycles.
func cascadeUIDs(ctx context.Context, q querier, uid string, limit int) ([]string, error) {
	rows, err := q.QueryContext(ctx, `
		WITH RECURSIVE down(uid) AS (
			SELECT uid FROM objects WHERE uid = ?1
			UNION SELECT r.dependent_uid FROM owner_refs r JOIN down ON r.owner_uid = down.uid
			LIMIT ?2)
		SELECT uid FROM down`, uid, limit+2)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

func nullBool(b sql.NullBool) *bool {
	if !b.Valid {
		return nil
	}
	return &b.Bool
}
