package reconcile

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

var (
	_ Ledger       = db.Ledger{}
	_ KindResolver = db.Objects{}
)

// pendingUIDs lists the uids controller holds pending rows about, and
// fails the test when the applier's memory disagrees with the table.
func pendingUIDs(t *testing.T, a *testApplier, controller api.Controller) []string {
	t.Helper()
	rows, _, err := a.store.Decisions().ListPending(context.Background(), db.PendingFilter{Controller: controller})
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for _, r := range rows {
		uids = append(uids, r.Target.UID)
	}
	slices.Sort(uids)
	held := a.pending.of(controller)
	slices.Sort(held)
	if !slices.Equal(uids, held) {
		t.Fatalf("pending rows of %s: %q; the applier holds %q", controller, uids, held)
	}
	return uids
}

// The applier owns what is pending: each way a decision is recorded adds
// its key before its row, and each way it ends (resolved, carried out,
// its object gone, dropped at the end of a pass) removes row and key.
func TestPendingLifecycle(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{})
	// Held before this applier started: it learns them from the table.
	if _, err := a.store.Ledger().UpsertPending(ctx, &db.Pending{Controller: "ownergc", Rule: "r", Action: "delete", Reason: "x",
		Target: decision("earlier").Target}); err != nil {
		t.Fatal(err)
	}
	a = a.restart(t, ApplierOptions{})
	if got := pendingUIDs(t, a, "ownergc"); !slices.Equal(got, []string{"earlier"}) {
		t.Fatalf("after a restart the applier holds %q, want earlier", got)
	}
	if err := a.Resolve(ctx, "ownergc", "earlier"); err != nil {
		t.Fatal(err)
	}
	if got := pendingUIDs(t, a, "ownergc"); len(got) != 0 {
		t.Fatalf("resolved, still pending: %q", got)
	}

	// Deferred, then carried out: the applied row, committed after Apply
	// returns, takes the decision with it.
	if err := a.Defer(ctx, decision("waits"), a.clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Failed, then found gone on the retry.
	if _, err := a.Apply(ctx, decision("fails"), func(context.Context) error { return errors.New("boom") }); err == nil {
		t.Fatal("a failed write returned no error")
	}
	if got := pendingUIDs(t, a, "ownergc"); !slices.Equal(got, []string{"fails", "waits"}) {
		t.Fatalf("pending %q, want fails and waits", got)
	}
	if _, err := a.Apply(ctx, decision("waits"), ok); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(ctx, decision("fails"), func(context.Context) error {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "fails")
	}); err != nil {
		t.Fatal(err)
	}
	audit(t, a.store, 3) // the failure, the applied write, the not-found
	waitFor(t, "the applied rows to settle their decisions", func() bool { return a.inflight() == 0 })
	if got := pendingUIDs(t, a, "ownergc"); len(got) != 0 {
		t.Fatalf("carried out, still pending: %q", got)
	}
}

// EndPass forgets what keep rejects, and keep may look at what is pending:
// it runs outside the pending set's lock (inside, this test never ends).
func TestEndPassCallsKeepUnlocked(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{DryRun: true})
	for _, uid := range []string{"kept", "stale"} {
		if _, err := a.Record(ctx, decision(uid)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- a.EndPass(ctx, "ownergc", func(uid string) bool { return uid == "kept" && a.HasPending("ownergc", uid) })
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("EndPass still running after 10s: keep, which reads the pending set, ran under its lock")
	}
	if got := pendingUIDs(t, a, "ownergc"); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("pending after the pass %q, want kept only", got)
	}
}
