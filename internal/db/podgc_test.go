package db

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTerminatedPodsOrderAndPaging(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	pods, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(ns, name string, age int, phase, reason string) *Object {
		created := t0.Add(time.Duration(-age) * time.Minute)
		return &Object{UID: ns + "-" + name, APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, ResourceVersion: "1",
			CreationTimestamp: &created, Pod: &Pod{Phase: phase, Reason: reason}}
	}
	objs := []*Object{
		pod("a", "new", 1, "Succeeded", ""),
		pod("a", "old-b", 10, "Failed", ""),
		pod("b", "old-a", 10, "Succeeded", ""),
		pod("b", "evicted-new", 0, "Failed", "Evicted"),
		pod("a", "evicted-old", 5, "Failed", "Evicted"),
		pod("a", "mid", 5, "Succeeded", ""),
		pod("a", "running", 99, "Running", ""),
		pod("a", "pending", 99, "Pending", ""),
		pod("a", "unknown", 99, "Unknown", ""),
		pod("b", "no-phase", 3, "", ""),
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(pods, objs...)); err != nil {
		t.Fatal(err)
	}
	want := []string{"evicted-old", "evicted-new", "old-a", "old-b", "mid", "no-phase", "new"}
	if n, err := d.PodGC().CountTerminatedPods(ctx, TerminatedFilter{}); err != nil || n != len(want) {
		t.Fatalf("count %d %v, want %d", n, err, len(want))
	}
	for _, page := range []int{1, 2, 3, 100} {
		var got []string
		var after *PodCursor
		for {
			ps, next, err := d.PodGC().TerminatedPods(ctx, TerminatedFilter{}, after, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				got = append(got, p.Name)
			}
			if len(ps) < page {
				break
			}
			after = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages of %d: %v, want %v", page, got, want)
		}
	}
	cutoff := t0.Add(-4 * time.Minute)
	for _, c := range []struct {
		f    TerminatedFilter
		want []string
	}{
		{TerminatedFilter{Namespace: "b"}, []string{"evicted-new", "old-a", "no-phase"}},
		{TerminatedFilter{CreatedBefore: &cutoff}, []string{"evicted-old", "old-a", "old-b", "mid"}},
		{TerminatedFilter{Namespace: "a", CreatedBefore: &cutoff}, []string{"evicted-old", "old-b", "mid"}},
	} {
		ps, _, err := d.PodGC().TerminatedPods(ctx, c.f, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Name)
		}
		n, err := d.PodGC().CountTerminatedPods(ctx, c.f)
		if err != nil || !slices.Equal(got, c.want) || n != len(c.want) {
			t.Errorf("%+v: %v (count %d %v), want %v", c.f, got, n, err, c.want)
		}
	}
	// The count reads ranges around the three phases that are not
	// terminated: a phase between them, or after the last, counts too.
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(pods, pod("c", "queued", 1, "Queued", ""),
		pod("c", "zombie", 1, "Zombie", ""))); err != nil {
		t.Fatal(err)
	}
	if n, err := d.PodGC().CountTerminatedPods(ctx, TerminatedFilter{}); err != nil || n != len(want)+2 {
		t.Errorf("count with odd phases %d %v, want %d", n, err, len(want)+2)
	}
}

func TestNodeQueriesOfPodGC(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	pods, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "nodes", Kind: "Node"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	node := func(name, ready string, taints ...string) *Object {
		n := &Node{Ready: ready}
		for _, k := range taints {
			n.Taints = append(n.Taints, Taint{Key: k, Effect: "NoExecute"})
		}
		return &Object{UID: "node-" + name, APIVersion: "v1", Kind: "Node", Name: name, ResourceVersion: "1", CreationTimestamp: &now, Node: n}
	}
	pod := func(name, node string, terminating bool) *Object {
		o := &Object{UID: "pod-" + name, APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: name, ResourceVersion: "1",
			CreationTimestamp: &now, Pod: &Pod{Phase: "Running", NodeName: node}}
		if terminating {
			o.DeletionTimestamp = &now
		}
		return o
	}
	const oos = "node.kubernetes.io/out-of-service"
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(nodes, node("oos", "False", oos), node("ready-oos", "True", oos),
		node("notready", "Unknown"), node("other-taint", "False", "example.com/x"), node("no-condition", "", oos))); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(pods, pod("t-oos", "oos", true), pod("live-oos", "oos", false),
		pod("t-ready-oos", "ready-oos", true), pod("t-notready", "notready", true), pod("t-other", "other-taint", true),
		pod("t-nocond", "no-condition", true), pod("t-unbound", "", true), pod("unbound", "", false),
		pod("orphan-1", "gone-1", false), pod("orphan-2", "gone-1", true), pod("orphan-3", "gone-2", false))); err != nil {
		t.Fatal(err)
	}
	names := func(ps []*Object, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	if got := names(d.PodGC().TerminatingPodsOnOutOfServiceNodes(ctx, oos)); got != "[t-nocond t-oos]" {
		t.Errorf("terminating on out-of-service nodes: %s", got)
	}
	if got := names(d.PodGC().UnscheduledTerminatingPods(ctx)); got != "[t-unbound]" {
		t.Errorf("unscheduled terminating: %s", got)
	}
	missing, err := d.PodGC().MissingNodes(ctx)
	if err != nil || fmt.Sprint(missing) != "[gone-1 gone-2]" {
		t.Errorf("missing nodes %v %v", missing, err)
	}
	if got := names(d.PodGC().PodsOnNode(ctx, "gone-1")); got != "[orphan-1 orphan-2]" {
		t.Errorf("pods on gone-1: %s", got)
	}
	if uids, err := d.TTL().NodeUIDs(ctx); err != nil || len(uids) != 5 {
		t.Errorf("node UIDs %v %v", uids, err)
	}
	// TTL annotations: two nodes at "15", one at "015", two without.
	var annotated []*Object
	for i, v := range []string{"15", "15", "015"} {
		o := node([]string{"oos", "ready-oos", "notready"}[i], "True")
		o.ResourceVersion = "2"
		o.Node.TTLAnnotation = &v
		annotated = append(annotated, o)
	}
	if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(nodes, annotated...)); err != nil {
		t.Fatal(err)
	}
	if got, err := d.TTL().NodeTTLCounts(ctx); err != nil || fmt.Sprint(got) != "map[015:1 15:2]" {
		t.Errorf("ttl histogram %v %v", got, err)
	}
	without, err := d.TTL().NodesNotAtTTL(ctx, "15")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range without {
		got = append(got, n.Name)
	}
	if fmt.Sprint(got) != "[no-condition notready other-taint]" {
		t.Errorf("nodes without ttl 15: %v", got)
	}
}

// The controllers' periodic reads cost what their few rows cost, not what
// the mirror holds: each is checked by its plan.
func TestPeriodicPassPlans(t *testing.T) {
	d := openTemp(t)
	for _, tc := range []struct {
		name, query string
		args        []any
		want        []string // in the plan
		scans       []string // the only SCAN lines allowed
	}{
		{"ttl: the nodes not at the TTL, from the nodes table", sqlNodesNotAtTTL, []any{"15"},
			[]string{"SCAN n", "SEARCH o USING PRIMARY KEY (uid=?)"}, []string{"SCAN n"}},
		{"podgc: each node name looked up once", sqlMissingNodes, nil,
			[]string{"SCAN pods USING COVERING INDEX pods_by_node", "SEARCH no USING"}, []string{"SCAN pods USING COVERING INDEX pods_by_node", "SCAN p"}},
		{"podgc: the unscheduled terminating pods from the objects being deleted", sqlUnscheduledTerminating, nil,
			[]string{"SEARCH o USING INDEX objects_deleting", "SEARCH p USING PRIMARY KEY (uid=?)"}, nil},
		{"podgc: the terminated pods counted from ranges of pods_by_phase", sqlCountTerminated, nil,
			[]string{"SEARCH pods USING COVERING INDEX pods_by_phase (phase<?)",
				"SEARCH pods USING COVERING INDEX pods_by_phase (phase>?)"}, []string{"SCAN CONSTANT ROW"}},
		{"ownergc: the full pass reads candidates and owners being deleted", sqlOwnerGCCandidates, nil,
			[]string{"SCAN r USING INDEX owner_refs_lint_candidates", "objects_deleting"},
			[]string{"SCAN r USING INDEX owner_refs_lint_candidates", "SCAN f VIRTUAL TABLE"}},
	} {
		plan := queryPlan(t, d, tc.query, tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s: the plan lacks %q:\n%s", tc.name, w, plan)
			}
		}
		for _, line := range strings.Split(plan, "\n") {
			line = strings.TrimLeft(line, "|-` ")
			if strings.HasPrefix(line, "SCAN ") && !slices.ContainsFunc(tc.scans, func(s string) bool { return strings.HasPrefix(line, s) }) {
				t.Errorf("%s: the plan scans %q:\n%s", tc.name, line, plan)
			}
		}
	}
}
