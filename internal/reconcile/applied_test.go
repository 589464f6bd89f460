package reconcile

import (
	"strconv"
	"testing"
	"time"
)

// TestAppliedWritesRememberAMinute: a write is remembered at its version
// for a minute, and forgotten after, by the writes that follow: memory
// holds the last minute's writes, whatever came before.
func TestAppliedWritesRememberAMinute(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	now := t0
	a := &AppliedWrites{now: func() time.Time { return now }}
	for i := range 5000 {
		a.Record("old-"+strconv.Itoa(i), "1")
	}
	a.Record("again", "1")
	now = t0.Add(30 * time.Second)
	a.Record("again", "2") // recorded anew: forgotten by its newer time
	if !a.WrittenAt("old-7", "1") || a.WrittenAt("old-7", "2") || !a.WrittenAt("again", "2") || a.WrittenAt("again", "1") {
		t.Fatal("within the minute, a write is done at its version only")
	}
	a.Record("again", "2")
	now = t0.Add(appliedMemory + time.Second)
	a.Record("new", "1")
	if a.WrittenAt("old-7", "1") {
		t.Error("a write older than a minute is still done")
	}
	if !a.WrittenAt("again", "2") || !a.WrittenAt("new", "1") {
		t.Error("the writes of the last minute are not done")
	}
	if got := len(a.m); got != 2 {
		t.Errorf("%d writes remembered, want the last minute's 2", got)
	}
	if live := len(a.order) - a.head; live > 3 {
		t.Errorf("%d writes in the order, want at most the last minute's 3", live)
	}
}
