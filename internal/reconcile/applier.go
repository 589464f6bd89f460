// Package reconcile holds what every controller shares. Its applier
// records each decision as pending and in the audit history, then applies
// it. Writes are rate limited and capped, and dry-run sends none. No write
// leaves while its record cannot be kept.
package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/promutil"
)

// ErrPaused is returned by Apply, Record and Defer while enforcement is
// paused, by the blast-radius cap or because the audit history cannot be
// written: the caller retries later; the decision did not fail.
var ErrPaused = errors.New("enforcement paused")

// ErrLedgerUnavailable is the pause of a failed audit store; it is an
// ErrPaused.
var ErrLedgerUnavailable = fmt.Errorf("%w: audit history cannot be written", ErrPaused)

// errCapReached is the pause of the blast-radius cap.
var errCapReached = fmt.Errorf("%w by the blast-radius cap", ErrPaused)

// Decision is what a controller decided to do about one object.
type Decision struct {
	Controller api.Controller
	Rule       string
	// RuleHash is the hash of the text of the cleanup rule that decided;
	// "" for a collector. A copy kept for undo records it.
	RuleHash string
	Action   api.Action
	Target   api.Target
	// ResourceVersion of the target the decision was made on.
	ResourceVersion string
	Reason          string
	// Facts is what the decision rested on; it is stored as JSON.
	Facts any
	// DecidedAt is when the decision was made, for the latency metric.
	DecidedAt time.Time
}

// ApplierOptions configure an Applier.
type ApplierOptions struct {
	DB       Ledger
	DryRun   bool
	Instance string
	Logger   *slog.Logger
	// MayWrite, if set, is asked before every write: an error (this
	// instance does not hold the leader-election lease) holds it back.
	MayWrite func() error
	// MaxDeletionsPerMinute caps the writes to the cluster in any minute,
	// deletes and patches alike; 0 means no cap.
	MaxDeletionsPerMinute int
	// ManualResume keeps enforcement paused, once the cap trips, until an
	// operator releases it (Release), across restarts; otherwise it
	// resumes when the rate falls.
	ManualResume bool
	// KeepCopy, if set, keeps a copy of the object of an enforced delete
	// (d.Action is api.ActionDelete) after the write's intent commits and
	// before the write is sent: the undo of the delete. It decides which
	// decisions get a copy; one that needs none returns a nil drop. When
	// the delete is not applied (nor finds the object gone), drop is
	// called. An error holds the delete back: no copy, no delete. It stays
	// pending and is tried again with the next decision.
	KeepCopy func(ctx context.Context, d Decision) (drop func(), err error)
	// ProbeInterval is how often Run tries a failed audit store again
	// (default 1s).
	ProbeInterval time.Duration
	Registerer    prometheus.Registerer
	Now           func() time.Time
}

// Applier applies decisions for every controller.
type Applier struct {
	opts    ApplierOptions
	log     *slog.Logger
	metrics *applierMetrics

	// recovering lets one RecoverIntents run at a time: two would each
	// write a row for the same open intent.
	recovering sync.Mutex

	mu     sync.Mutex
	cap    capState
	ledger ledgerState
	// pending is what the controllers hold pending, by (controller, uid).
	pending pendingSet
	// applied holds the audit rows of applied writes until the writer
	// takes them.
	applied appliedQueue
	// changed is closed and replaced whenever a write waiting in admit may
	// go on or must stop.
	changed chan struct{}
	// failed wakes Run when the audit store fails.
	failed chan struct{}
	// releaseMu makes concurrent releases record one release.
	releaseMu sync.Mutex
}

// NewApplier returns an Applier. Restore recovers its blast-radius state
// and Run watches the audit store; both belong to whoever runs the
// controllers.
func NewApplier(opts ApplierOptions) (*Applier, error) {
	opts.Logger, opts.Now = logAndClock(opts.Logger, opts.Now)
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = time.Second
	}
	a := &Applier{opts: opts, log: opts.Logger, metrics: newApplierMetrics(opts.Registerer),
		changed: make(chan struct{}), failed: make(chan struct{}, 1)}
	held, err := opts.DB.PendingUIDs(context.Background())
	if err != nil {
		return nil, err
	}
	for _, k := range held {
		a.pending.add(k.Controller, k.UID)
	}
	return a, nil
}

// DryRun reports whether decisions are only recorded.
func (a *Applier) DryRun() bool { return a.opts.DryRun }

// Instance names this kubegcd in audit rows.
func (a *Applier) Instance() string { return a.opts.Instance }

// Reasons for a pause, in the status's PausedBy and the paused metric's label.
const (
	pauseAuditStore  = "audit-store"
	pauseBlastRadius = "blast-radius"
)

// Status reports dry-run, the audit store and the blast-radius cap, in the
// API's own type, so that the two cannot differ.
func (a *Applier) Status() api.EnforcementStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trimLocked(a.opts.Now())
	s := api.EnforcementStatus{DryRun: a.opts.DryRun, MaxDeletionsPerMinute: a.opts.MaxDeletionsPerMinute,
		WritesLastMinute: len(a.cap.window), BlastRadiusResume: api.BlastRadiusResumeAuto, AuditBacklog: len(a.ledger.backlog)}
	if a.opts.ManualResume {
		s.BlastRadiusResume = api.BlastRadiusResumeManual
	}
	var since time.Time
	pause := func(by string, at time.Time, reason string) {
		s.PausedBy = append(s.PausedBy, by)
		if s.PausedReason != "" {
			s.PausedReason += "; "
		}
		s.PausedReason += reason
		if since.IsZero() || at.Before(since) {
			since = at
		}
	}
	if !a.ledger.failedSince.IsZero() {
		pause(pauseAuditStore, a.ledger.failedSince, "audit history cannot be written: "+a.ledger.cause+
			"; enforcement resumes by itself once a write succeeds")
	}
	if !a.cap.pausedSince.IsZero() {
		pause(pauseBlastRadius, a.cap.pausedSince, a.capReasonLocked())
	}
	if !since.IsZero() {
		s.Paused, s.PausedSince = true, &since
	}
	return s
}

// inflightGrace bounds a write's wait for its answer once kubegcd is
// stopping: within systemd's TimeoutStopSec= (30 s in the unit).
const inflightGrace = 10 * time.Second

// Apply carries out d. In dry-run it records d as pending and audits it
// once: a decision seen before (same rule, reason and resourceVersion) is
// not audited again, so a standing decision costs one row, not one per
// pass. Enforcing, it commits the decision as an intent, runs do, and
// audits the outcome, which resolves the intent. What failed or was held
// back by the blast-radius cap stays pending, and a failure is audited
// once per decision, not once per retry. Nothing is written while the
// audit history cannot be (ErrLedgerUnavailable), nor when the intent
// cannot be committed. It returns the outcome. A conflict or failure also
// returns the error, so the caller can retry.
func (a *Applier) Apply(ctx context.Context, d Decision, do func(ctx context.Context) error) (api.Outcome, error) {
	if err := a.LedgerError(); err != nil {
		return "", err
	}
	if a.opts.DryRun {
		if _, err := a.recordOnce(ctx, d, api.OutcomeDryRun); err != nil {
			return "", err
		}
		return api.OutcomeDryRun, nil
	}
	if a.opts.MayWrite != nil {
		if err := a.opts.MayWrite(); err != nil {
			return "", err
		}
	}
	reserved, err := a.admit(ctx)
	if errors.Is(err, errCapReached) {
		if _, perr := a.pend(ctx, d, "paused by the blast-radius cap: "+d.Reason); perr != nil {
			return "", perr
		}
	}
	if err != nil {
		return "", err
	}
	in, err := a.commitIntent(ctx, d, reserved)
	if err != nil {
		return "", err
	}
	drop, err := a.keepCopy(ctx, d, in, reserved)
	if err != nil {
		return "", err
	}
	outcome, err := send(ctx, do)
	if outcome != api.OutcomeApplied {
		a.unreserve(reserved) // nothing changed: it does not count against the cap
	}
	if drop != nil && outcome != api.OutcomeApplied && outcome != api.OutcomeNotFound {
		drop()
	}
	return a.recordOutcome(ctx, d, in, outcome, err)
}

// keepCopy runs KeepCopy for an enforced delete whose intent in is
// committed. When no copy can be kept, the write is not sent: its intent
// is withdrawn, its room under the cap given back, and the decision stays
// pending, logged once.
func (a *Applier) keepCopy(ctx context.Context, d Decision, in *db.Intent, reserved time.Time) (func(), error) {
	if a.opts.KeepCopy == nil || d.Action != api.ActionDelete {
		return nil, nil
	}
	drop, err := a.opts.KeepCopy(ctx, d)
	if err == nil {
		if a.opts.MayWrite != nil {
			// Asked again: the copy's read may have outlasted the lease.
			if err := a.opts.MayWrite(); err != nil {
				if drop != nil {
					drop()
				}
				a.unreserve(reserved)
				return nil, errors.Join(err, a.withdraw(ctx, in))
			}
		}
		return drop, nil
	}
	a.unreserve(reserved)
	werr := a.withdraw(ctx, in)
	reason := "held back: no copy of the object could be kept for undo"
	if errors.Is(err, db.ErrCopyTooLarge) {
		reason = "held back: its copy for undo alone is larger than --deleted-copies-max-bytes"
	}
	isNew, perr := a.pend(context.WithoutCancel(ctx), d, reason)
	level := slog.LevelDebug
	if isNew {
		level = slog.LevelWarn
	}
	a.log.Log(ctx, level, "delete held back: no copy of the object could be kept",
		"controller", d.Controller, "rule", d.Rule, "kind", d.Target.Kind, "namespace", d.Target.Namespace,
		"name", d.Target.Name, "uid", d.Target.UID, "err", err)
	return nil, errors.Join(fmt.Errorf("no copy kept, so not deleted: %w", err), werr, perr)
}

// commitIntent commits d as an intent before its write leaves. Should
// kubegcd die before the outcome's row is committed, the next start
// settles the intent (RecoverIntents). No intent, no write: when it
// returns an error, the write's room under the cap is given back and the
// write must not be sent.
func (a *Applier) commitIntent(ctx context.Context, d Decision, reserved time.Time) (*db.Intent, error) {
	in := &db.Intent{Entry: *a.row(d), ResourceVersion: d.ResourceVersion}
	if err := a.opts.DB.InsertIntent(ctx, in); err != nil {
		a.unreserve(reserved)
		return nil, a.storeFailed(ctx, err)
	}
	if a.opts.MayWrite != nil {
		// Asked again: the commit may have waited (for a lock, the disk)
		// past the end of this instance's lease.
		if err := a.opts.MayWrite(); err != nil {
			a.unreserve(reserved)
			return nil, errors.Join(err, a.withdraw(ctx, in))
		}
	}
	if ctx.Err() != nil {
		// Stopping: a write not yet sent is not sent.
		a.unreserve(reserved)
		return nil, errors.Join(ctx.Err(), a.withdraw(context.WithoutCancel(ctx), in))
	}
	return in, nil
}

// send runs do, the write, and names its outcome. NotFound counts as done.
// A write once sent runs to its answer even when kubegcd stops, since a
// graceful stop waits for it before it releases the Lease. A write cut
// short may still reach the API server, with no outcome recorded.
func send(ctx context.Context, do func(ctx context.Context) error) (api.Outcome, error) {
	sent, cancel := context.WithTimeout(context.WithoutCancel(ctx), inflightGrace)
	defer cancel()
	err := do(sent)
	switch {
	case err == nil:
		return api.OutcomeApplied, nil
	case apierrors.IsNotFound(err):
		return api.OutcomeNotFound, nil
	case apierrors.IsConflict(err):
		return api.OutcomeConflict, err
	default:
		return api.OutcomeFailed, err
	}
}

// recordOutcome audits the outcome of a write that was sent, and the row
// resolves the write's intent. An applied write's row goes to the writer
// and is not waited for. A write that failed stays pending, and its
// failure is audited once per decision.
func (a *Applier) recordOutcome(ctx context.Context, d Decision, in *db.Intent, outcome api.Outcome,
	err error) (api.Outcome, error) {
	if !d.DecidedAt.IsZero() {
		a.metrics.latency.WithLabelValues(string(d.Controller)).Observe(time.Since(d.DecidedAt).Seconds())
	}
	// The intent's row, with its facts already encoded, and the outcome.
	e := a.count(d, withOutcome(in.Entry, a.opts.Now(), outcome, err))
	e.IntentID = in.ID
	if err == nil {
		a.logDecision(e, slog.LevelInfo)
		a.recordApplied(e)
		return outcome, nil
	}
	// The write went out: its record is kept even if ctx ends now.
	wctx := context.WithoutCancel(ctx)
	p := a.pendingRow(d, d.Reason, nil)
	a.pending.add(p.Controller, p.Target.UID) // before the row: see pendingSet
	isNew, perr := a.opts.DB.RecordFailure(wctx, p, e)
	switch {
	case perr != nil:
		a.logDecision(e, slog.LevelWarn)
		a.keep(e) // written later, it still resolves the intent
		perr = a.storeFailed(wctx, perr)
	case isNew:
		a.logDecision(e, slog.LevelWarn)
	default:
		a.logDecision(e, slog.LevelDebug) // a retry of a failure already recorded
	}
	return outcome, errors.Join(err, perr)
}

// withdraw deletes the intent of a write that was not sent; should that
// fail, the next start finds the object as it was and records the write's
// outcome as unknown.
func (a *Applier) withdraw(ctx context.Context, in *db.Intent) error {
	if err := a.opts.DB.WithdrawIntent(context.WithoutCancel(ctx), in.ID); err != nil {
		return a.storeFailed(ctx, err)
	}
	return nil
}

// Record audits a decision that needs no write (a kept object), once per
// version of the object, and reports whether it was new.
func (a *Applier) Record(ctx context.Context, d Decision) (bool, error) {
	if err := a.LedgerError(); err != nil {
		return false, err
	}
	return a.recordOnce(ctx, d, api.OutcomeSkipped)
}

// Defer records d as pending, to be acted on no sooner than notBefore,
// without applying or auditing it: a decision that waits out a quarantine
// or a back-off.
func (a *Applier) Defer(ctx context.Context, d Decision, notBefore time.Time) error {
	if err := a.LedgerError(); err != nil {
		return err
	}
	if _, err := a.upsertPending(ctx, a.pendingRow(d, d.Reason, &notBefore)); err != nil {
		return a.storeFailed(ctx, err)
	}
	return nil
}

// recordOnce stores d as pending and audits it if it is new.
func (a *Applier) recordOnce(ctx context.Context, d Decision, outcome api.Outcome) (bool, error) {
	isNew, err := a.pend(ctx, d, d.Reason)
	if err != nil || !isNew {
		return false, err
	}
	e := a.entry(d, outcome, nil)
	a.logDecision(e, slog.LevelInfo)
	return true, a.audit(ctx, e)
}

func (a *Applier) pend(ctx context.Context, d Decision, reason string) (bool, error) {
	isNew, err := a.upsertPending(ctx, a.pendingRow(d, reason, nil))
	if err != nil {
		return false, a.storeFailed(ctx, err)
	}
	return isNew, nil
}

// audit writes e; a row the database refuses is kept for later.
func (a *Applier) audit(ctx context.Context, e *db.AuditEntry) error {
	if err := a.opts.DB.InsertAudit(ctx, e); err != nil {
		a.keep(e)
		return a.storeFailed(ctx, err)
	}
	return nil
}

// upsertPending records p, its key first (see pendingSet), and reports
// whether it is a new decision.
func (a *Applier) upsertPending(ctx context.Context, p *db.Pending) (bool, error) {
	a.pending.add(p.Controller, p.Target.UID)
	return a.opts.DB.UpsertPending(ctx, p)
}

func (a *Applier) pendingRow(d Decision, reason string, notBefore *time.Time) *db.Pending {
	return &db.Pending{Controller: d.Controller, Rule: d.Rule, Action: d.Action, Reason: reason,
		Target: d.Target, ResourceVersion: d.ResourceVersion, NotBefore: notBefore}
}

// row builds the audit row of d, without an outcome.
func (a *Applier) row(d Decision) *db.AuditEntry {
	return &db.AuditEntry{
		Time: a.opts.Now(), Instance: a.opts.Instance, Controller: d.Controller, Rule: d.Rule, Action: d.Action,
		Target: d.Target, Reason: d.Reason, DryRun: a.opts.DryRun, Facts: encodeFacts(d.Facts),
	}
}

// entry builds the audit row of d and counts it.
func (a *Applier) entry(d Decision, outcome api.Outcome, applyErr error) *db.AuditEntry {
	return a.count(d, withOutcome(*a.row(d), a.opts.Now(), outcome, applyErr))
}

// withOutcome is row with its outcome, at time at.
func withOutcome(row db.AuditEntry, at time.Time, outcome api.Outcome, applyErr error) *db.AuditEntry {
	row.Time, row.Outcome, row.ID, row.IntentID = at, outcome, 0, 0
	if applyErr != nil {
		row.Error = applyErr.Error()
	}
	return &row
}

// count counts e, an outcome of d.
func (a *Applier) count(d Decision, e *db.AuditEntry) *db.AuditEntry {
	a.metrics.actions.WithLabelValues(string(d.Controller), d.Rule, string(d.Action), string(e.Outcome)).Inc()
	return e
}

// logDecision logs e: the log keeps every decision, whatever becomes of
// its row.
func (a *Applier) logDecision(e *db.AuditEntry, level slog.Level) {
	var err any
	if e.Error != "" {
		err = e.Error
	}
	a.log.Log(context.Background(), level, "decision",
		"controller", e.Controller, "rule", e.Rule, "action", e.Action,
		"kind", e.Target.Kind, "namespace", e.Target.Namespace, "name", e.Target.Name, "uid", e.Target.UID,
		"dry_run", e.DryRun, "outcome", e.Outcome, "reason", e.Reason, "err", err)
}

// event builds an audit row about enforcement itself (no target).
func (a *Applier) event(controller api.Controller, rule string, action api.Action, reason string, at time.Time, facts any) *db.AuditEntry {
	return &db.AuditEntry{Time: at, Instance: a.opts.Instance, Controller: controller, Rule: rule, Action: action,
		Reason: reason, Outcome: api.OutcomeApplied, Facts: encodeFacts(facts)}
}

func encodeFacts(facts any) json.RawMessage {
	if facts == nil {
		return nil
	}
	b, err := json.Marshal(facts)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "facts not encodable: " + err.Error()})
	}
	return b
}

// broadcastLocked wakes every write waiting in admit.
func (a *Applier) broadcastLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

type applierMetrics struct {
	actions *prometheus.CounterVec
	latency *prometheus.HistogramVec
	paused  *prometheus.GaugeVec
	backlog prometheus.Gauge
	lost    prometheus.Counter
}

func newApplierMetrics(reg prometheus.Registerer) *applierMetrics {
	f := promutil.With(reg, "reconcile")
	m := &applierMetrics{
		actions: f.CounterVec("actions_total",
			"Decisions applied or recorded, by controller, rule, action and outcome "+
				"(applied, dry-run, failed, conflict, not-found, skipped, unknown).",
			"controller", "rule", "action", "outcome"),
		latency: f.HistogramVec("decision_to_apply_seconds", "Time from a decision to its write completing.",
			prometheus.ExponentialBuckets(0.001, 2, 16), "controller"),
		paused: f.GaugeVec("paused",
			"1 while enforcement is paused, by reason: "+
				"audit-store (the audit history cannot be written) or blast-radius (the cap).",
			"reason"),
		backlog: f.Gauge("audit_backlog_rows",
			"Audit rows of writes already made that wait in memory for the database to take them."),
		lost: f.Counter("audit_rows_lost_total",
			"Audit rows neither the database nor the in-memory backlog could take; "+
				"each is logged in full instead."),
	}
	// Both reasons are exported from the start, so that an alert on 1 has
	// a series to watch.
	m.paused.WithLabelValues(pauseAuditStore).Set(0)
	m.paused.WithLabelValues(pauseBlastRadius).Set(0)
	return m
}
