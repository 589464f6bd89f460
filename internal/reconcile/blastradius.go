package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// ErrNotHeld is returned by Release when no manual hold is in force.
var ErrNotHeld = errors.New("enforcement is not held")

// ruleBlastRadius names the cap in the audit rows of a hold and a release.
const ruleBlastRadius = "blast-radius-cap"

// capState is the state of the blast-radius cap: a sliding minute of
// writes to the cluster, deletes and patches alike.
type capState struct {
	// window holds when each write of the last minute was admitted: those
	// in flight and those applied. A write that changed nothing (a
	// conflict, a failure, an object already gone) gives its room back.
	window []time.Time
	// pausedSince is when the cap first refused a write; zero while
	// writes pass.
	pausedSince time.Time
	// held says that the pause lasts until Release (ManualResume).
	held bool
}

func (a *Applier) capReasonLocked() string {
	if a.cap.held {
		return fmt.Sprintf("the blast-radius cap (--max-deletions-per-minute=%d, "+
			"deletes and patches alike) tripped at %s; with --blast-radius-resume=manual "+
			"enforcement stays paused until an operator releases it (kubegcd release)",
			a.opts.MaxDeletionsPerMinute, a.cap.pausedSince.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%d writes in the last minute reached --max-deletions-per-minute=%d "+
		"(deletes and patches alike); enforcement resumes when the rate falls or the cap is raised",
		len(a.cap.window), a.opts.MaxDeletionsPerMinute)
}

func (a *Applier) trimLocked(now time.Time) {
	cut := 0
	for cut < len(a.cap.window) && now.Sub(a.cap.window[cut]) >= time.Minute {
		cut++
	}
	a.cap.window = a.cap.window[cut:]
}

// admit reserves room for one write under the cap, and returns when it did
// (zero without a cap).
func (a *Applier) admit(ctx context.Context) (time.Time, error) {
	a.mu.Lock()
	if !a.ledger.failedSince.IsZero() {
		err := a.ledgerErrorLocked()
		a.mu.Unlock()
		return time.Time{}, err
	}
	at, tripped, err := a.reserveLocked(a.opts.Now())
	var hold *db.AuditEntry
	if tripped {
		facts := map[string]int{"writesLastMinute": len(a.cap.window),
			"maxDeletionsPerMinute": a.opts.MaxDeletionsPerMinute}
		hold = a.event(api.ControllerKubegcd, ruleBlastRadius, api.ActionPause, a.capReasonLocked(),
			a.cap.pausedSince, facts)
	}
	a.mu.Unlock()
	if hold != nil {
		// This row is what keeps the hold across a restart; should the
		// store refuse it, it waits in the backlog like any other.
		_ = a.audit(context.WithoutCancel(ctx), hold)
	}
	return at, err
}

// reserveLocked takes room for one write in the window; tripped reports
// that this refusal started a manual hold.
func (a *Applier) reserveLocked(now time.Time) (at time.Time, tripped bool, err error) {
	if a.cap.held {
		return time.Time{}, false, errCapReached
	}
	limit := a.opts.MaxDeletionsPerMinute
	if limit <= 0 {
		return time.Time{}, false, nil
	}
	a.trimLocked(now)
	if len(a.cap.window) >= limit {
		if a.cap.pausedSince.IsZero() {
			a.cap.pausedSince, a.cap.held = now, a.opts.ManualResume
			tripped = a.cap.held
			a.metrics.paused.WithLabelValues(pauseBlastRadius).Set(1)
			a.log.Warn("enforcement paused", "reason", a.capReasonLocked())
		}
		return time.Time{}, tripped, errCapReached
	}
	if !a.cap.pausedSince.IsZero() {
		a.log.Info("enforcement resumed", "cause", pauseBlastRadius,
			"paused_for", now.Sub(a.cap.pausedSince).Round(time.Second))
		a.cap.pausedSince = time.Time{}
		a.metrics.paused.WithLabelValues(pauseBlastRadius).Set(0)
	}
	a.cap.window = append(a.cap.window, now)
	return now, false, nil
}

// unreserve gives back the room reserved at at.
func (a *Applier) unreserve(at time.Time) {
	if at.IsZero() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.cap.window) - 1; i >= 0; i-- {
		if a.cap.window[i].Equal(at) {
			a.cap.window = slices.Delete(a.cap.window, i, i+1)
			return
		}
	}
}

// Restore recovers the cap's state from the audit history, so that a
// restart does not reset it. It restores the writes applied in the last
// minute since the last release, by any run of kubegcd on this database.
// With ManualResume, it also restores a hold that no operator has
// released. Without ManualResume, it releases such a hold and records the
// release. Call it before the first Apply, when this instance starts to
// write.
func (a *Applier) Restore(ctx context.Context) error {
	if a.opts.DryRun {
		return nil
	}
	action, at, err := a.opts.DB.LastHold(ctx)
	if err != nil {
		return err
	}
	since := a.opts.Now().Add(-time.Minute)
	if action == api.ActionRelease && at.After(since) {
		since = at // what an operator released no longer counts
	}
	var times []time.Time
	if a.opts.MaxDeletionsPerMinute > 0 {
		if times, err = a.opts.DB.AppliedWriteTimes(ctx, since); err != nil {
			return err
		}
	}
	a.mu.Lock()
	a.cap.window = times
	held := action == api.ActionPause && a.opts.ManualResume
	if held {
		a.cap.held, a.cap.pausedSince = true, at
		a.metrics.paused.WithLabelValues(pauseBlastRadius).Set(1)
		a.log.Warn("enforcement paused", "reason", a.capReasonLocked())
	}
	a.mu.Unlock()
	a.log.Info("blast-radius window restored from the audit history", "writes_last_minute", len(times))
	if action == api.ActionPause && !held {
		// Running with auto releases the hold. The release is recorded, so
		// that a later run with manual does not take the hold up again. A
		// row the store refuses waits in the backlog, and enforcement
		// waits with it.
		reason := "a manual hold of an earlier run is released: this run has --blast-radius-resume=auto"
		a.log.Warn("enforcement released", "reason", reason, "held_since", at)
		release := a.event(api.ControllerKubegcd, ruleBlastRadius, api.ActionRelease, reason, a.opts.Now(),
			map[string]any{"heldSince": at.UTC()})
		_ = a.audit(ctx, release)
	}
	return nil
}

// Release ends a manual hold of the blast-radius cap: an operator's
// decision, recorded in the audit history (by says who asked) before it
// takes effect. The writes before it no longer count against the cap.
func (a *Applier) Release(ctx context.Context, reason, by string) error {
	a.releaseMu.Lock()
	defer a.releaseMu.Unlock()
	if err := a.LedgerError(); err != nil {
		return err
	}
	a.mu.Lock()
	held, since := a.cap.held, a.cap.pausedSince
	a.mu.Unlock()
	switch {
	case !held && !since.IsZero():
		return fmt.Errorf("%w: the blast-radius cap resumes by itself when the rate falls "+
			"(--blast-radius-resume=auto)", ErrNotHeld)
	case !held:
		return fmt.Errorf("%w: nothing is paused by the blast-radius cap", ErrNotHeld)
	}
	if reason == "" {
		reason = "no reason given"
	}
	now := a.opts.Now()
	e := a.event(api.ControllerOperator, ruleBlastRadius, api.ActionRelease, reason, now,
		map[string]any{"by": by, "heldSince": since.UTC()})
	if err := a.opts.DB.InsertAudit(ctx, e); err != nil {
		// Not kept for later: a release that is not recorded does not
		// happen.
		return a.storeFailed(ctx, err)
	}
	a.mu.Lock()
	a.cap.held, a.cap.pausedSince, a.cap.window = false, time.Time{}, nil
	a.metrics.paused.WithLabelValues(pauseBlastRadius).Set(0)
	a.mu.Unlock()
	a.log.Warn("enforcement released by an operator", "reason", reason, "by", by,
		"held_for", now.Sub(since).Round(time.Second))
	return nil
}

// RecordOperator audits an operator's act on target, such as a restore:
// controller operator, outcome applied. It is not a controller's write and
// does not count against the blast-radius cap. The act has happened: a row
// the database refuses is kept and written later, and the error says so.
func (a *Applier) RecordOperator(ctx context.Context, action api.Action, target api.Target, reason string,
	facts any) error {
	e := a.event(api.ControllerOperator, "", action, reason, a.opts.Now(), facts)
	e.Target = target
	a.logDecision(e, slog.LevelInfo)
	return a.audit(ctx, e)
}
