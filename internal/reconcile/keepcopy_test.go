package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// syncBuffer is a log's output, safe for the applier's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestApplierKeepCopy: an enforced delete keeps its copy before it is
// sent, drops it when the delete does not happen, and is held back when
// no copy can be kept.
func TestApplierKeepCopy(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("uid"))
	tests := []struct {
		name     string
		dryRun   bool
		d        Decision
		copyErr  error
		mayWrite error // after the copy
		writeErr error
		// what came of it
		wantKept, wantSent, wantDropped bool
		wantOutcome                     api.Outcome
		wantErr                         string
	}{
		{name: "applied keeps its copy", d: decision("a"), wantKept: true, wantSent: true, wantOutcome: api.OutcomeApplied},
		{name: "gone already keeps it", d: decision("a"), writeErr: notFound, wantKept: true, wantSent: true,
			wantOutcome: api.OutcomeNotFound},
		{name: "refused drops it", d: decision("a"), writeErr: conflict, wantKept: true, wantSent: true, wantDropped: true,
			wantOutcome: api.OutcomeConflict, wantErr: "cannot be fulfilled"},
		{name: "no copy, no delete", d: decision("a"), copyErr: errors.New("GET failed"),
			wantErr: "no copy kept, so not deleted: GET failed"},
		{name: "the lease lost while copying", d: decision("a"), mayWrite: errors.New("not the leader"), wantKept: true,
			wantDropped: true, wantErr: "not the leader"},
		{name: "a patch takes none", d: patch("a"), wantSent: true, wantOutcome: api.OutcomeApplied},
		{name: "dry-run takes none", dryRun: true, d: decision("a"), wantOutcome: api.OutcomeDryRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kept, dropped, sent bool
			var copies int
			mayWrite := func() error { return nil }
			a := newTestApplier(t, ApplierOptions{
				DryRun:   tt.dryRun,
				MayWrite: func() error { return mayWrite() },
				KeepCopy: func(ctx context.Context, d Decision) (func(), error) {
					copies++
					if tt.copyErr != nil {
						return nil, tt.copyErr
					}
					kept = true
					mayWrite = func() error { return tt.mayWrite }
					return func() { dropped = true }, nil
				},
			})
			outcome, err := a.Apply(context.Background(), tt.d, func(context.Context) error {
				sent = true
				return tt.writeErr
			})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Apply error %v, want %q", err, tt.wantErr)
			}
			if outcome != tt.wantOutcome {
				t.Errorf("outcome %q, want %q", outcome, tt.wantOutcome)
			}
			if kept != tt.wantKept || sent != tt.wantSent || dropped != tt.wantDropped {
				t.Errorf("kept %v, sent %v, dropped %v; want %v, %v, %v", kept, sent, dropped,
					tt.wantKept, tt.wantSent, tt.wantDropped)
			}
			if tt.wantSent {
				audit(t, a.store, 1) // the row that resolves the intent
			}
			if open, err := a.store.Ledger().OpenIntents(context.Background()); err != nil || len(open) != 0 {
				t.Errorf("open intents %v, %v: want none", open, err)
			}
		})
	}
}

// TestApplierHeldBackWithoutCopy: a delete whose copy cannot be kept stays
// pending, says why, and is logged once however often it is tried.
func TestApplierHeldBackWithoutCopy(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // in the pending decision's reason
	}{
		{"the copy failed", errors.New("GET failed"), "no copy of the object could be kept"},
		{"the copy alone is larger than the bound", fmt.Errorf("keeping a copy of a: 9 bytes, %w", db.ErrCopyTooLarge),
			"its copy for undo alone is larger than --deleted-copies-max-bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncBuffer
			a := newTestApplier(t, ApplierOptions{
				KeepCopy: func(context.Context, Decision) (func(), error) { return nil, tt.err },
			})
			a.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			ctx := context.Background()
			for range 3 {
				if _, err := a.Apply(ctx, decision("a"), func(context.Context) error {
					t.Error("the delete was sent without a copy")
					return nil
				}); err == nil {
					t.Error("Apply: no error, want the delete held back")
				}
			}
			pending, _, err := a.store.Decisions().ListPending(ctx, db.PendingFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(pending) != 1 || !strings.Contains(pending[0].Reason, tt.want) {
				t.Errorf("pending %+v, want the delete held back, saying %q", pending, tt.want)
			}
			if n := strings.Count(logs.String(), "delete held back"); n != 1 {
				t.Errorf("logged %d times at warn, want once:\n%s", n, logs.String())
			}
			if rows := audit(t, a.store, 0); len(rows) != 0 {
				t.Errorf("audit rows %+v, want none: nothing was done", rows)
			}
		})
	}
}

// TestRecordOperator: an operator's restore is audited with its target, and
// does not count against the blast-radius cap.
func TestRecordOperator(t *testing.T) {
	a := newTestApplier(t, ApplierOptions{MaxDeletionsPerMinute: 1})
	ctx := context.Background()
	target := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c", UID: "new"}
	if err := a.RecordOperator(ctx, api.ActionRestore, target, "restored", map[string]string{"deletedUID": "old"}); err != nil {
		t.Fatal(err)
	}
	rows := audit(t, a.store, 1)
	if len(rows) != 1 {
		t.Fatalf("audit rows %+v, want one", rows)
	}
	r := rows[0]
	if r.Controller != api.ControllerOperator || r.Action != api.ActionRestore || r.Target != target ||
		r.Outcome != api.OutcomeApplied || r.DryRun || !strings.Contains(string(r.Facts), `"deletedUID":"old"`) {
		t.Errorf("row %+v, want the operator's restore of %v", r, target)
	}
	if _, err := a.Apply(ctx, decision("a"), func(context.Context) error { return nil }); err != nil {
		t.Errorf("the first delete after a restore: %v; a restore must not count against the cap", err)
	}
}
