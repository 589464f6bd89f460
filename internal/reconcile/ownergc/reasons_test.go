package ownergc

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

func TestFinalizerReasons(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"foreground, enforce", foregroundReason(0, 0),
			"no dependent with blockOwnerDeletion remains: removing the foregroundDeletion finalizer"},
		{"foreground, dry-run deleted two", foregroundReason(2, 0),
			"once its 2 dependents with blockOwnerDeletion are deleted (dry-run: they are not), the foregroundDeletion finalizer would be removed"},
		{"foreground, dry-run deleted one", foregroundReason(1, 0),
			"once its 1 dependent with blockOwnerDeletion is deleted (dry-run: it is not), the foregroundDeletion finalizer would be removed"},
		{"foreground, dry-run unblocked one", foregroundReason(0, 1),
			"once its 1 dependent with blockOwnerDeletion no longer blocks it (dry-run: it does still), the foregroundDeletion finalizer would be removed"},
		{"foreground, dry-run both", foregroundReason(2, 1),
			"once 2 of its dependents with blockOwnerDeletion are deleted and 1 no longer blocks it (dry-run: none of this is done), the foregroundDeletion finalizer would be removed"},
		{"orphan, enforce", orphanReason(3, false), "3 dependent(s) orphaned: removing the orphan finalizer"},
		{"orphan, dry-run", orphanReason(3, true),
			"once its 3 dependents no longer name it (dry-run: they do still), the orphan finalizer would be removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("reason\n got %q\nwant %q", tc.got, tc.want)
			}
		})
	}
}

// TestDryRunForegroundReason: an owner deleted in the foreground, whose
// blocking dependents dry-run has deleted or released (the cluster still
// holds them), is recorded with what enforce would do, marked as not done
// — not with "no dependent with blockOwnerDeletion remains".
func TestDryRunForegroundReason(t *testing.T) {
	block := func(b bool) *bool { return &b }
	for _, tc := range []struct {
		name   string
		dryRun func(o *overlay)
		want   string
	}{
		{name: "both blocking dependents deleted",
			dryRun: func(o *overlay) { o.delete("dep-1"); o.delete("dep-2"); o.delete("dep-3") },
			want:   "once its 2 dependents with blockOwnerDeletion are deleted (dry-run: they are not), the foregroundDeletion finalizer would be removed"},
		{name: "one deleted, one unblocked",
			dryRun: func(o *overlay) { o.delete("dep-1"); o.unblockRefs("dep-2", []string{"owner"}) },
			want:   "once 1 of its dependents with blockOwnerDeletion is deleted and 1 no longer blocks it (dry-run: none of this is done), the foregroundDeletion finalizer would be removed"},
		{name: "references removed",
			dryRun: func(o *overlay) { o.removeRefs("dep-1", []string{"owner"}); o.removeRefs("dep-2", []string{"owner"}) },
			want:   "once its 2 dependents with blockOwnerDeletion no longer block it (dry-run: they do still), the foregroundDeletion finalizer would be removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := dbtest.Open(t)
			rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
			if err != nil {
				t.Fatal(err)
			}
			deleted := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
			owner := &db.Object{UID: "owner", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "held-owner", ResourceVersion: "5",
				DeletionTimestamp: &deleted, Finalizers: []string{"foregroundDeletion", "example.com/hold"}}
			events := []db.Event{{ResourceID: rid, Object: owner}}
			for i, b := range []bool{true, true, false} {
				uid := "dep-" + string(rune('1'+i))
				events = append(events, db.Event{ResourceID: rid, Object: &db.Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap",
					Namespace: "ns", Name: "held-" + uid, ResourceVersion: "6",
					OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "held-owner", UID: "owner", BlockOwnerDeletion: block(b)}}}})
			}
			if _, err := store.Mirror().ApplyEvents(ctx, events); err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), DryRun: true, Instance: "test", Logger: log,
				Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(Options{ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Registerer: prometheus.NewRegistry()}, DB: store.OwnerGC()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.queue.ShutDown)
			tc.dryRun(c.overlay)
			if err := c.deleteDependents(ctx, owner); err != nil {
				t.Fatal(err)
			}
			rows, _, err := store.Decisions().ListPending(ctx, db.PendingFilter{Controller: api.ControllerOwnerGC})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Target.UID != "owner" || rows[0].Action != api.ActionRemoveFinalizer {
				t.Fatalf("pending %+v, want the owner's finalizer removal", rows)
			}
			if rows[0].Reason != tc.want {
				t.Errorf("reason\n got %q\nwant %q", rows[0].Reason, tc.want)
			}
		})
	}
}
