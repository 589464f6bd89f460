package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestLintCandidatesFollowTheMirror changes a small mirror at random, the
// ways ingestion does (lists, watch events, discovery adding and dropping
// kinds), and checks after every step that the lint candidate mark
// migration 0007 keeps on each reference equals what its view computes
// from scratch: a mark missed by a trigger would hide a finding from /lint.
// ownergc's full pass reads its candidates through the mark: they must be
// those a join of every reference to its owner finds. And every owner
// mirrored must be marked named_owner, which the graph's walks go by.
func TestLintCandidatesFollowTheMirror(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	rng := rand.New(rand.NewPCG(1, 2))
	yes, no := true, false
	bools := []*bool{nil, &yes, &no}
	type kindDef struct {
		res        Resource
		apiVersion string
	}
	kinds := []kindDef{
		{Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, "v1"},
		{Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}, "apps/v1"},
		{Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole"}, "rbac.authorization.k8s.io/v1"},
		{Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}, "example.com/v1"},
	}
	ids := map[int]int64{} // kinds index → resource id, while discovered
	discover := func(k int) {
		id, err := d.Mirror().EnsureResource(ctx, kinds[k].res)
		if err != nil {
			t.Fatal(err)
		}
		ids[k] = id
	}
	for k := range kinds[:3] {
		discover(k)
	}
	const names = 12
	namespaces := []string{"a", "b"}
	// objects: uid → kind index; a uid always has the same kind, namespace
	// and name, as in a cluster.
	objects := map[string]int{}
	uidOf := func(k, i int) string { return fmt.Sprintf("u-%d-%d", k, i) }
	object := func(k, i int) *Object {
		ns := ""
		if kinds[k].res.Namespaced {
			ns = namespaces[i%2]
		}
		o := &Object{UID: uidOf(k, i), APIVersion: kinds[k].apiVersion, Kind: kinds[k].res.Kind, Namespace: ns,
			Name: fmt.Sprint("n-", i), ResourceVersion: fmt.Sprint(rng.Int())}
		if rng.IntN(4) == 0 {
			o.DeletionTimestamp = ptr(time.Unix(1e9, 0))
			if f := rng.IntN(4); f < 3 {
				o.Finalizers = []string{[]string{"orphan", "foregroundDeletion", "example.com/x"}[f]}
			}
		}
		for range rng.IntN(3) {
			// Mostly what controllers write: an owner of the same
			// namespace, controller and blocking; else anything.
			ok, oi := rng.IntN(len(kinds)), rng.IntN(names/2)*2+i%2
			r := api.OwnerRef{APIVersion: kinds[ok].apiVersion, Kind: kinds[ok].res.Kind, Name: fmt.Sprint("n-", oi),
				UID: uidOf(ok, oi), Controller: &yes, BlockOwnerDeletion: &yes}
			if rng.IntN(3) == 0 {
				r.Controller, r.BlockOwnerDeletion = bools[rng.IntN(3)], bools[rng.IntN(3)]
			}
			switch rng.IntN(12) {
			case 0:
				r.Name += "-renamed"
			case 1:
				r.UID += "-old"
			case 2:
				r.APIVersion = "other.example.com/v1"
			}
			o.OwnerReferences = append(o.OwnerReferences, r)
		}
		return o
	}
	check := func(step int, what string) {
		t.Helper()
		var wrong int
		var sample string
		rows, err := d.query(ctx, `SELECT r.dependent_uid, r.position, r.lint_candidate, v.candidate
			FROM owner_refs r JOIN owner_ref_lint v USING (dependent_uid, position) WHERE r.lint_candidate <> v.candidate`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var uid string
			var pos, got, want int
			if err := rows.Scan(&uid, &pos, &got, &want); err != nil {
				t.Fatal(err)
			}
			wrong++
			sample = fmt.Sprintf("%s[%d] marked %d, want %d", uid, pos, got, want)
		}
		rows.Close()
		if wrong > 0 {
			t.Fatalf("step %d (%s): %d references marked wrong, e.g. %s", step, what, wrong, sample)
		}
	}
	var candidates, refs int
	for step := range 400 {
		var what string
		switch op := rng.IntN(20); {
		case op < 10: // a watch event: create, update or delete one object
			k, i := rng.IntN(len(kinds)), rng.IntN(names)
			id, ok := ids[k]
			if !ok {
				continue
			}
			ev := Event{ResourceID: id, Object: object(k, i)}
			if _, exists := objects[ev.Object.UID]; exists && rng.IntN(3) == 0 {
				ev.Deleted = true
				delete(objects, ev.Object.UID)
				what = "delete " + ev.Object.UID
			} else {
				objects[ev.Object.UID] = k
				what = "upsert " + ev.Object.UID
			}
			if _, err := d.Mirror().ApplyEvents(ctx, []Event{ev}); err != nil {
				t.Fatal(err)
			}
		case op < 15: // a relist of one kind: some objects new, some changed, some gone
			k := rng.IntN(len(kinds))
			id, ok := ids[k]
			if !ok {
				continue
			}
			what = "relist " + kinds[k].res.Resource
			epoch, err := d.Mirror().BeginList(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var page []*Object
			for i := range names {
				uid := uidOf(k, i)
				delete(objects, uid)
				if rng.IntN(2) == 0 {
					page = append(page, object(k, i))
					objects[uid] = k
				}
			}
			if err := d.Mirror().WriteListPage(ctx, id, epoch, page); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Mirror().FinishList(ctx, id, epoch, "1"); err != nil {
				t.Fatal(err)
			}
		case op < 17: // discovery drops a kind with its objects
			k := rng.IntN(len(kinds))
			id, ok := ids[k]
			if !ok {
				continue
			}
			what = "drop " + kinds[k].res.Resource
			if _, err := d.Mirror().DeleteResource(ctx, id); err != nil {
				t.Fatal(err)
			}
			delete(ids, k)
			for uid, ok := range objects {
				if ok == k {
					delete(objects, uid)
				}
			}
		default: // discovery finds a kind
			k := rng.IntN(len(kinds))
			if _, ok := ids[k]; ok {
				continue
			}
			what = "discover " + kinds[k].res.Resource
			discover(k)
		}
		check(step, what)
		checkOwnerGCCandidates(t, d, step, what)
		if checkNamedOwnerMarks(t, d); t.Failed() {
			t.Fatalf("step %d (%s): an owner is not marked named_owner", step, what)
		}
		var c, n int
		if err := d.read.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE lint_candidate), count(*) FROM owner_refs`).Scan(&c, &n); err != nil {
			t.Fatal(err)
		}
		candidates, refs = candidates+c, refs+n
	}
	// The walk must have reached both marks often, or it proves little.
	if candidates == 0 || candidates == refs {
		t.Fatalf("over the walk, %d of %d references were candidates: the walk does not exercise the mark", candidates, refs)
	}
	t.Logf("over the walk, %d of %d references were candidates", candidates, refs)
}

// checkOwnerGCCandidates wants OwnerGCCandidates to find what a join of
// every reference to its dependent and owner finds.
func checkOwnerGCCandidates(t *testing.T, d *DB, step int, what string) {
	t.Helper()
	ctx := context.Background()
	want, err := queryStrings(ctx, d.read, `
		SELECT DISTINCT r.dependent_uid FROM owner_refs r
			JOIN objects d ON d.uid = r.dependent_uid
			LEFT JOIN objects o ON o.uid = r.owner_uid
		WHERE o.uid IS NULL OR o.name <> r.name OR o.kind <> r.kind OR o.deletion_timestamp IS NOT NULL
			OR (o.namespace <> '' AND o.namespace <> d.namespace)
		UNION
		SELECT o.uid FROM objects o, json_each(o.finalizers) f
		WHERE o.deletion_timestamp IS NOT NULL AND f.value IN ('orphan', 'foregroundDeletion')
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.OwnerGC().OwnerGCCandidates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("step %d (%s): ownergc candidates %v, want %v", step, what, got, want)
	}
}
