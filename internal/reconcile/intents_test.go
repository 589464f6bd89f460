package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// Each write's intent is committed — visible to another connection —
// before the write is sent, for every worker at once, and its outcome row
// resolves it.
func TestIntentCommittedBeforeTheWrite(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{})
	const workers = 32
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i := range workers {
		uid := fmt.Sprint("w", i)
		wg.Go(func() {
			_, errs[i] = a.Apply(ctx, decision(uid), func(context.Context) error {
				if uids := openIntentUIDs(t, a.store); !slices.Contains(uids, uid) {
					return fmt.Errorf("write of %s sent without its intent committed (open: %v)", uid, uids)
				}
				return nil
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	rows := audit(t, a.store, workers)
	for _, r := range rows {
		if r.Outcome != api.OutcomeApplied || r.Error != "" {
			t.Fatalf("row %+v, want applied", r)
		}
	}
	waitFor(t, "every intent is resolved by its row", func() bool { return len(openIntentUIDs(t, a.store)) == 0 })
}

// Dry-run sends nothing, so it commits no intent.
func TestDryRunCommitsNoIntent(t *testing.T) {
	ctx := context.Background()
	a := newTestApplier(t, ApplierOptions{DryRun: true})
	if _, err := a.Apply(ctx, decision("a"), func(context.Context) error {
		t.Fatal("dry-run sent a write")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The next intent's ID counts those ever committed.
	in := &db.Intent{Entry: *a.row(decision("probe"))}
	if err := a.store.Ledger().InsertIntent(ctx, in); err != nil {
		t.Fatal(err)
	}
	if in.ID != 1 {
		t.Fatalf("dry-run committed %d intents, want 0", in.ID-1)
	}
}

// At start, each open intent is settled against the cluster by UID, with
// exactly one audit row; one the cluster cannot answer for stays open.
func TestRecoverIntents(t *testing.T) {
	ctx := context.Background()
	type cluster map[string]string // name → UID of the live object there
	apiDown := errors.New("connection refused")
	for _, tc := range []struct {
		name string
		// the intent is for a patch rather than a delete
		patch   bool
		live    cluster
		liveErr error
		// the one row it gets ("" none), whether it stays pending and
		// whether it stays open
		wantRow     api.Outcome
		wantPending bool
		wantOpen    bool
		wantErr     bool
	}{
		{name: "gone", live: cluster{}, wantRow: api.OutcomeApplied},
		{name: "replaced: another UID at its name", live: cluster{"t": "new-uid"}, wantRow: api.OutcomeApplied},
		{name: "still there", live: cluster{"t": "t"}, wantRow: api.OutcomeUnknown, wantPending: true},
		{name: "patched object still there", patch: true, live: cluster{"t": "t"}, wantRow: api.OutcomeUnknown, wantPending: true},
		{name: "API error: not guessed", liveErr: apiDown, wantOpen: true, wantErr: true},
		{name: "kind not served: left for a later start", liveErr: fmt.Errorf("%w: v1 ConfigMap", ErrKindNotServed), wantOpen: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestApplier(t, ApplierOptions{})
			d := decision("t")
			if tc.patch {
				d = patch("t")
			}
			// A write whose intent committed and whose outcome a crash lost.
			in := &db.Intent{Entry: *a.row(d), ResourceVersion: d.ResourceVersion}
			if err := a.store.Ledger().InsertIntent(ctx, in); err != nil {
				t.Fatal(err)
			}
			a = a.restart(t, ApplierOptions{})
			live := func(ctx context.Context, target api.Target) (string, error) {
				if target != d.Target {
					t.Errorf("looked up %+v, want %+v", target, d.Target)
				}
				return tc.live[target.Name], tc.liveErr
			}
			err := a.RecoverIntents(ctx, live)
			if (err != nil) != tc.wantErr {
				t.Fatalf("RecoverIntents: %v, want error %v", err, tc.wantErr)
			}
			rows, _, lerr := a.store.Decisions().ListAudit(ctx, db.AuditFilter{UID: "t"})
			if lerr != nil {
				t.Fatal(lerr)
			}
			want := []row{}
			if tc.wantRow != "" {
				want = []row{{"ownergc", d.Action, "t", tc.wantRow}}
			}
			if diff := cmp.Diff(want, rowsOf(rows)); diff != "" {
				t.Fatalf("audit (-want +got):\n%s", diff)
			}
			if wantOpen, open := tc.wantOpen, len(openIntentUIDs(t, a.store)) == 1; open != wantOpen {
				t.Errorf("intent open %v, want %v", open, wantOpen)
			}
			pending, _, perr := a.store.Decisions().ListPending(ctx, db.PendingFilter{})
			if perr != nil {
				t.Fatal(perr)
			}
			if got := len(pending) == 1 && pending[0].Action == d.Action; got != tc.wantPending {
				t.Errorf("pending %+v, want pending %v", pending, tc.wantPending)
			}
			// Settled once: a second pass finds nothing more to do.
			if err := a.RecoverIntents(ctx, live); (err != nil) != tc.wantErr {
				t.Fatalf("second RecoverIntents: %v", err)
			}
			if again, _, _ := a.store.Decisions().ListAudit(ctx, db.AuditFilter{UID: "t"}); len(again) != len(rows) {
				t.Fatalf("%d rows after a second pass, want %d", len(again), len(rows))
			}
		})
	}
}

// The lease is asked about again once the intent is committed, which may
// have waited: lost meanwhile, the write is not sent and its intent is
// withdrawn, without an audit row.
func TestLeaseLostWhileTheIntentCommits(t *testing.T) {
	ctx := context.Background()
	errLost := errors.New("not the leader")
	asked := 0
	a := newTestApplier(t, ApplierOptions{MayWrite: func() error {
		if asked++; asked > 1 {
			return errLost
		}
		return nil
	}})
	_, err := a.Apply(ctx, decision("a"), func(context.Context) error {
		t.Error("write sent after the lease was lost")
		return nil
	})
	if !errors.Is(err, errLost) {
		t.Fatalf("Apply: %v, want %v", err, errLost)
	}
	if asked != 2 {
		t.Fatalf("MayWrite asked %d times, want 2: before the intent and after its commit", asked)
	}
	if uids := openIntentUIDs(t, a.store); len(uids) != 0 {
		t.Fatalf("open intents %v: the intent of a write not sent stays", uids)
	}
	if rows := audit(t, a.store, 0); len(rows) != 0 {
		t.Fatalf("audit rows %v for a write not sent", rowsOf(rows))
	}
}

// A write once sent runs to its answer when kubegcd stops, and its outcome
// is recorded; a write not yet sent when the stop comes is not sent, and
// its intent goes.
func TestStopLetsTheWriteInFlightFinish(t *testing.T) {
	a := newTestApplier(t, ApplierOptions{})
	ctx, stop := context.WithCancel(context.Background())
	outcome, err := a.Apply(ctx, decision("in-flight"), func(wctx context.Context) error {
		stop() // SIGTERM while the request is on its way
		select {
		case <-wctx.Done():
			return wctx.Err()
		case <-time.After(50 * time.Millisecond): // the API server answers
			return nil
		}
	})
	if err != nil || outcome != api.OutcomeApplied {
		t.Fatalf("the write in flight: outcome %q, err %v; want applied", outcome, err)
	}
	if got := rowsOf(audit(t, a.store, 1)); len(got) != 1 || got[0].Outcome != api.OutcomeApplied {
		t.Errorf("rows %+v, want one applied", got)
	}

	if _, err := a.Apply(ctx, decision("not-sent"), func(context.Context) error {
		t.Error("a write was sent after the stop")
		return nil
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("after the stop: err %v, want context.Canceled", err)
	}
	if open, err := a.store.Ledger().OpenIntents(context.Background()); err != nil || len(open) != 0 {
		t.Errorf("open intents %+v %v, want none", open, err)
	}
}
