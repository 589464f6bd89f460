package ttl

import (
	"testing"

	"github.com/kubegcd/kubegcd/internal/db"
)

func TestNextStepHysteresis(t *testing.T) {
	// A walk up from 0 to 2500 nodes and back down, with the step expected
	// after each size.
	walk := []struct{ nodes, step int }{
		{0, 0}, {100, 0}, {101, 1}, {95, 1}, {90, 1}, {89, 0}, {500, 1}, {501, 2}, {460, 2}, {449, 1},
		{1001, 3}, {1000, 3}, {899, 2}, {2001, 4}, {1800, 4}, {1799, 3}, {5000, 4}, {0, 0},
	}
	step := 0
	for _, w := range walk {
		step = nextStep(step, w.nodes)
		if step != w.step {
			t.Fatalf("at %d nodes: step %d, want %d", w.nodes, step, w.step)
		}
	}
}

func nodes(n int, ttl string) []db.NodeTTL {
	out := make([]db.NodeTTL, n)
	for i := range out {
		if ttl != "" {
			v := ttl
			out[i].TTL = &v
		}
	}
	return out
}

func TestInitialStepKeepsTheBandNodesCarry(t *testing.T) {
	for _, c := range []struct {
		name  string
		nodes []db.NodeTTL
		want  int
	}{
		{"empty cluster", nil, 0},
		{"95 nodes carrying 15: band 1", nodes(95, "15"), 1},
		{"95 nodes carrying 0: band 0", nodes(95, "0"), 0},
		{"95 nodes without annotations: the lowest band, as upstream counts up", nodes(95, ""), 0},
		{"95 nodes with garbage: the lowest band", nodes(95, "x"), 0},
		{"120 nodes: only band 1 fits", nodes(120, "0"), 1},
		{"950 nodes carrying 60: band 3", nodes(950, "60"), 3},
		{"950 nodes carrying 30: band 2", nodes(950, "30"), 2},
		{"1900 nodes carrying 300: band 4", nodes(1900, "300"), 4},
		{"3000 nodes: band 4", nodes(3000, ""), 4},
		{"mixed, the majority wins", append(nodes(50, "0"), nodes(45, "15")...), 0},
		{"mixed, the majority wins (2)", append(nodes(40, "0"), nodes(55, "15")...), 1},
	} {
		if got := initialStep(c.nodes); got != c.want {
			t.Errorf("%s: step %d, want %d", c.name, got, c.want)
		}
	}
}
