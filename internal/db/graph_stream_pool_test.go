package db

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A walk of the whole graph whose reader does not take what it is handed
// holds its read transaction as long, but never a connection of the read
// pool: with one read connection, a walk stopped mid-way leaves the short
// reads answering at once.
func TestWalkGraphLeavesReadPool(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, graphFixture(t).Path, Options{ReadOnly: true, ReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	held, release := make(chan struct{}), make(chan struct{})
	walked := make(chan error, 1)
	go func() {
		first := true
		walked <- d.Objects().WalkGraph(ctx, 0, GraphWalk{
			Start: func(bool) error { return nil },
			Node: func(GraphNode) error {
				if first {
					first = false
					close(held)
					<-release
				}
				return nil
			},
			Edge: func(GraphEdge) error { return nil },
		})
	}()
	select {
	case <-held:
	case err := <-walked:
		t.Fatalf("the walk ended before its first node: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the walk handed on no node within 10s")
	}

	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := d.Objects().ResourceStats(short); err != nil {
		t.Errorf("ResourceStats while a walk is held: %v after %s", err, time.Since(start).Round(time.Millisecond))
	}
	if _, err := d.Objects().GetObject(short, "no-such-uid"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetObject while a walk is held: %v, want ErrNotFound", err)
	}
	close(release)
	if err := <-walked; err != nil {
		t.Fatal(err)
	}
}
