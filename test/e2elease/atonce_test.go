package e2elease

import (
	"slices"
	"testing"
)

// TestAtOnce: two instances led at once only when one led at both its
// answers and the other at an answer asked in between.
func TestAtOnce(t *testing.T) {
	const y, n = true, false
	tests := []struct {
		name string
		asks []bool // instances 0, 1, 2 asked in turn, then again
		want [][2]int
	}{
		{name: "one leader", asks: []bool{n, y, n, n, y, n}},
		{name: "a hand-over between the answers", asks: []bool{y, y, n, n, y, n}},
		{name: "a hand-over, the other way", asks: []bool{n, y, n, y, n, n}},
		{name: "the first leads throughout, the second in between", asks: []bool{y, y, n, y, n, n}, want: [][2]int{{0, 1}}},
		{name: "the second leads throughout, the first in between", asks: []bool{n, y, n, y, y, n}, want: [][2]int{{1, 0}}},
		{name: "the last leads throughout, the first in between", asks: []bool{n, n, y, y, n, y}, want: [][2]int{{2, 0}}},
		{name: "both lead throughout", asks: []bool{y, y, n, y, y, n}, want: [][2]int{{0, 1}, {1, 0}}},
		{name: "none", asks: []bool{n, n, n, n, n, n}},
	}
	for _, tc := range tests {
		if got := atOnce(tc.asks); !slices.Equal(got, tc.want) {
			t.Errorf("%s: atOnce(%v) = %v, want %v", tc.name, tc.asks, got, tc.want)
		}
	}
}
