package http

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// gatedSource is a LintSource whose every pass waits for a word on release:
// nil streams one dangling reference per pass made so far (the first pass
// counts 1, the second 2 …), an error fails the pass. A pass also ends
// with its context.
type gatedSource struct {
	started chan struct{} // a send at the start of each pass
	release chan error
	passes  atomic.Int32
}

func newGatedSource() *gatedSource {
	return &gatedSource{started: make(chan struct{}, 100), release: make(chan error)}
}

func (g *gatedSource) LintRefs(ctx context.Context, _ string, fn func(*db.LintRef) error) error {
	n := g.passes.Add(1)
	g.started <- struct{}{}
	select {
	case err := <-g.release:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	for i := range n {
		l := &db.LintRef{Dependent: api.Target{UID: "dep", Namespace: "a", Name: "dep"},
			Ref: api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "gone"}, KindServed: true}
		l.Dependent.Name += string(rune('0' + i))
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

func (g *gatedSource) FillDangling(context.Context, []*db.LintRef) error { return nil }

// testClock is a clock tests move while passes read it.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// newTestCounter returns a counter over src on clock that recounts in the
// background at maxAge, as for a large mirror, and what it logs: each pass
// logs before it ends, so a test reads the log once the pass has ended.
func newTestCounter(src *gatedSource, clock *testClock, maxAge time.Duration) (*LintCounter, *bytes.Buffer) {
	logs := &bytes.Buffer{}
	c := NewLintCounter(src, maxAge, slog.New(slog.NewTextHandler(logs, nil)))
	c.now = clock.now
	c.inline = 0
	return c, logs
}

const testDeadline = 10 * time.Second

// passStarted waits for src to start a pass.
func passStarted(t *testing.T, src *gatedSource) {
	t.Helper()
	select {
	case <-src.started:
	case <-time.After(testDeadline):
		t.Fatal("no pass started")
	}
}

// noPassStarted checks that no pass has started since the last one seen.
func noPassStarted(t *testing.T, src *gatedSource) {
	t.Helper()
	select {
	case <-src.started:
		t.Fatal("a pass started")
	default:
	}
}

// passEnded waits for the pass under way, if any, to end.
func passEnded(t *testing.T, c *LintCounter) {
	t.Helper()
	c.mu.Lock()
	pass := c.pass
	c.mu.Unlock()
	if pass == nil {
		return
	}
	select {
	case <-pass:
	case <-time.After(testDeadline):
		t.Fatal("the pass did not end")
	}
}

// release lets the pass under way end with err.
func release(t *testing.T, src *gatedSource, err error) {
	t.Helper()
	select {
	case src.release <- err:
	case <-time.After(testDeadline):
		t.Fatal("no pass to release")
	}
}

type waited struct {
	dangling int
	at       time.Time
	err      error
}

// waitAsync calls Wait in a goroutine and delivers what it returned.
func waitAsync(ctx context.Context, c *LintCounter) <-chan waited {
	out := make(chan waited, 1)
	go func() {
		counts, err := c.Wait(ctx)
		if err != nil {
			out <- waited{err: err}
			return
		}
		out <- waited{dangling: counts.Of("")["KG-LINT-01"], at: counts.At}
	}()
	return out
}

func receive(t *testing.T, ch <-chan waited) waited {
	t.Helper()
	select {
	case w := <-ch:
		return w
	case <-time.After(testDeadline):
		t.Fatal("Wait did not return")
		return waited{}
	}
}

// counted makes c's first count (1 dangling reference, at the clock's time).
func counted(t *testing.T, c *LintCounter, src *gatedSource) {
	t.Helper()
	got := waitAsync(context.Background(), c)
	passStarted(t, src)
	release(t, src, nil)
	if w := receive(t, got); w.err != nil || w.dangling != 1 {
		t.Fatalf("first count: %+v", w)
	}
}

func TestLintCounterFirstPass(t *testing.T) {
	tests := []struct {
		name string
		// start: the counter was started; else the first reader starts
		// the pass.
		start bool
	}{
		{name: "started at start", start: true},
		{name: "started by the first reader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, clock := newGatedSource(), newTestClock()
			c, _ := newTestCounter(src, clock, 30*time.Second)
			at := clock.now()
			if tt.start {
				c.Start(context.Background())
				passStarted(t, src)
			}
			clock.add(5 * time.Second)
			got := waitAsync(context.Background(), c)
			if !tt.start {
				passStarted(t, src)
				at = at.Add(5 * time.Second)
			}
			// The pass holds: the reader has nothing to answer with yet.
			select {
			case w := <-got:
				t.Fatalf("Wait returned %+v before the first pass ended", w)
			default:
			}
			release(t, src, nil)
			w := receive(t, got)
			if w.err != nil || w.dangling != 1 || !w.at.Equal(at) {
				t.Errorf("Wait = %+v, want 1 finding counted at %s", w, at)
			}
			noPassStarted(t, src)
			if n := src.passes.Load(); n != 1 {
				t.Errorf("%d passes, want 1", n)
			}
		})
	}
}

// TestLintCounterStale: readers of a count older than maxAge get it at
// once, with its time, and one pass, not one each, counts anew; a count
// younger starts none.
func TestLintCounterStale(t *testing.T) {
	src, clock := newGatedSource(), newTestClock()
	c, _ := newTestCounter(src, clock, 30*time.Second)
	first := clock.now()
	counted(t, c, src)

	clock.add(30*time.Second - time.Nanosecond)
	if w := receive(t, waitAsync(context.Background(), c)); w.dangling != 1 || !w.at.Equal(first) {
		t.Fatalf("fresh count: %+v", w)
	}
	passEnded(t, c)
	noPassStarted(t, src)

	clock.add(time.Nanosecond)
	second := clock.now()
	var readers []<-chan waited
	for range 10 {
		readers = append(readers, waitAsync(context.Background(), c))
	}
	// The recount holds until released, and no reader waits for it.
	for _, r := range readers {
		if w := receive(t, r); w.err != nil || w.dangling != 1 || !w.at.Equal(first) {
			t.Errorf("stale count: %+v, want the first count", w)
		}
	}
	passStarted(t, src)
	noPassStarted(t, src)
	release(t, src, nil)
	passEnded(t, c)
	if w := receive(t, waitAsync(context.Background(), c)); w.dangling != 2 || !w.at.Equal(second) {
		t.Errorf("after the recount: %+v, want 2 findings counted at %s", w, second)
	}
	if n := src.passes.Load(); n != 2 {
		t.Errorf("%d passes, want 2", n)
	}
}

// TestLintCounterInline: while passes are quick (by the clock), each
// reader waits for a pass that started for it or while it waited, one for
// all who wait together; a slow pass sends the counting to the background,
// and a quick one brings it back.
func TestLintCounterInline(t *testing.T) {
	src, clock := newGatedSource(), newTestClock()
	c, _ := newTestCounter(src, clock, 30*time.Second)
	c.inline = lintCountInline
	counted(t, c, src)

	// A count a second old: the readers wait for one pass.
	clock.add(time.Second)
	second := clock.now()
	var readers []<-chan waited
	for range 10 {
		readers = append(readers, waitAsync(context.Background(), c))
	}
	passStarted(t, src)
	for _, r := range readers {
		select {
		case w := <-r:
			t.Fatalf("a reader did not wait for the pass: %+v", w)
		default:
		}
	}
	// The pass takes a second: slow.
	clock.add(time.Second)
	release(t, src, nil)
	for _, r := range readers {
		if w := receive(t, r); w.err != nil || w.dangling != 2 || !w.at.Equal(second) {
			t.Errorf("reader: %+v, want 2 findings counted at %s", w, second)
		}
	}
	noPassStarted(t, src)

	// After a slow pass, a fresh count is answered as it is ...
	if w := receive(t, waitAsync(context.Background(), c)); w.dangling != 2 {
		t.Errorf("after a slow pass: %+v, want the count of 2 at once", w)
	}
	noPassStarted(t, src)
	// ... and a stale one at once, while it is counted in the background,
	// quickly: the next reader waits again.
	clock.add(30 * time.Second)
	if w := receive(t, waitAsync(context.Background(), c)); w.dangling != 2 {
		t.Errorf("stale after a slow pass: %+v, want the count of 2 at once", w)
	}
	passStarted(t, src)
	release(t, src, nil)
	passEnded(t, c)
	got := waitAsync(context.Background(), c)
	passStarted(t, src)
	release(t, src, nil)
	if w := receive(t, got); w.dangling != 4 {
		t.Errorf("after a quick pass again: %+v, want the reader's own count of 4", w)
	}
	if n := src.passes.Load(); n != 4 {
		t.Errorf("%d passes, want 4", n)
	}
}

// TestLintCounterErrors: a failed recount is logged and the count kept; a
// failed first pass is the readers' error, and the next reader tries again.
func TestLintCounterErrors(t *testing.T) {
	t.Run("recount", func(t *testing.T) {
		src, clock := newGatedSource(), newTestClock()
		c, logs := newTestCounter(src, clock, 30*time.Second)
		first := clock.now()
		counted(t, c, src)
		clock.add(time.Minute)
		if w := receive(t, waitAsync(context.Background(), c)); w.dangling != 1 {
			t.Fatalf("stale count: %+v", w)
		}
		passStarted(t, src)
		release(t, src, errors.New("disk I/O error"))
		passEnded(t, c)
		if !strings.Contains(logs.String(), "level=ERROR msg=\"counting the lint findings\" err=\"disk I/O error\"") {
			t.Errorf("the failed recount is not logged:\n%s", logs)
		}
		w := receive(t, waitAsync(context.Background(), c))
		if w.err != nil || w.dangling != 1 || !w.at.Equal(first) {
			t.Errorf("after a failed recount: %+v, want the first count kept", w)
		}
		// That reader found it stale still: another pass.
		passStarted(t, src)
		release(t, src, nil)
		passEnded(t, c)
	})
	t.Run("first pass", func(t *testing.T) {
		src, clock := newGatedSource(), newTestClock()
		c, _ := newTestCounter(src, clock, 30*time.Second)
		got := waitAsync(context.Background(), c)
		passStarted(t, src)
		release(t, src, errors.New("disk I/O error"))
		if w := receive(t, got); w.err == nil || !strings.Contains(w.err.Error(), "disk I/O error") {
			t.Errorf("Wait = %+v, want the pass's error", w)
		}
		got = waitAsync(context.Background(), c)
		passStarted(t, src)
		release(t, src, nil)
		if w := receive(t, got); w.err != nil || w.dangling != 2 {
			t.Errorf("Wait after a failed first pass = %+v, want the second pass's count", w)
		}
	})
}

// TestLintCounterCancel: a reader that gives up waiting for the first pass
// leaves it running for the next; Start's context ends every pass, which
// is not an error to log.
func TestLintCounterCancel(t *testing.T) {
	t.Run("reader", func(t *testing.T) {
		src, clock := newGatedSource(), newTestClock()
		c, _ := newTestCounter(src, clock, 30*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		got := waitAsync(ctx, c)
		passStarted(t, src)
		cancel()
		if w := receive(t, got); !errors.Is(w.err, context.Canceled) {
			t.Errorf("Wait = %+v, want context.Canceled", w)
		}
		got = waitAsync(context.Background(), c)
		release(t, src, nil)
		if w := receive(t, got); w.err != nil || w.dangling != 1 {
			t.Errorf("next Wait = %+v, want the same pass's count", w)
		}
		noPassStarted(t, src)
	})
	t.Run("start", func(t *testing.T) {
		src, clock := newGatedSource(), newTestClock()
		c, logs := newTestCounter(src, clock, 30*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		c.Start(ctx)
		passStarted(t, src)
		got := waitAsync(context.Background(), c)
		cancel()
		if w := receive(t, got); !errors.Is(w.err, context.Canceled) {
			t.Errorf("Wait = %+v, want the pass's context.Canceled", w)
		}
		if strings.Contains(logs.String(), "level=ERROR") {
			t.Errorf("a pass ended by Start's context is logged as an error:\n%s", logs)
		}
	})
}
