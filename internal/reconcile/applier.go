// Package reconcile holds what every controller shares: the applier, which
// records each decision (pending, audit), and then applies it — rate
// limited, capped, or not at all in dry-run.
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

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/promutil"
)

// ErrPaused is returned by Apply while the blast-radius cap holds
// destructive actions back.
var ErrPaused = errors.New("enforcement paused by the blast-radius cap")

// Decision is what a controller decided to do about one object.
type Decision struct {
	Controller string
	Rule       string
	Action     string
	Target     db.Target
	// ResourceVersion of the target the decision was made on.
	ResourceVersion string
	Reason          string
	// Facts is what the decision rested on; it is stored as JSON.
	Facts any
	// Destructive actions (deletions) count against the blast-radius cap.
	Destructive bool
	// DecidedAt is when the decision was made, for the latency metric.
	DecidedAt time.Time
}

// ApplierOptions configure an Applier.
type ApplierOptions struct {
	DB       *db.DB
	DryRun   bool
	Instance string
	Logger   *slog.Logger
	// MayWrite, if set, is asked before every write: an error (this
	// instance does not hold the leader-election lease) holds it back.
	MayWrite func() error
	// MaxDeletionsPerMinute caps destructive actions; 0 means no cap.
	MaxDeletionsPerMinute int
	Registerer            prometheus.Registerer
	Now                   func() time.Time
}

// Applier applies decisions for every controller.
type Applier struct {
	opts    ApplierOptions
	log     *slog.Logger
	metrics *applierMetrics

	mu          sync.Mutex
	window      []time.Time // destructive actions in the last minute
	pausedSince time.Time
}

// NewApplier returns an Applier.
func NewApplier(opts ApplierOptions) (*Applier, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m, err := newApplierMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Applier{opts: opts, log: opts.Logger, metrics: m}, nil
}

// DryRun reports whether decisions are only recorded.
func (a *Applier) DryRun() bool { return a.opts.DryRun }

// Instance names this kubegcd in audit rows.
func (a *Applier) Instance() string { return a.opts.Instance }

// Status is the applier's state for /status.
type Status struct {
	DryRun                bool       `json:"dryRun"`
	Paused                bool       `json:"paused"`
	PausedSince           *time.Time `json:"pausedSince,omitempty"`
	PausedReason          string     `json:"pausedReason,omitempty"`
	MaxDeletionsPerMinute int        `json:"maxDeletionsPerMinute"`
	DeletionsLastMinute   int        `json:"deletionsLastMinute"`
}

// Status reports dry-run and blast-radius state.
func (a *Applier) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trimLocked(a.opts.Now())
	s := Status{DryRun: a.opts.DryRun, MaxDeletionsPerMinute: a.opts.MaxDeletionsPerMinute, DeletionsLastMinute: len(a.window)}
	if !a.pausedSince.IsZero() {
		since := a.pausedSince
		s.Paused, s.PausedSince, s.PausedReason = true, &since, a.pauseReasonLocked()
	}
	return s
}

func (a *Applier) pauseReasonLocked() string {
	return fmt.Sprintf("%d deletions in the last minute reached --max-deletions-per-minute=%d; "+
		"enforcement resumes when the rate falls or the cap is raised", len(a.window), a.opts.MaxDeletionsPerMinute)
}

func (a *Applier) trimLocked(now time.Time) {
	cut := 0
	for cut < len(a.window) && now.Sub(a.window[cut]) >= time.Minute {
		cut++
	}
	a.window = a.window[cut:]
}

// admit reserves room for one destructive action under the cap.
func (a *Applier) admit() bool {
	if a.opts.MaxDeletionsPerMinute <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.trimLocked(now)
	if len(a.window) >= a.opts.MaxDeletionsPerMinute {
		if a.pausedSince.IsZero() {
			a.pausedSince = now
			a.metrics.paused.Set(1)
			a.log.Warn("enforcement paused", "reason", a.pauseReasonLocked())
		}
		return false
	}
	if !a.pausedSince.IsZero() {
		a.log.Info("enforcement resumed", "paused_for", now.Sub(a.pausedSince).Round(time.Second))
		a.pausedSince = time.Time{}
		a.metrics.paused.Set(0)
	}
	a.window = append(a.window, now)
	return true
}

// Apply carries out d. In dry-run it records d as pending and audits it
// once: a decision seen before (same rule, reason and resourceVersion) is
// not audited again, so a standing decision costs one row, not one per
// pass. Enforcing, it runs do and audits the outcome; what failed or was
// held back by the blast-radius cap stays pending. It returns the outcome;
// a conflict or failure also returns the error, so the caller can retry.
func (a *Applier) Apply(ctx context.Context, d Decision, do func(ctx context.Context) error) (string, error) {
	if a.opts.DryRun {
		isNew, err := a.pend(ctx, d, d.Reason)
		if err != nil || !isNew {
			return db.OutcomeDryRun, err
		}
		return db.OutcomeDryRun, a.opts.DB.InsertAudit(ctx, a.entry(d, db.OutcomeDryRun, nil))
	}
	if a.opts.MayWrite != nil {
		if err := a.opts.MayWrite(); err != nil {
			return "", err
		}
	}
	if d.Destructive && !a.admit() {
		if _, err := a.pend(ctx, d, "paused by the blast-radius cap: "+d.Reason); err != nil {
			return "", err
		}
		return "", ErrPaused
	}
	err := do(ctx)
	outcome := db.OutcomeApplied
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		outcome, err = db.OutcomeNotFound, nil
	case apierrors.IsConflict(err):
		outcome = db.OutcomeConflict
	default:
		outcome = db.OutcomeFailed
	}
	if !d.DecidedAt.IsZero() {
		a.metrics.latency.WithLabelValues(d.Controller).Observe(time.Since(d.DecidedAt).Seconds())
	}
	e := a.entry(d, outcome, err)
	if err == nil {
		a.opts.DB.RecordApplied(e, func(err error) {
			a.log.Error("recording an applied decision in the audit history", "uid", d.Target.UID, "err", err)
		})
		return outcome, nil
	}
	if _, perr := a.pend(ctx, d, d.Reason); perr != nil {
		return outcome, errors.Join(err, perr)
	}
	return outcome, errors.Join(err, a.opts.DB.InsertAudit(ctx, e))
}

// Record audits a decision that needs no write (a kept object), once per
// version of the object, and reports whether it was new.
func (a *Applier) Record(ctx context.Context, d Decision) (bool, error) {
	isNew, err := a.pend(ctx, d, d.Reason)
	if err != nil || !isNew {
		return false, err
	}
	return true, a.opts.DB.InsertAudit(ctx, a.entry(d, db.OutcomeSkipped, nil))
}

// Defer records d as pending, to be acted on no sooner than notBefore,
// without applying or auditing it: a decision that waits out a quarantine
// or a back-off.
func (a *Applier) Defer(ctx context.Context, d Decision, notBefore time.Time) error {
	_, err := a.opts.DB.UpsertPending(ctx, a.pending(d, d.Reason, &notBefore))
	return err
}

func (a *Applier) pend(ctx context.Context, d Decision, reason string) (bool, error) {
	return a.opts.DB.UpsertPending(ctx, a.pending(d, reason, nil))
}

func (a *Applier) pending(d Decision, reason string, notBefore *time.Time) *db.Pending {
	return &db.Pending{Controller: d.Controller, Rule: d.Rule, Action: d.Action, Reason: reason,
		Target: d.Target, ResourceVersion: d.ResourceVersion, NotBefore: notBefore}
}

// entry builds the audit row of d and counts and logs it.
func (a *Applier) entry(d Decision, outcome string, applyErr error) *db.AuditEntry {
	e := &db.AuditEntry{
		Instance: a.opts.Instance, Controller: d.Controller, Rule: d.Rule, Action: d.Action, Target: d.Target,
		Reason: d.Reason, DryRun: a.opts.DryRun, Outcome: outcome,
	}
	if d.Facts != nil {
		if b, err := json.Marshal(d.Facts); err == nil {
			e.Facts = b
		} else {
			e.Facts, _ = json.Marshal(map[string]string{"error": "facts not encodable: " + err.Error()})
		}
	}
	if applyErr != nil {
		e.Error = applyErr.Error()
	}
	a.metrics.actions.WithLabelValues(d.Controller, d.Rule, d.Action, outcome).Inc()
	level := slog.LevelInfo
	if applyErr != nil {
		level = slog.LevelWarn
	}
	a.log.Log(context.Background(), level, "decision", "controller", d.Controller, "rule", d.Rule, "action", d.Action,
		"kind", d.Target.Kind, "namespace", d.Target.Namespace, "name", d.Target.Name, "uid", d.Target.UID,
		"dry_run", a.opts.DryRun, "outcome", outcome, "reason", d.Reason, "err", applyErr)
	return e
}

type applierMetrics struct {
	actions *prometheus.CounterVec
	latency *prometheus.HistogramVec
	paused  prometheus.Gauge
}

func newApplierMetrics(reg prometheus.Registerer) (*applierMetrics, error) {
	m := &applierMetrics{
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubegcd", Subsystem: "reconcile", Name: "actions_total",
			Help: "Decisions applied or recorded, by controller, rule, action and outcome (applied, dry-run, failed, conflict, not-found, skipped).",
		}, []string{"controller", "rule", "action", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kubegcd", Subsystem: "reconcile", Name: "decision_to_apply_seconds",
			Help:    "Time from a decision to its write completing.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"controller"}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "kubegcd", Subsystem: "reconcile", Name: "paused",
			Help: "1 while the blast-radius cap holds deletions back.",
		}),
	}
	if err := promutil.Register(reg, m.actions, m.latency, m.paused); err != nil {
		return nil, err
	}
	return m, nil
}
