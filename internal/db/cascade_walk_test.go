package db

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The walk a level a query reads what the recursive statement it replaced
// read (cascadeByStatement, kept here as it was), on random graphs with
// cycles, shared dependents, several references to one owner and owners
// outside the walk, at limits that cut and that do not.
func TestCascadeEqualsTheStatement(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	d := openTemp(t)
	cms, err := d.EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	uid := func(i int) string { return fmt.Sprintf("u%03d", i*7919%300) }
	var objs []*Object
	for i := range 300 {
		o := &Object{UID: uid(i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("o", i), ResourceVersion: "1"}
		if r.IntN(10) == 0 {
			now := time.Now()
			o.DeletionTimestamp, o.Finalizers = &now, []string{"foregroundDeletion"}
		}
		for range r.IntN(4) {
			owner := uid(r.IntN(i + 1))
			switch r.IntN(10) {
			case 0:
				owner = uid(r.IntN(300))
			case 1:
				owner = fmt.Sprint("gone-", r.IntN(20))
			case 2:
				if len(o.OwnerReferences) > 0 {
					owner = o.OwnerReferences[0].UID
				}
			}
			ref := OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprint("n", r.IntN(3)), UID: owner}
			if r.IntN(2) == 0 {
				ref.BlockOwnerDeletion = boolp(r.IntN(2) == 0)
			}
			o.OwnerReferences = append(o.OwnerReferences, ref)
		}
		objs = append(objs, o)
	}
	if _, err := d.ApplyEvents(ctx, eventsOf(cms, objs...)); err != nil {
		t.Fatal(err)
	}
	cut := 0
	for i := range 300 {
		root, limit := uid(r.IntN(300)), []int{1, 3, 20, 10000}[i%4]
		if i%30 == 0 {
			root = fmt.Sprint("gone-", r.IntN(20))
		}
		want, wantErr := d.cascadeByStatement(ctx, root, limit)
		got, err := d.Cascade(ctx, root, limit)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("Cascade(%s, %d): %v, want %v", root, limit, err, wantErr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Cascade(%s, %d) (-statement +walk):\n%s", root, limit, diff)
		}
		if got != nil && got.Truncated {
			cut++
		}
	}
	if cut < 30 {
		t.Errorf("only %d walks cut: the graph is too sparse to tell", cut)
	}
}

func (d *DB) cascadeByStatement(ctx context.Context, uid string, limit int) (*CascadeFacts, error) {
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
		positions := map[*CascadeObject][]int64{}
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
				Name: refName.String, UID: refUID.String, BlockOwnerDeletion: cascadeBool(block)}})
			positions[obj] = append(positions[obj], position.Int64)
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
			if !slices.IsSorted(positions[o]) {
				return fmt.Errorf("references of %s out of order: %v", o.UID, positions[o])
			}
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
