package ttl

import "testing"

func TestNextStepHysteresis(t *testing.T) {
	// A walk up from 0 to 2500 nodes and back down, with the band expected
	// after each size.
	walk := []struct{ nodes, band int }{
		{0, 0}, {100, 0}, {101, 1}, {95, 1}, {90, 1}, {89, 0}, {500, 1}, {501, 2}, {460, 2}, {449, 1},
		{1001, 3}, {1000, 3}, {899, 2}, {2001, 4}, {1800, 4}, {1799, 3}, {5000, 4}, {0, 0},
	}
	band := 0
	for _, w := range walk {
		band = nextBand(band, w.nodes)
		if band != w.band {
			t.Fatalf("at %d nodes: band %d, want %d", w.nodes, band, w.band)
		}
	}
}

func TestInitialStepKeepsTheBandNodesCarry(t *testing.T) {
	for _, c := range []struct {
		name    string
		nodes   int
		carried map[string]int
		want    int
	}{
		{"empty cluster", 0, nil, 0},
		{"95 nodes carrying 15: band 1", 95, map[string]int{"15": 95}, 1},
		{"95 nodes carrying 015 (read as upstream's Atoi does): band 1", 95, map[string]int{"015": 95}, 1},
		{"95 nodes carrying 0: band 0", 95, map[string]int{"0": 95}, 0},
		{"95 nodes without annotations: the lowest band, as upstream counts up", 95, nil, 0},
		{"95 nodes with garbage: the lowest band", 95, map[string]int{"x": 95}, 0},
		{"120 nodes: only band 1 fits", 120, map[string]int{"0": 120}, 1},
		{"950 nodes carrying 60: band 3", 950, map[string]int{"60": 950}, 3},
		{"950 nodes carrying 30: band 2", 950, map[string]int{"30": 950}, 2},
		{"1900 nodes carrying 300: band 4", 1900, map[string]int{"300": 1900}, 4},
		{"3000 nodes: band 4", 3000, nil, 4},
		{"mixed, the majority wins", 95, map[string]int{"0": 50, "15": 45}, 0},
		{"mixed, the majority wins (2)", 95, map[string]int{"0": 40, "15": 55}, 1},
	} {
		if got := initialBand(c.nodes, c.carried); got != c.want {
			t.Errorf("%s: band %d, want %d", c.name, got, c.want)
		}
	}
}
