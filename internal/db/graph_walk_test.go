package db

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/api"
)

// walked collects what WalkGraph hands on.
func walked(t *testing.T, d *DB, limit int) *Graph {
	t.Helper()
	g := &Graph{Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	starts := 0
	err := d.Objects().WalkGraph(context.Background(), limit, GraphWalk{
		Start: func(truncated bool) error { starts++; g.Truncated = truncated; return nil },
		Node:  func(n GraphNode) error { g.Nodes = append(g.Nodes, n); return nil },
		Edge:  func(e GraphEdge) error { g.Edges = append(g.Edges, e); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if starts != 1 {
		t.Fatalf("Start called %d times", starts)
	}
	return g
}

// The streamed whole graph is, at every limit, the graph Graph builds in
// memory: the same nodes, edges in the same order, the same cut.
func TestWalkGraphEqualsGraph(t *testing.T) {
	ctx := context.Background()
	d := graphFixture(t)
	for limit := 1; limit <= 23; limit++ {
		want, err := d.Objects().Graph(ctx, GraphFilter{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, walked(t, d, limit)); diff != "" {
			t.Errorf("limit %d (-Graph +WalkGraph):\n%s", limit, diff)
		}
	}
}

func TestWalkGraphRandomForests(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	// 400 objects, each with up to three owners among the others or among
	// UIDs nothing mirrors, in random order of UID.
	var objs []*Object
	for i := range 400 {
		o := &Object{UID: fmt.Sprintf("u%03d", r.IntN(1000)*1000+i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns",
			Name: fmt.Sprint("o", i), ResourceVersion: "1"}
		for range r.IntN(4) {
			owner := fmt.Sprintf("u%03d", r.IntN(1000)*1000+r.IntN(400))
			if r.IntN(10) == 0 {
				owner = fmt.Sprint("gone-", r.IntN(50))
			}
			o.OwnerReferences = append(o.OwnerReferences, api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: owner})
		}
		objs = append(objs, o)
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(cms, objs...)); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 2, 10, 99, 250, 400, 10000} {
		want, err := d.Objects().Graph(ctx, GraphFilter{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, walked(t, d, limit)); diff != "" {
			t.Errorf("limit %d (-Graph +WalkGraph):\n%s", limit, diff)
		}
	}
}

func TestWalkGraphStopsOnTheCallersError(t *testing.T) {
	d := graphFixture(t)
	stop := errors.New("client gone")
	nodes := 0
	err := d.Objects().WalkGraph(context.Background(), 100, GraphWalk{
		Start: func(bool) error { return nil },
		Node: func(GraphNode) error {
			nodes++
			if nodes == 3 {
				return stop
			}
			return nil
		},
		Edge: func(GraphEdge) error { t.Error("an edge after the walk stopped"); return nil },
	})
	if !errors.Is(err, stop) || nodes != 3 {
		t.Errorf("err %v after %d nodes, want %v after 3", err, nodes, stop)
	}
}
