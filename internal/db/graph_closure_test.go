package db

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The walk level by level selects what the recursive statement does, on
// random graphs with cycles, shared dependents, missing owners, objects
// that take no part and several seeds, at every limit.
func TestClosureUIDsEqualsTheStatement(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	uid := func(i int) string { return randomGraphUID(i, 300) }
	objs := randomGraph(r, 300, 3, false)
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(cms, objs...)); err != nil {
		t.Fatal(err)
	}
	kinds, err := namespacedKinds(ctx, d.read)
	if err != nil {
		t.Fatal(err)
	}
	atLeastTwoCores(t)
	defaultSplit := d.split.rowMin
	splitBefore := d.split.count.Load()
	big, edges, read := 0, 0, 0
	setOf := func(uids []string) map[string]struct{} {
		m := map[string]struct{}{}
		for _, u := range uids {
			m[u] = struct{}{}
		}
		return m
	}
	for i := range 200 {
		var seeds []string
		for range 1 + r.IntN(3) {
			if len(seeds) > 0 && r.IntN(10) == 0 {
				seeds = append(seeds, seeds[0]) // twice
				continue
			}
			if r.IntN(8) == 0 {
				seeds = append(seeds, fmt.Sprint("gone-", r.IntN(20)))
			} else {
				seeds = append(seeds, uid(r.IntN(300)))
			}
		}
		f := GraphFilter{UIDs: seeds, Limit: []int{1, 5, 50, 10000}[i%4]}
		want, err := graphUIDsSQL(ctx, d.read, f)
		if err != nil {
			t.Fatal(err)
		}
		// Every other walk splits its reads over two transactions on one
		// snapshot (at two keys and more), as a wide one does.
		var got []string
		var gotEdges []GraphEdge
		var known map[string]GraphNode
		var ok bool
		if i%2 == 0 {
			got, gotEdges, known, ok, err = closureUIDs(ctx, d.read, f.UIDs, f.Limit, kinds)
		} else {
			d.split.rowMin = 2
			err = d.readSnapshot(ctx, true, func(q querier) (err error) {
				got, gotEdges, known, ok, err = closureUIDs(ctx, q, f.UIDs, f.Limit, kinds)
				return err
			})
			d.split.rowMin = defaultSplit
		}
		if err != nil || !ok {
			t.Fatalf("closureUIDs(%v): ok %v, %v", seeds, ok, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("seeds %v, limit %d (-statement +walk):\n%s", seeds, f.Limit, diff)
		}
		kept := want[:min(len(want), f.Limit)]
		wantEdges, err := graphEdges(ctx, d.read, kept, jsonOrNull(kept))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantEdges, gotEdges, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("seeds %v, limit %d, edges (-graphEdges +walk):\n%s", seeds, f.Limit, diff)
		}
		// The nodes the walk read on its way are the ones graphNodes reads.
		wantNodes, err := graphNodes(ctx, d.read, kept, nil, kinds, "")
		if err != nil {
			t.Fatal(err)
		}
		gotNodes, err := graphNodes(ctx, d.read, kept, known, kinds, "")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantNodes, gotNodes, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("seeds %v, limit %d, nodes (-read again +walk):\n%s", seeds, f.Limit, diff)
		}
		// and only nodes it reached (or seeds).
		all, err := graphUIDsSQL(ctx, d.read, GraphFilter{UIDs: seeds, Limit: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		reached := setOf(append(all, seeds...))
		for u := range known {
			read++
			if _, ok := reached[u]; !ok {
				t.Errorf("seeds %v: the walk read %s, which it did not reach", seeds, u)
			}
		}
		edges += len(wantEdges)
		if len(want) > 20 {
			big++
		}
	}
	if n := d.split.count.Load() - splitBefore; n < 100 {
		t.Errorf("only %d reads split", n)
	}
	if big < 10 || edges < 1000 || read < 1000 {
		t.Errorf("only %d closures of more than 20 nodes, %d edges, %d nodes read by the walk: the graph is too sparse to tell", big, edges, read)
	}
}

// A closure larger than graphWalkMax is left to the statement.
func TestClosureUIDsGivesUpPastItsBound(t *testing.T) {
	ctx := context.Background()
	d := graphFixture(t)
	kinds, err := namespacedKinds(ctx, d.read)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok, err := closureUIDs(ctx, d.read, []string{"A"}, 10, kinds); err != nil || !ok {
		t.Fatalf("closureUIDs(A) = ok %v, %v", ok, err)
	}
	for _, max := range []int{0, 1, 2} {
		up := func(frontier []string, add func(string)) error { return stepUp(ctx, d.read, frontier, add) }
		if got, ok, err := reach(ctx, []string{"C"}, max, up); err != nil || ok || got != nil {
			t.Errorf("reach(C up, max %d) = %v, ok %v, %v; want it to give up", max, got, ok, err)
		}
	}
	down := func(frontier []string, add func(string)) error {
		return stepDown(ctx, d.read, frontier, func(e GraphEdge) { add(e.Dependent) })
	}
	if got, ok, err := reach(ctx, []string{"A"}, 4, down); err != nil || !ok || len(got) != 4 {
		t.Errorf("reach(A, max 4) = %v, ok %v, %v; want A, B, C, N", got, ok, err)
	}
}

func TestSplitObjectRow(t *testing.T) {
	for _, tc := range []struct {
		packed  string
		want    objectRow
		wantErr bool
	}{
		{"1\x1fv1\x1fConfigMap\x1fns\x1fa\x1f", objectRow{namedOwner: true, apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name: "a"}, false},
		{"2\x1fapps/v1\x1fDeployment\x1fns\x1fb\x1f[\"foregroundDeletion\"]", objectRow{deleting: true, apiVersion: "apps/v1",
			kind: "Deployment", namespace: "ns", name: "b", finalizers: sql.NullString{String: `["foregroundDeletion"]`, Valid: true}}, false},
		{"0\x1fv1\x1fNode\x1f\x1fn\x1f", objectRow{apiVersion: "v1", kind: "Node", name: "n"}, false},
		{"1\x1fv1\x1fConfigMap\x1fns\x1fa", objectRow{}, true},      // a field short
		{"7\x1fv1\x1fConfigMap\x1fns\x1fa\x1f", objectRow{}, true},  // flags out of range
		{"10\x1fv1\x1fConfigMap\x1fns\x1fa\x1f", objectRow{}, true}, // flags too long
		{"", objectRow{}, true},
	} {
		got, err := splitObjectRow(tc.packed)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("splitObjectRow(%q) = %+v, %v; want %+v, error %v", tc.packed, got, err, tc.want, tc.wantErr)
		}
	}
	// A row is split in place: a walk of 10,000 objects splits 10,000.
	row := "3\x1fapps/v1\x1fDeployment\x1fns\x1fb\x1f[\"a\",\"b\"]"
	if n := testing.AllocsPerRun(100, func() { _, _ = splitObjectRow(row) }); n != 0 {
		t.Errorf("splitObjectRow allocates %.0f times a row, want 0", n)
	}
}
