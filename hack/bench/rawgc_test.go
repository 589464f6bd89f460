package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestParseRaw(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []rawContender
		wantErr string
	}{
		{in: "32", want: []rawContender{{workers: 32}}},
		{in: "20,paced", want: []rawContender{{workers: 20}, {workers: pacedWorkers, paced: true}}},
		{in: " 32 , 20 ,paced", want: []rawContender{{workers: 32}, {workers: 20}, {workers: pacedWorkers, paced: true}}},
		{in: "paced,32", want: []rawContender{{workers: pacedWorkers, paced: true}, {workers: 32}}},
		{in: "32,watched", want: []rawContender{{workers: 32}, {workers: pacedWorkers, watched: true}}},
		{in: "exact", want: []rawContender{{workers: pacedWorkers, watched: true, exact: true}}},
		{in: "32,beside", want: []rawContender{{workers: 32}, {workers: pacedWorkers, beside: true}}},
		{in: "beside,beside", wantErr: `"beside" is listed twice`},
		{in: "Beside", wantErr: `"Beside" is neither a positive worker count nor one of "paced", "watched", "exact", "beside"`},
		{in: "", wantErr: `"" is neither a positive worker count nor one of "paced", "watched", "exact"`},
		{in: "0", wantErr: `"0" is neither a positive worker count nor one of "paced", "watched", "exact"`},
		{in: "-4", wantErr: `"-4" is neither`},
		{in: "32,,20", wantErr: `"" is neither`},
		{in: "fast", wantErr: `"fast" is neither`},
		{in: "Paced", wantErr: `"Paced" is neither`},
		{in: "32,32", wantErr: `"32" is listed twice`},
		{in: "paced,20,paced", wantErr: `"paced" is listed twice`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseRaw(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseRaw(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("parseRaw(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestRawContenderNames(t *testing.T) {
	for _, tc := range []struct {
		c                  rawContender
		name, column, slug string
	}{
		{c: rawContender{workers: 32}, name: "raw deletes (32 workers)", column: "raw 32", slug: "32"},
		{c: rawContender{workers: 20}, name: "raw deletes (20 workers)", column: "raw 20", slug: "20"},
		{c: rawContender{workers: 32, paced: true}, name: "raw deletes paced to kubegcd (812/s)", column: "raw paced", slug: "paced"},
		{c: rawContender{workers: 32, watched: true}, name: "raw deletes (32 workers), watched", column: "raw watched", slug: "watched"},
		{c: rawContender{workers: 32, watched: true, exact: true}, name: "raw deletes (32 workers) as kubegcd's", column: "raw exact", slug: "exact"},
		{c: rawContender{workers: 32, beside: true}, name: "raw deletes (32), kubegcd beside", column: "raw beside", slug: "beside"},
	} {
		t.Run(tc.slug, func(t *testing.T) {
			if got := tc.c.name(812.4); got != tc.name || len(got) > 38 {
				t.Errorf("name = %q, want %q in the results table's 38 characters", got, tc.name)
			}
			if got := tc.c.column(); got != tc.column || len(got) > 12 {
				t.Errorf("column = %q, want %q in 12 characters", got, tc.column)
			}
			if got := tc.c.slug(); got != tc.slug {
				t.Errorf("slug = %q, want %q", got, tc.slug)
			}
		})
	}
	got := rawSummary([]rawContender{{workers: 32}, {workers: 32, paced: true}, {workers: 32, beside: true}})
	want := "32 workers, 32 workers paced to kubegcd's deletions/s, 32 workers while a kubegcd mirrors the cluster (their owner stays); " +
		"no client-side limit unless paced"
	if got != want {
		t.Errorf("rawSummary = %q, want %q", got, want)
	}
}

func TestRawContenderLimiter(t *testing.T) {
	if l, err := (rawContender{workers: 32}).limiter(800, clock.RealClock{}); l != nil || err != nil {
		t.Errorf("unpaced: limiter %v, %v; want none", l, err)
	}
	if _, err := (rawContender{workers: 32, paced: true}).limiter(0, clock.RealClock{}); err == nil {
		t.Error("paced to 0/s: no error")
	}
	if l, err := (rawContender{workers: 32, paced: true}).limiter(800, clock.RealClock{}); l == nil || err != nil {
		t.Errorf("paced to 800/s: limiter %v, %v", l, err)
	}
}

func names(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("dep-%06d", i)
	}
	return s
}

// TestDeleteAllPacedFakeClock checks the pace exactly: one worker through
// a bucket of 100 tokens/s takes 3 s of the fake clock for 301 deletes.
func TestDeleteAllPacedFakeClock(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	limiter, err := rawContender{workers: 1, paced: true}.limiter(100, clk)
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	first, last, err := deleteAll(context.Background(), clk, names(301), 1, limiter, func(context.Context, string) error {
		deleted++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if deleted != 301 {
		t.Errorf("deleted %d, want 301", deleted)
	}
	if first != 0 {
		t.Errorf("first delete after %s, want at once (a burst of one)", first)
	}
	if d := last - 3*time.Second; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("last delete after %s, want 3s", last)
	}
}

// TestDeleteAllPacedShared checks that parallel workers share one bucket:
// 32 workers at 200/s take about 0.5 s for 101 deletes, not 32 times less.
func TestDeleteAllPacedShared(t *testing.T) {
	const rate, n = 200, 101
	limiter, err := rawContender{workers: 32, paced: true}.limiter(rate, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]int{}
	type outcome struct {
		last time.Duration
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		_, last, err := deleteAll(ctx, clock.RealClock{}, names(n), 32, limiter, func(ctx context.Context, name string) error {
			mu.Lock()
			defer mu.Unlock()
			seen[name]++
			return ctx.Err()
		})
		done <- outcome{last, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-ctx.Done():
		t.Fatal("deleteAll did not finish within 10s")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(seen) != n {
		t.Errorf("deleted %d names, want %d", len(seen), n)
	}
	for name, k := range seen {
		if k != 1 {
			t.Errorf("%s deleted %d times", name, k)
		}
	}
	// The bucket guarantees the lower bound; the upper one leaves room for
	// a busy machine.
	want := time.Duration(n-1) * time.Second / rate
	if o.last < want*9/10 || o.last > 4*want {
		t.Errorf("%d deletes at %d/s took %s, want about %s", n, rate, o.last, want)
	}
}

func TestDeleteAllUnlimitedError(t *testing.T) {
	boom := errors.New("boom")
	var mu sync.Mutex
	calls := 0
	_, _, err := deleteAll(context.Background(), clock.RealClock{}, names(1000), 8, nil, func(_ context.Context, name string) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if name == "dep-000010" {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
	if calls < 11 {
		t.Errorf("%d calls, want at least 11", calls)
	}
}

func TestColumnName(t *testing.T) {
	for _, tc := range []struct {
		r    gcResult
		want string
	}{
		{gcResult{name: "kubegcd"}, "kubegcd"},
		{gcResult{name: "raw deletes (32 workers)"}, "raw"},
		{gcResult{name: "raw deletes (20 workers)", column: "raw 20"}, "raw 20"},
		{gcResult{name: "kube-controller-manager"}, "kcm"},
	} {
		if got := columnName(tc.r); got != tc.want {
			t.Errorf("columnName(%q) = %q, want %q", tc.r.name, got, tc.want)
		}
	}
}

// Every size names valid namespaces, fractions of a thousand included.
func TestNamespaceSize(t *testing.T) {
	for _, n := range []int{500, 2000, 2500, 20000, 50000, 1234567} {
		for _, prefix := range []string{"gc-kubegcd-", "gc-raw-paced-", "gc-kcm-"} {
			ns := prefix + namespaceSize(n)
			if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
				t.Errorf("size %d: namespace %q: %v", n, ns, errs)
			}
		}
	}
}

func TestVerdictRaw(t *testing.T) {
	plain, paced := rawContender{workers: 32}, rawContender{workers: pacedWorkers, paced: true}
	watched := rawContender{workers: pacedWorkers, watched: true}
	exact := rawContender{workers: pacedWorkers, watched: true, exact: true}
	beside := rawContender{workers: pacedWorkers, beside: true}
	for _, tc := range []struct {
		cs   []rawContender
		want int
	}{
		{[]rawContender{plain}, 0},
		{[]rawContender{plain, beside}, 0},
		{[]rawContender{beside, plain}, 1},
		{[]rawContender{paced, watched, exact, beside, {workers: 20}}, 4},
		{[]rawContender{exact, paced}, 0},
	} {
		if got := verdictRaw(tc.cs); got != tc.want {
			t.Errorf("verdictRaw(%v) = %d, want %d", tc.cs, got, tc.want)
		}
	}
}
