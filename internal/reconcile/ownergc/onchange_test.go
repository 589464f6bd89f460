package ownergc

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"k8s.io/client-go/util/workqueue"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// What each committed change puts in the queue: an upsert only when it
// changed a fact the collector decides on (db.Change.Facts), as upstream's
// graph builder ignores an update that keeps an object's owners and its
// deletion state; a deletion, the object and the owners it named, or,
// examined in its commit, only if it has dependents or a decision pending,
// and only its owners being deleted; a relist, a full pass.
func TestOnChangeQueuesOnlyOwnershipChanges(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change db.Change
		queued []string
		resync bool
	}{
		{"a Lease renewal", db.Change{Type: db.ChangeUpserted, UID: "lease"}, nil, false},
		{"owners, finalizers or deletion changed", db.Change{Type: db.ChangeUpserted, UID: "pod", OwnershipChanged: true}, []string{"pod"}, false},
		{"deleted", db.Change{Type: db.ChangeDeleted, UID: "rs", Owners: []string{"deploy"}},
			[]string{"gone:" + "rs", "wake:" + "deploy"}, false},
		// A deletion the writer examined: only what it found to matter.
		{"deleted, a leaf whose owners are not being deleted", db.Change{Type: db.ChangeDeleted, UID: "pod",
			Owners: []string{"rs"}, Examined: true}, nil, false},
		{"deleted, with dependents, its owner being deleted", db.Change{Type: db.ChangeDeleted, UID: "rs",
			Owners: []string{"deploy", "other"}, Examined: true, HasDependents: true, DeletingOwners: []string{"deploy"}},
			[]string{"gone:" + "rs", "wake:" + "deploy"}, false},
		{"deleted, a leaf with a decision pending", db.Change{Type: db.ChangeDeleted, UID: "held", Examined: true},
			[]string{"gone:" + "held"}, false},
		{"relisted", db.Change{Type: db.ChangeRelisted, ResourceID: 3}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := dbtest.Open(t)
			if _, err := store.Ledger().UpsertPending(ctx, &db.Pending{Controller: api.ControllerOwnerGC, Rule: "r", Action: "delete", Reason: "x",
				Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "held", UID: "held"}}); err != nil {
				t.Fatal(err)
			}
			applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), Instance: "test",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			c := &Controller{opts: Options{ControllerOptions: reconcile.ControllerOptions{Applier: applier}, DB: store.OwnerGC()}, resync: make(chan struct{}, 1), queue: workqueue.NewTypedRateLimitingQueue(
				workqueue.DefaultTypedControllerRateLimiter[item]())}
			defer c.queue.ShutDown()
			c.OnChange([]db.Change{tt.change})
			var got []string
			for c.queue.Len() > 0 {
				k, _ := c.queue.Get()
				got = append(got, k.String())
				c.queue.Done(k)
			}
			slices.Sort(got)
			want := slices.Clone(tt.queued)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("queued %q, want %q", got, want)
			}
			if resync := len(c.resync) == 1; resync != tt.resync {
				t.Errorf("full pass asked %v, want %v", resync, tt.resync)
			}
		})
	}
}
