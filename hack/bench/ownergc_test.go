package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRoundOrder(t *testing.T) {
	for _, tc := range []struct {
		n, round int
		want     []int
	}{
		{n: 3, round: 0, want: []int{0, 1, 2}},
		{n: 3, round: 1, want: []int{1, 2, 0}},
		{n: 3, round: 2, want: []int{2, 0, 1}},
		{n: 3, round: 3, want: []int{0, 1, 2}},
		{n: 1, round: 4, want: []int{0}},
	} {
		if got := roundOrder(tc.n, tc.round); !slices.Equal(got, tc.want) {
			t.Errorf("roundOrder(%d, %d) = %v, want %v", tc.n, tc.round, got, tc.want)
		}
	}
	// Over n rounds, every contender runs once at every position.
	const n = 4
	seen := map[[2]int]bool{}
	for round := range n {
		for pos, c := range roundOrder(n, round) {
			seen[[2]int{c, pos}] = true
		}
	}
	if len(seen) != n*n {
		t.Errorf("over %d rounds, %d of the %d contender–position pairs ran", n, len(seen), n*n)
	}
}

func TestRoundSuffix(t *testing.T) {
	if got := roundSuffix(0, 1); got != "" {
		t.Errorf("one round: suffix %q, want none", got)
	}
	if got := roundSuffix(1, 3); got != "-r2" {
		t.Errorf("round 2 of 3: suffix %q, want -r2", got)
	}
}

// gcRound is one round of kubegcd, one raw contender and
// kube-controller-manager, each with n deletions over the given seconds.
func gcRound(kubegcd, raw, kcm float64, first time.Duration) []gcResult {
	const n = 1000
	at := func(name string, seconds float64) gcResult {
		return gcResult{name: name, n: n, last: time.Duration(seconds * float64(time.Second)), apiserverCPU: seconds / 2,
			api: apiCounts{"request DELETE configmaps 200": n}}
	}
	rs := []gcResult{at("kubegcd", kubegcd), at("raw deletes (32 workers)", raw), at("kube-controller-manager", kcm)}
	rs[0].first = first
	return rs
}

func TestOwnerGCVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    string
		byRound [][]gcResult
		want    []string
	}{{
		name:    "one round",
		size:    "20k",
		byRound: [][]gcResult{gcRound(1, 0.95, 2, 200*time.Millisecond)},
		want: []string{
			"20k: kubegcd vs kube-controller-manager: 2.00× (target ≥ 1.8×) ok",
			"20k: kubegcd vs raw deletes (32 workers): 0.95× (target ≥ 0.9×) ok",
			// The control plane's CPU is proportional to the time here.
			"20k: kubegcd's control-plane CPU per deletion vs raw deletes (32 workers): 1.05× (target ≤ 1.1×) ok",
			"20k: kubegcd first deletion after 200ms (target ≤ 500ms) ok",
		},
	}, {
		// kubegcd against raw: 0.80×, 1.00×, 0.95× (median 0.95×), and its
		// first deletion is too slow in round 2 only.
		name: "three rounds",
		size: "50k",
		byRound: [][]gcResult{
			gcRound(1, 0.8, 1.7, 200*time.Millisecond),
			gcRound(1, 1, 1.9, 600*time.Millisecond),
			gcRound(1, 0.95, 1.5, 100*time.Millisecond),
		},
		want: []string{
			"50k: kubegcd vs kube-controller-manager: 1.70× (median of 1.70×, 1.90×, 1.50×; target ≥ 1.8×) FAIL",
			"50k: kubegcd vs raw deletes (32 workers): 0.95× (median of 0.80×, 1.00×, 0.95×; target ≥ 0.9×) ok",
			"50k: kubegcd's control-plane CPU per deletion vs raw deletes (32 workers): 1.05× (median of 1.25×, 1.00×, 1.05×; target ≤ 1.1×) ok",
			"50k: kubegcd first deletion after 600ms (slowest of 3 rounds; target ≤ 500ms) FAIL",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			ownerGCVerdicts(&out, tc.size, tc.byRound, 1)
			if got := strings.Split(strings.TrimSpace(out.String()), "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		vs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.vs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.vs, got, tc.want)
		}
	}
}

func TestMergeRounds(t *testing.T) {
	a := gcRound(1, 1, 2, 0)
	b := gcRound(1, 1, 2, 0)
	b[0].api = apiCounts{"request DELETE configmaps 200": 1000, "request GET configmaps 200": 500}
	b[1].api = nil // its metrics were not read in that round
	merged := mergeRounds([][]gcResult{a, b})
	if merged[0].n != 2000 || merged[0].api["request DELETE configmaps 200"] != 2000 || merged[0].api["request GET configmaps 200"] != 500 {
		t.Errorf("kubegcd over two rounds: n %d, api %v", merged[0].n, merged[0].api)
	}
	if merged[1].n != 1000 || merged[1].api["request DELETE configmaps 200"] != 1000 {
		t.Errorf("raw with one round unread: n %d, api %v; want the other round alone", merged[1].n, merged[1].api)
	}
	if a[0].api["request GET configmaps 200"] != 0 || a[0].n != 1000 {
		t.Errorf("mergeRounds changed its input: %v", a[0])
	}
	none := mergeRounds([][]gcResult{{{name: "kubegcd", n: 1000}}})
	if none[0].api != nil || none[0].n != 1000 {
		t.Errorf("no metrics in any round: n %d, api %v; want the deletions and no counts", none[0].n, none[0].api)
	}
}

func TestResultsTableRoundOrder(t *testing.T) {
	var out bytes.Buffer
	resultsTable(&out, [][]gcResult{gcRound(1, 1, 2, 0), gcRound(1, 1, 2, 0)})
	var rows []string
	for line := range strings.SplitSeq(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] != "CPU" && f[0] != "contender" {
			rows = append(rows, f[0])
		}
	}
	// Each round lists its rows in the order they ran.
	want := []string{"round", "kubegcd", "raw", "kube-controller-manager", "round", "raw", "kube-controller-manager", "kubegcd"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows begin %v, want %v\n%s", rows, want, out.String())
	}
	out.Reset()
	resultsTable(&out, [][]gcResult{gcRound(1, 1, 2, 0)})
	if strings.Contains(out.String(), "round") {
		t.Errorf("a single round is headed as a round:\n%s", out.String())
	}
}
