package db

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/api"
)

// The walk a level a query reads what the recursive statement it replaced
// read (cascadeByStatement, kept here as it was), on random graphs with
// cycles, shared dependents, several references to one owner and owners
// outside the walk, at limits that cut and that do not; then again once a
// third of the objects have had their references rewritten (gaining or
// losing some, so that a reference's sole flag must follow).
func TestCascadeEqualsTheStatement(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	uid := func(i int) string { return randomGraphUID(i, 300) }
	objs := randomGraph(r, 300, 4, true)
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(cms, objs...)); err != nil {
		t.Fatal(err)
	}
	// Every other walk splits its reads over two transactions (at two keys
	// and more), as a wide one does.
	atLeastTwoCores(t)
	defaultSplit := d.split.rowMin
	splitBefore := d.split.count.Load()
	for round := range 2 {
		if round == 1 {
			var changed []*Object
			for i, o := range objs {
				if r.IntN(3) == 0 {
					o.OwnerReferences, o.ResourceVersion = randomRefs(r, i, 300, 4, true), "2"
					changed = append(changed, o)
				}
			}
			if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(cms, changed...)); err != nil {
				t.Fatal(err)
			}
		}
		checkSole(t, d)
		checkNamedOwner(t, d)
		cut := 0
		for i := range 300 {
			root, limit := uid(r.IntN(300)), []int{1, 3, 20, 10000}[i%4]
			if i%30 == 0 {
				root = fmt.Sprint("gone-", r.IntN(20))
			}
			d.split.rowMin = []int{defaultSplit, 2}[i%2]
			want, wantErr := d.cascadeByStatement(ctx, root, limit)
			got, err := d.Objects().Cascade(ctx, root, limit)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("round %d: Cascade(%s, %d): %v, want %v", round, root, limit, err, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round %d: Cascade(%s, %d) (-statement +walk):\n%s", round, root, limit, diff)
			}
			if got != nil && got.Truncated {
				cut++
			}
		}
		if cut < 30 {
			t.Errorf("round %d: only %d walks cut: the graph is too sparse to tell", round, cut)
		}
	}
	if n := d.split.count.Load() - splitBefore; n < 100 {
		t.Errorf("only %d reads split", n)
	}
}

// checkSole wants every reference's sole flag to say whether it is its
// dependent's only reference.
func checkSole(t *testing.T, d *DB) {
	t.Helper()
	var wrong, sole int
	if err := d.read.QueryRow(`SELECT count(*) FILTER (WHERE r.sole <> ((SELECT count(*) FROM owner_refs o WHERE o.dependent_uid = r.dependent_uid) = 1)),
		count(*) FILTER (WHERE r.sole) FROM owner_refs r`).Scan(&wrong, &sole); err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || sole == 0 {
		t.Errorf("%d references with a wrong sole flag, %d sole ones", wrong, sole)
	}
}

// checkNamedOwner wants every mirrored object that a reference names as its
// owner to be marked named_owner, and some to be.
func checkNamedOwner(t *testing.T, d *DB) {
	t.Helper()
	if marked := checkNamedOwnerMarks(t, d); marked == 0 {
		t.Errorf("no object is marked named_owner")
	}
}

// checkNamedOwnerMarks wants every mirrored object that a reference names
// as its owner to be marked named_owner, and returns how many are marked.
func checkNamedOwnerMarks(t *testing.T, d *DB) (marked int) {
	t.Helper()
	var unmarked int
	if err := d.read.QueryRow(`SELECT
		(SELECT count(*) FROM objects o WHERE NOT o.named_owner AND EXISTS (SELECT 1 FROM owner_refs r WHERE r.owner_uid = o.uid)),
		(SELECT count(*) FROM objects WHERE named_owner)`).Scan(&unmarked, &marked); err != nil {
		t.Fatal(err)
	}
	if unmarked != 0 {
		t.Errorf("%d owners not marked named_owner, %d marked", unmarked, marked)
	}
	return marked
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
			obj.Refs = append(obj.Refs, CascadeRef{OwnerRef: api.OwnerRef{APIVersion: refAPIVersion.String, Kind: refKind.String,
				Name: refName.String, UID: refUID.String, BlockOwnerDeletion: nullBool(block)}})
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

// A reference is sole exactly while it is its dependent's only one, through
// every change of the dependent's references and the dependent's deletion.
func TestSoleFollowsTheReferences(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(owner string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: owner}
	}
	steps := []struct {
		name string
		refs []api.OwnerRef // of the dependent D; nil deletes it
		want string         // owner:sole of each reference, by position
	}{
		{"one", []api.OwnerRef{ref("A")}, "A:1"},
		{"gains a second", []api.OwnerRef{ref("A"), ref("B")}, "A:0 B:0"},
		{"loses the first", []api.OwnerRef{ref("B")}, "B:1"},
		{"the same owner twice", []api.OwnerRef{ref("B"), ref("B")}, "B:0 B:0"},
		{"another owner", []api.OwnerRef{ref("C")}, "C:1"},
		{"none", []api.OwnerRef{}, ""},
		{"one again", []api.OwnerRef{ref("A")}, "A:1"},
		{"deleted", nil, ""},
	}
	for i, st := range steps {
		o := &Object{UID: "D", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "d", ResourceVersion: fmt.Sprint(i + 1),
			OwnerReferences: st.refs}
		ev := Event{ResourceID: cms, Object: o, Deleted: st.refs == nil}
		if _, err := d.Mirror().ApplyEvents(ctx, []Event{ev}); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := d.read.QueryRow(`SELECT coalesce(group_concat(owner_uid || ':' || sole, ' ' ORDER BY position), '')
			FROM owner_refs WHERE dependent_uid = 'D'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != st.want {
			t.Errorf("%s: references %q, want %q", st.name, got, st.want)
		}
	}
}

// An object is marked named_owner once a reference names it, whichever of
// the two is written first, and stays marked when the references go.
func TestNamedOwnerFollowsTheReferences(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	version := 0
	write := func(uid string, deleted bool, owners ...string) {
		t.Helper()
		version++
		o := &Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, ResourceVersion: fmt.Sprint(version)}
		for _, u := range owners {
			o.OwnerReferences = append(o.OwnerReferences, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: u, UID: u})
		}
		if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: cms, Object: o, Deleted: deleted}}); err != nil {
			t.Fatal(err)
		}
	}
	marked := func() string {
		t.Helper()
		got, err := queryStrings(ctx, d.read, `SELECT uid FROM objects WHERE named_owner ORDER BY uid`)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	steps := []struct {
		name  string
		write func()
		want  string
	}{
		{"an owner written first", func() { write("A", false); write("D1", false, "A") }, "A"},
		{"a dependent written first", func() { write("D2", false, "B"); write("B", false) }, "A B"},
		{"an owner updated keeps its mark", func() { write("B", false) }, "A B"},
		{"a dependent naming its own owner", func() { write("C", false, "C") }, "A B C"},
		{"a second reference", func() { write("D1", false, "A", "D2") }, "A B C D2"},
		{"the references go: the marks stay", func() { write("D1", false); write("D2", true) }, "A B C"},
		{"an owner deleted and written again with no dependents", func() { write("B", true); write("B", false) }, "A C"},
	}
	for _, st := range steps {
		st.write()
		if got := marked(); got != st.want {
			t.Errorf("%s: named_owner %q, want %q", st.name, got, st.want)
		}
	}
}

// A step of the walk reads the references whole from the owner index, a
// seek per owner, and never owner_refs' rows.
func TestCascadeStepReadsTheOwnerIndexOnly(t *testing.T) {
	plan := queryPlan(t, openTemp(t), sqlCascadeStep, `["a","b"]`)
	if !strings.Contains(plan, "USING COVERING INDEX owner_refs_by_owner (owner_uid=?)") {
		t.Errorf("the walk's step does not read the owner index alone:\n%s", plan)
	}
}

// Migration 15 marks the owners already mirrored: those a reference names.
func TestNamedOwnerMigration(t *testing.T) {
	path, m := emptyMigrate(t)
	if err := m.Migrate(14); err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(`INSERT INTO resources (id, api_group, version, resource, kind, namespaced) VALUES (1, '', 'v1', 'configmaps', 'ConfigMap', 1);
		INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version)
			VALUES ('A', 1, 'v1', 'ConfigMap', 'ns', 'a', '1'), ('B', 1, 'v1', 'ConfigMap', 'ns', 'b', '1'),
				('C', 1, 'v1', 'ConfigMap', 'ns', 'c', '1'), ('D', 1, 'v1', 'ConfigMap', 'ns', 'd', '1');
		INSERT INTO owner_refs (dependent_uid, position, api_version, kind, name, owner_uid, sole)
			VALUES ('B', 0, 'v1', 'ConfigMap', 'a', 'A', 0), ('B', 1, 'v1', 'ConfigMap', 'gone', 'GONE', 0),
				('C', 0, 'v1', 'ConfigMap', 'c', 'C', 1), ('D', 0, 'v1', 'ConfigMap', 'b', 'B', 1)`); err != nil {
		t.Fatal(err)
	}
	if err := m.Migrate(15); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := conn.QueryRow(`SELECT group_concat(uid || ':' || named_owner, ' ' ORDER BY uid) FROM objects`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "A:1 B:1 C:1 D:0"; got != want {
		t.Errorf("after the migration: %q, want %q", got, want)
	}
}
