package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// This file keeps watch on the audit store's health. No write goes to the
// cluster while the audit history cannot be written. Every write's intent
// is committed before the write is sent (see Apply), so no write leaves
// without a durable record. The first failure to write an intent, an audit
// row or a pending row pauses enforcement. The rows of writes already made
// wait in memory, in the backlog. Once the database takes writes again,
// Run writes them and enforcement resumes. A row still unwritten when the
// process dies leaves its intent open, and the next start settles it
// (RecoverIntents).
const (
	// ruleAuditStore names the store in the audit row of its recovery.
	ruleAuditStore = "audit-store"
	// maxBacklog bounds the rows kept in memory for a failed store. It is
	// only reached if the store fails again and again: each failure pauses
	// enforcement at once, leaving at most a row per worker.
	maxBacklog = 100000
	// flushChunk is how many backlog rows share one transaction.
	flushChunk = 1000
	// drainTimeout bounds the wait at exit for the rows still queued.
	drainTimeout = 15 * time.Second
)

type ledgerState struct {
	// failedSince is when the store failed; zero while it takes writes.
	failedSince time.Time
	cause       string
	// backlog holds audit rows the store refused, oldest first.
	backlog []*db.AuditEntry
	// inflight counts applied writes whose rows are queued (recordApplied)
	// and not yet committed or refused: at most one per worker, since a
	// worker's next intent commits behind its last row.
	inflight int
}

// LedgerError is nil while the audit history can be written; otherwise
// enforcement is paused and it says why, in one line.
func (a *Applier) LedgerError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ledgerErrorLocked()
}

func (a *Applier) ledgerErrorLocked() error {
	if a.ledger.failedSince.IsZero() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrLedgerUnavailable, a.ledger.cause)
}

// storeFailed pauses enforcement after a write to the audit store failed,
// unless ctx ended (a shutdown, not the store), and returns the error the
// caller reports.
func (a *Applier) storeFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	cause := strings.Join(strings.Fields(err.Error()), " ")
	a.mu.Lock()
	first := a.ledger.failedSince.IsZero()
	if first {
		a.ledger.failedSince = a.opts.Now()
		a.metrics.paused.WithLabelValues(pauseAuditStore).Set(1)
		a.broadcastLocked()
	}
	a.ledger.cause = cause
	a.mu.Unlock()
	if first {
		a.log.Error("audit history cannot be written: enforcement paused until it can", "err", cause)
		Wake(a.failed)
	}
	return fmt.Errorf("%w: %s", ErrLedgerUnavailable, cause)
}

// keep puts a row the store refused in the backlog; beyond its bound the
// row is logged in full instead, the last record left of it.
func (a *Applier) keep(e *db.AuditEntry) {
	a.mu.Lock()
	full := len(a.ledger.backlog) >= maxBacklog
	if !full {
		a.ledger.backlog = append(a.ledger.backlog, e)
	}
	n := len(a.ledger.backlog)
	a.mu.Unlock()
	a.metrics.backlog.Set(float64(n))
	if full {
		a.lose(e, "the audit backlog is full")
	}
}

func (a *Applier) lose(e *db.AuditEntry, why string) {
	a.metrics.lost.Inc()
	a.log.Error("audit row lost: "+why, "time", e.Time, "instance", e.Instance,
		"controller", e.Controller, "rule", e.Rule, "action", e.Action,
		"kind", e.Target.Kind, "namespace", e.Target.Namespace, "name", e.Target.Name, "uid", e.Target.UID,
		"outcome", e.Outcome, "dry_run", e.DryRun, "reason", e.Reason, "error", e.Error,
		"facts", string(e.Facts))
}

// appliedQueue holds the audit rows of applied writes until the writer
// takes them: rows queued while it is busy are written together.
type appliedQueue struct {
	mu     sync.Mutex
	rows   []db.AppliedRow
	queued bool // a writer request that will take rows is queued
}

// recordApplied queues the row of an applied write, which settles what
// was pending about its target, without waiting for it: the write to the
// cluster is done, and the worker need not wait for the disk before taking
// the next one. A row the store refuses joins the backlog and pauses
// enforcement.
func (a *Applier) recordApplied(e *db.AuditEntry) {
	a.mu.Lock()
	a.ledger.inflight++
	a.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = a.opts.Now()
	}
	q := &a.applied
	q.mu.Lock()
	q.rows = append(q.rows, db.AppliedRow{Entry: e, ClearPending: a.pending.has(e.Controller, e.Target.UID)})
	queued := q.queued
	q.queued = true
	q.mu.Unlock()
	if !queued {
		a.opts.DB.WriteApplied(a.takeApplied, a.appliedWritten)
	}
}

// takeApplied empties the queue of applied rows and returns them.
func (a *Applier) takeApplied() []db.AppliedRow {
	q := &a.applied
	q.mu.Lock()
	defer q.mu.Unlock()
	rows := q.rows
	q.rows, q.queued = nil, false
	return rows
}

// appliedWritten hears what became of applied rows: a row committed
// settles its target's pending key; one refused is kept in the backlog.
func (a *Applier) appliedWritten(rows []db.AppliedRow, failed []error, err error) {
	for i, r := range rows {
		rerr := err
		if rerr == nil && failed != nil {
			rerr = failed[i]
		}
		if rerr == nil && r.ClearPending {
			a.pending.remove(r.Entry.Controller, r.Entry.Target.UID)
		}
		if rerr != nil {
			a.keep(r.Entry) // before inflight drops, so that drain sees it
		}
		a.mu.Lock()
		a.ledger.inflight--
		a.broadcastLocked()
		a.mu.Unlock()
		if rerr != nil {
			_ = a.storeFailed(context.Background(), rerr)
		}
	}
}

// Run watches the audit store until ctx ends. Once the store has failed,
// Run writes the backlog every ProbeInterval, then a row of its own. These
// are real writes that need new pages, so a disk still full is not taken
// for a recovered one. When both are committed, enforcement resumes. At
// the end Run waits for the rows still queued and writes the backlog one
// last time. It logs in full the rows it cannot write. Run it beside the
// controllers and stop it after them.
func (a *Applier) Run(ctx context.Context) {
	defer a.drain()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.failed:
		}
		t := time.NewTicker(a.opts.ProbeInterval)
		for !a.probe(ctx) {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		t.Stop()
	}
}

// probe tries the store once and reports whether it takes writes again.
func (a *Applier) probe(ctx context.Context) bool {
	a.mu.Lock()
	since, cause := a.ledger.failedSince, a.ledger.cause
	a.mu.Unlock()
	if since.IsZero() {
		return true
	}
	err := a.flush(ctx)
	if err == nil {
		// First comes a write that changes nothing but takes the write
		// lock. It commits once no other process holds the database and
		// the writes queued before it are through. Only then is the row
		// dated. A row dated before a write that waits on the lock would
		// give the time the waiting began. The first probe runs as the
		// store fails, so it would record a pause of 0s. The row's own
		// write needs new pages, so a disk still full refuses it.
		err = a.opts.DB.ClearPending(ctx, api.ControllerKubegcd, "")
	}
	var pausedFor time.Duration
	if err == nil {
		resumed := a.opts.Now()
		pausedFor = resumed.Sub(since).Round(time.Second)
		reason := fmt.Sprintf("the audit history can be written again after %s: enforcement resumes",
			pausedFor)
		facts := map[string]any{"pausedSince": since.UTC(), "cause": cause}
		err = a.opts.DB.InsertAudit(ctx,
			a.event(api.ControllerKubegcd, ruleAuditStore, api.ActionResume, reason, resumed, facts))
	}
	if err != nil {
		if ctx.Err() == nil {
			a.mu.Lock()
			a.ledger.cause = strings.Join(strings.Fields(err.Error()), " ")
			a.mu.Unlock()
			a.log.Debug("audit store still failing", "err", err)
		}
		return false
	}
	a.mu.Lock()
	if len(a.ledger.backlog) > 0 { // refused meanwhile: go round again
		a.mu.Unlock()
		return false
	}
	a.ledger.failedSince, a.ledger.cause = time.Time{}, ""
	a.metrics.paused.WithLabelValues(pauseAuditStore).Set(0)
	a.broadcastLocked()
	a.mu.Unlock()
	a.log.Info("enforcement resumed", "cause", pauseAuditStore, "paused_for", pausedFor, "was", cause)
	return true
}

// flush writes the backlog, oldest first, a chunk per transaction.
func (a *Applier) flush(ctx context.Context) error {
	for {
		a.mu.Lock()
		chunk := slices.Clone(a.ledger.backlog[:min(len(a.ledger.backlog), flushChunk)])
		a.mu.Unlock()
		if len(chunk) == 0 {
			return nil
		}
		if err := a.insertAudits(ctx, chunk); err != nil {
			return err
		}
		// Only keep appends to the backlog, so the chunk is still its head.
		a.mu.Lock()
		a.ledger.backlog = a.ledger.backlog[len(chunk):]
		if len(a.ledger.backlog) == 0 {
			a.ledger.backlog = nil
		}
		n := len(a.ledger.backlog)
		a.mu.Unlock()
		a.metrics.backlog.Set(float64(n))
		a.log.Info("audit rows written from the backlog", "rows", len(chunk), "left", n)
	}
}

// drain runs at exit: the rows still queued get their outcome, and the
// backlog one more try.
func (a *Applier) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	a.mu.Lock()
	for a.ledger.inflight > 0 {
		changed := a.changed
		a.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			a.log.Error("audit rows still queued at exit: "+
				"the database commits them as it closes, if it can",
				"rows", a.inflight())
			return
		}
		a.mu.Lock()
	}
	a.mu.Unlock()
	if err := a.flush(ctx); err == nil {
		return
	}
	a.mu.Lock()
	rows := a.ledger.backlog
	a.ledger.backlog = nil
	a.mu.Unlock()
	a.metrics.backlog.Set(0)
	for _, e := range rows {
		a.lose(e, "the database did not take it before exit")
	}
}

// insertAudits writes entries in one transaction, and forgets the pending
// keys of the decisions they settle.
func (a *Applier) insertAudits(ctx context.Context, entries []*db.AuditEntry) error {
	if err := a.opts.DB.InsertAudits(ctx, entries); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Settles() {
			a.pending.remove(e.Controller, e.Target.UID)
		}
	}
	return nil
}

func (a *Applier) inflight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ledger.inflight
}
