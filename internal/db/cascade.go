package db

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/kubegcd/kubegcd/internal/api"
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
	api.OwnerRef
	Owner *CascadeOwner
}

// CascadeObject is one object of the subgraph a cascade preview walks.
type CascadeObject struct {
	api.Target
	Deleting      bool
	Finalizers    []string
	Refs          []CascadeRef
	HasDependents bool
}

// CascadeFacts is what a cascade preview decides from: an object and its
// transitive dependents, each with every owner reference and owner, read
// from one snapshot of the mirror.
type CascadeFacts struct {
	// Objects: the root first, then its transitive dependents, each once.
	Objects []*CascadeObject
	// Truncated: the root has more transitive dependents than the limit.
	Truncated bool
	// Kinds maps every discovered group and kind to whether it is
	// namespaced. A kind it lacks is not served.
	Kinds map[CascadeKind]bool
}

// CascadeKind names a kind across its versions.
type CascadeKind struct{ Group, Kind string }

// Cascade reads the object uid and up to limit of its transitive
// dependents. It returns ErrNotFound when uid is not mirrored.
func (d Objects) Cascade(ctx context.Context, uid string, limit int) (*CascadeFacts, error) {
	out := &CascadeFacts{}
	err := d.readSnapshot(ctx, true, func(tx querier) error {
		kinds, err := namespacedKinds(ctx, tx)
		if err != nil {
			return err
		}
		out.Kinds = make(map[CascadeKind]bool, len(kinds))
		for gk, ns := range kinds {
			out.Kinds[CascadeKind{gk.group, gk.kind}] = ns
		}
		// The walk goes breadth first and ends at cycles. It stops after
		// the root, the limit and one more, which tells that it cut. So the
		// limit cuts the farthest objects.
		var exists bool
		err = tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM objects WHERE uid = ?)`, uid).Scan(&exists)
		if err != nil {
			return err
		}
		if !exists {
			return nil
		}
		uids, byUID, err := cascadeWalk(ctx, tx, uid, limit+2)
		if err != nil {
			return err
		}
		uids = slices.DeleteFunc(uids, func(u string) bool { return byUID[u] == nil })
		if len(uids) > limit+1 {
			for _, u := range uids[limit+1:] {
				delete(byUID, u)
			}
			uids, out.Truncated = uids[:limit+1], true
		}
		// Most owners are objects of the walk. The few others, such as a
		// second owner outside the tree, are read after.
		owners := make(map[string]*CascadeOwner, len(uids))
		walked := make([]CascadeOwner, len(uids)) // one allocation for them all
		var outside []string
		for i, uid := range uids {
			o := byUID[uid]
			if o == nil {
				continue
			}
			walked[i] = CascadeOwner{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace,
				Name: o.Name, Deleting: o.Deleting, Finalizers: o.Finalizers}
			owners[uid] = &walked[i]
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

// cascadeOwners reads the owners uids from the mirror into owners. Those
// the mirror lacks stay nil.
func cascadeOwners(ctx context.Context, q querier, uids []string, owners map[string]*CascadeOwner) error {
	if len(uids) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT o.uid, o.api_version, o.kind, o.namespace, o.name,
			o.deletion_timestamp IS NOT NULL, o.finalizers
		FROM json_each(?) k JOIN objects o ON o.uid = k.value`, jsonOrNull(uids))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var uid string
		var w CascadeOwner
		var fin sql.NullString
		err := rows.Scan(&uid, &w.APIVersion, &w.Kind, &w.Namespace, &w.Name, &w.Deleting, &fin)
		if err != nil {
			return err
		}
		if w.Finalizers, err = decodeFinalizers(fin); err != nil {
			return fmt.Errorf("object %s: %w", uid, err)
		}
		owners[uid] = &w
	}
	return rows.Err()
}

// cascadeHasDependents sets HasDependents of the objects that have no
// dependent among objs but may have some elsewhere.
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
	return eachString(ctx, q,
		`SELECT DISTINCT owner_uid FROM owner_refs WHERE owner_uid IN (SELECT value FROM json_each(?))`,
		func(uid string) { byUID[uid].HasDependents = true }, jsonOrNull(leaves))
}

// cascadeWalk reads root and its transitive dependents, breadth first,
// each once, at most max of them. It takes each owner's dependents in the
// order of owner_refs_by_owner (dependent, position), as the queue of a
// recursive statement would, and runs one query a level. order lists the
// UIDs. byUID holds those mirrored, each with its references in their
// order.
//
// Each level's objects are read first, in key order, which costs a sixth
// less. Only the objects named as owners are looked at for dependents. A
// dependent whose only reference names its owner (sole) gets that
// reference from the owner index. The other objects' references are read
// at the end.
func cascadeWalk(ctx context.Context, q querier, root string, max int) (
	order []string, byUID map[string]*CascadeObject, err error) {
	order = []string{root}
	sole := []*api.OwnerRef{nil} // of each of frontier: its only reference, read on the way
	byUID = map[string]*CascadeObject{}
	seen := map[string]struct{}{root: {}}
	var rest []*CascadeObject // whose references are still to read
	frontier := order
	for len(frontier) > 0 {
		sorted, perm := sortedWithPerm(frontier)
		var owners []string
		var ownerAt []int32 // each owner's place in frontier
		objs := make([]CascadeObject, len(sorted))
		soleRefs := make([]CascadeRef, len(sorted)) // one allocation for the level's
		err := eachCascadeObject(ctx, q, sorted, objs, func(i int, o *CascadeObject, mayOwn bool) {
			byUID[o.UID] = o
			if r := sole[perm[i]]; r != nil {
				soleRefs[i].OwnerRef = *r
				o.Refs = soleRefs[i : i+1 : i+1]
			} else {
				rest = append(rest, o)
			}
			if mayOwn {
				owners, ownerAt = append(owners, o.UID), append(ownerAt, perm[i])
			}
		})
		if err != nil {
			return nil, nil, err
		}
		if len(order) >= max || len(owners) == 0 {
			break
		}
		kids, err := cascadeDependents(ctx, q, owners, ownerAt)
		if err != nil {
			return nil, nil, err
		}
		byOwner := sortByOwner(kids, len(frontier))
		// The level is cut to what the walk keeps: no more is read.
		next, nextSole := []string{}, []*api.OwnerRef{}
		for _, f := range byOwner {
			if len(order)+len(next) == max {
				break
			}
			if _, ok := seen[f.uid]; !ok {
				seen[f.uid] = struct{}{}
				next, nextSole = append(next, f.uid), append(nextSole, f.ref)
			}
		}
		order = append(order, next...)
		frontier, sole = next, nextSole
	}
	return order, byUID, cascadeRefs(ctx, q, rest)
}

// cascadeDependents reads the dependents of owners, whose places in the
// level's frontier are ownerAt. It reads a dependent's only reference
// (sole) from the owner index.
func cascadeDependents(ctx context.Context, q querier, owners []string, ownerAt []int32) ([]cascadeFound, error) {
	// Each half of a split step reads into its own slice. The first half's
	// owners come first, in frontier's order as in the index.
	var halves [2][]cascadeFound
	read := func(ctx context.Context, q querier, keys []string, off, half int) error {
		rows, err := q.QueryContext(ctx, sqlCascadeStep, jsonOrNull(keys))
		if err != nil {
			return err
		}
		defer rows.Close()
		// Scan's targets escape, so one set serves every row. The sole
		// references, and their blockOwnerDeletion, come from slabs.
		var packed int64
		var dep string
		var apiVersion, kind, name sql.NullString
		var refs refSlab
		for rows.Next() {
			if err := rows.Scan(&dep, &packed, &apiVersion, &kind, &name); err != nil {
				return err
			}
			at := off + int(packed>>3) // the owner's place in owners
			f := cascadeFound{owner: ownerAt[at], uid: dep}
			if packed&4 != 0 {
				f.ref = refs.next()
				*f.ref = api.OwnerRef{APIVersion: apiVersion.String, Kind: kind.String,
					Name: name.String, UID: owners[at]}
				if b := packed & 3; b != 0 {
					f.ref.BlockOwnerDeletion = refs.bool(b == 2)
				}
			}
			halves[half] = append(halves[half], f)
		}
		return rows.Err()
	}
	if err := splitRead(ctx, q, owners, splitSteps, read); err != nil {
		return nil, err
	}
	return append(halves[0], halves[1]...), nil
}

// sortByOwner sorts the dependents found by their owner's place in a
// frontier of n objects. It is a counting sort, so each owner's dependents
// keep the index's order.
func sortByOwner(kids []cascadeFound, n int) []cascadeFound {
	counts := make([]int32, n+1)
	for _, f := range kids {
		counts[f.owner+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	byOwner := make([]cascadeFound, len(kids))
	for _, f := range kids {
		byOwner[counts[f.owner]] = f
		counts[f.owner]++
	}
	return byOwner
}

// refSlab hands out references, and booleans for their blockOwnerDeletion,
// from chunks: one allocation for many rather than one each. It never moves
// those it handed out.
type refSlab struct {
	refs  []api.OwnerRef
	bools []bool
}

const refSlabChunk = 256

func (s *refSlab) next() *api.OwnerRef {
	if len(s.refs) == cap(s.refs) {
		s.refs = make([]api.OwnerRef, 0, refSlabChunk)
	}
	s.refs = s.refs[:len(s.refs)+1]
	return &s.refs[len(s.refs)-1]
}

func (s *refSlab) bool(v bool) *bool {
	if len(s.bools) == cap(s.bools) {
		s.bools = make([]bool, 0, refSlabChunk)
	}
	s.bools = append(s.bools, v)
	return &s.bools[len(s.bools)-1]
}

// cascadeFound is a dependent a step of the cascade's walk found.
type cascadeFound struct {
	owner int32 // its owner's place in the level
	uid   string
	ref   *api.OwnerRef // its only reference, when it has one
}

// sqlCascadeStep reads, from the owner index, the references to each owner
// of the JSON array ?1. Its first column is the dependent. The second packs
// the owner's place in ?1, whether the reference is its dependent's only
// one, and blockOwnerDeletion (0: null, 1: false, 2: true). When the
// reference is the only one, the last columns are its apiVersion, kind and
// name.
const sqlCascadeStep = `SELECT r.dependent_uid, k.key * 8 + r.sole * 4 + coalesce(r.block_owner_deletion + 1, 0),
		CASE WHEN r.sole THEN r.api_version END, CASE WHEN r.sole THEN r.kind END,
		CASE WHEN r.sole THEN r.name END
	FROM json_each(?1) k CROSS JOIN owner_refs r ON r.owner_uid = k.value`

// sortedWithPerm returns uids sorted, and for each the place it had, so
// that sorted[i] == uids[perm[i]].
func sortedWithPerm(uids []string) (sorted []string, perm []int32) {
	perm = make([]int32, len(uids))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int { return strings.Compare(uids[a], uids[b]) })
	sorted = make([]string, len(uids))
	for i, p := range perm {
		sorted[i] = uids[p]
	}
	return sorted, perm
}

// eachCascadeObject reads the objects uids into objs, by place. It calls fn
// with each mirrored one, its place, and whether it may have dependents
// because it is named as an owner.
func eachCascadeObject(ctx context.Context, q querier, uids []string, objs []CascadeObject,
	fn func(i int, o *CascadeObject, mayOwn bool)) error {
	return eachObjectRow(ctx, q, uids, func(i int, r *objectRow) error {
		o := &objs[i]
		o.UID = uids[i]
		if r == nil {
			return nil
		}
		var err error
		o.APIVersion, o.Kind, o.Namespace, o.Name = r.apiVersion, r.kind, r.namespace, r.name
		o.Deleting = r.deleting
		if o.Finalizers, err = decodeFinalizers(r.finalizers); err != nil {
			return fmt.Errorf("object %s: %w", o.UID, err)
		}
		fn(i, o, r.namedOwner)
		return nil
	})
}

// cascadeRefs reads the references of objs, in their order, through
// owner_refs' primary key, seeking in key order.
func cascadeRefs(ctx context.Context, q querier, objs []*CascadeObject) error {
	if len(objs) == 0 {
		return nil
	}
	slices.SortFunc(objs, func(a, b *CascadeObject) int { return strings.Compare(a.UID, b.UID) })
	uids := make([]string, len(objs))
	for i, o := range objs {
		uids[i] = o.UID
	}
	// The halves of a split read fill the references of objects of their
	// own.
	read := func(ctx context.Context, q querier, keys []string, off, _ int) error {
		refs, err := q.QueryContext(ctx, `SELECT k.key, r.api_version, r.kind, r.name, r.owner_uid,
				r.block_owner_deletion
			FROM json_each(?1) k CROSS JOIN owner_refs r ON r.dependent_uid = k.value`, jsonOrNull(keys))
		if err != nil {
			return err
		}
		defer refs.Close()
		var k int // Scan's targets escape: one set for every row
		var r api.OwnerRef
		var block sql.NullBool
		for refs.Next() {
			if err := refs.Scan(&k, &r.APIVersion, &r.Kind, &r.Name, &r.UID, &block); err != nil {
				return err
			}
			r.BlockOwnerDeletion = nullBool(block)
			objs[off+k].Refs = append(objs[off+k].Refs, CascadeRef{OwnerRef: r})
		}
		return refs.Err()
	}
	return splitRead(ctx, q, uids, splitRows, read)
}
