package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// atLeastTwoCores runs the test with GOMAXPROCS of at least 2, so that wide
// reads pair on any machine.
func atLeastTwoCores(t *testing.T) {
	t.Helper()
	prev := runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// snapshotFixture is a database with n ConfigMaps and a function that adds
// one more through the writer.
func snapshotFixture(t *testing.T, n int) (*DB, func()) {
	t.Helper()
	ctx := context.Background()
	d := openTemp(t)
	cms, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	add := func() {
		t.Helper()
		o := &Object{UID: fmt.Sprint("uid-", next), APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("cm-", next), ResourceVersion: "1"}
		next++
		if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(cms, o)); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		add()
	}
	return d, add
}

func countObjects(t *testing.T, q querier) int {
	t.Helper()
	var n int
	if err := q.QueryRowContext(context.Background(), `SELECT count(*) FROM objects`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A wide read gets two transactions on one snapshot: a commit made while
// it runs is seen by neither.
func TestReadSnapshotPairsOnOneSnapshot(t *testing.T) {
	atLeastTwoCores(t)
	d, add := snapshotFixture(t, 3)
	err := d.readSnapshot(context.Background(), true, func(q querier) error {
		p, ok := q.(*pairedTx)
		if !ok || p.aux == nil {
			t.Fatalf("a wide read on %d cores got %T, want a pair", runtime.GOMAXPROCS(0), q)
		}
		add()
		if a, b := countObjects(t, p.Tx), countObjects(t, p.aux); a != 3 || b != 3 {
			t.Errorf("after a commit during the read, its transactions count %d and %d objects, want 3 and 3", a, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, d.read); n != 4 {
		t.Errorf("after the read, %d objects, want 4", n)
	}
	if got := testutil.ToFloat64(d.pairedReads.WithLabelValues("paired")); got != 1 {
		t.Errorf("paired reads counted %v, want 1", got)
	}
}

// A commit between the two transactions' starts would give them two
// snapshots: the read then runs unsplit, on the first.
func TestReadSnapshotUnpairedWhenACommitComesBetween(t *testing.T) {
	atLeastTwoCores(t)
	d, add := snapshotFixture(t, 3)
	d.split.hook = add
	err := d.readSnapshot(context.Background(), true, func(q querier) error {
		if _, ok := q.(*sql.Tx); !ok {
			t.Errorf("with a commit between the starts, the read got %T, want one transaction", q)
		}
		if n := countObjects(t, q); n != 3 {
			t.Errorf("the read counts %d objects, want the 3 of its first snapshot", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(d.pairedReads.WithLabelValues("moved")); got != 1 {
		t.Errorf("moved reads counted %v, want 1", got)
	}
}

// A read that is not wide, one on a single core, and one that finds every
// pair slot taken run on one transaction.
func TestReadSnapshotSingle(t *testing.T) {
	d, _ := snapshotFixture(t, 1)
	ctx := context.Background()
	one := func(what string, wide bool) {
		t.Helper()
		if err := d.readSnapshot(ctx, wide, func(q querier) error {
			if _, ok := q.(*sql.Tx); !ok {
				t.Errorf("%s: got %T, want one transaction", what, q)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	atLeastTwoCores(t)
	one("not wide", false)
	for range cap(d.pairSlots) {
		d.pairSlots <- struct{}{}
	}
	one("every slot taken", true)
	for range cap(d.pairSlots) {
		<-d.pairSlots
	}
	prev := runtime.GOMAXPROCS(1)
	one("one core", true)
	runtime.GOMAXPROCS(prev)
	if got := testutil.ToFloat64(d.pairedReads.WithLabelValues("single")); got != 2 {
		t.Errorf("single wide reads counted %v, want 2", got)
	}
	if cap(d.pairSlots) != 3 {
		t.Errorf("%d pair slots for 8 read connections, want 3", cap(d.pairSlots))
	}
}

func TestSplitRead(t *testing.T) {
	atLeastTwoCores(t)
	d, _ := snapshotFixture(t, 1)
	ctx := context.Background()
	keysOf := func(n int) []string {
		k := make([]string, n)
		for i := range k {
			k[i] = fmt.Sprint(i)
		}
		return k
	}
	type call struct {
		keys      []string
		off, half int
		aux       bool
	}
	for _, tc := range []struct {
		name   string
		keys   int
		paired bool
		want   []call
	}{
		{"unpaired", 6, false, []call{{keysOf(6), 0, 0, false}}},
		{"paired, too few keys", 3, true, []call{{keysOf(3), 0, 0, false}}},
		{"paired, even", 4, true, []call{{keysOf(4)[:2], 0, 0, false}, {keysOf(4)[2:], 2, 1, true}}},
		{"paired, odd", 5, true, []call{{keysOf(5)[:2], 0, 0, false}, {keysOf(5)[2:], 2, 1, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := d.split.rowMin
			d.split.rowMin = 4
			defer func() { d.split.rowMin = prev }()
			err := d.readSnapshot(ctx, true, func(q querier) error {
				p := q.(*pairedTx)
				if !tc.paired {
					q = p.Tx
				}
				calls := make([]call, 2)
				err := splitRead(ctx, q, keysOf(tc.keys), splitRows, func(_ context.Context, hq querier, keys []string, off, half int) error {
					calls[half] = call{keys, off, half, hq == querier(p.aux)}
					return nil
				})
				calls = slices.DeleteFunc(calls, func(c call) bool { return c.keys == nil })
				if err != nil || fmt.Sprint(calls) != fmt.Sprint(tc.want) {
					t.Errorf("calls %v, %v; want %v", calls, err, tc.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	// Either half's error is the read's; the first's ends the second.
	prev := d.split.rowMin
	d.split.rowMin = 2
	defer func() { d.split.rowMin = prev }()
	boom := errors.New("boom")
	for failing := range 2 {
		var secondSawCancel atomic.Bool
		err := d.readSnapshot(ctx, true, func(q querier) error {
			return splitRead(ctx, q, keysOf(4), splitRows, func(ctx context.Context, _ querier, _ []string, _, half int) error {
				if half == failing {
					return boom
				}
				if half == 1 {
					<-ctx.Done()
					secondSawCancel.Store(true)
				}
				return nil
			})
		})
		if !errors.Is(err, boom) {
			t.Errorf("half %d failing: %v, want boom", failing, err)
		}
		if failing == 0 && !secondSawCancel.Load() {
			t.Errorf("the first half's error did not end the second")
		}
	}
}
