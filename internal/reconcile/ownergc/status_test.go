package ownergc

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// TestStatusRow: ownergc's row in /status. A full pass made while part of
// the mirror is behind is skipped, and says so; once caught up the pass is
// made, and the row shows it with the queue it fed and the last item done.
func TestStatusRow(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), Instance: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	passes := reconcile.NewPasses(prometheus.NewRegistry())
	caughtUp := false
	c, err := New(Options{
		ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Passes: passes}, DB: candidateStore{Store: store.OwnerGC(), uids: []string{"a", "b"}},
		CaughtUp: func() bool { return caughtUp },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	row := func() reconcile.PassStatus {
		t.Helper()
		st := passes.Status()
		if len(st) != 1 || st[0].Controller != api.ControllerOwnerGC || st[0].QueueDepth == nil {
			t.Fatalf("status %+v, want one ownergc row with its queue", st)
		}
		return st[0]
	}

	if c.fullPass(ctx) {
		t.Error("a full pass was made while the mirror was behind")
	}
	if r := row(); !r.Skipping || r.SkipReason != reconcile.SkipMirrorNotSynced || r.SkippedPasses != 1 || !r.LastPass.IsZero() || *r.QueueDepth != 0 {
		t.Errorf("behind: row %+v, want skipping (mirror-not-synced), one pass skipped, nothing queued", r)
	}

	caughtUp = true
	if !c.fullPass(ctx) {
		t.Error("no full pass once caught up")
	}
	r := row()
	if r.Skipping || r.LastPass.IsZero() || *r.QueueDepth != 2 || !r.LastWork.IsZero() {
		t.Errorf("caught up: row %+v, want a pass made, two candidates queued, no item worked yet", r)
	}
	c.processNext(ctx)
	if r := row(); *r.QueueDepth != 1 || r.LastWork.IsZero() {
		t.Errorf("after one item: row %+v, want one left in the queue and the item's time", r)
	}
}
