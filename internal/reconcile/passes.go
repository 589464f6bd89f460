package reconcile

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/promutil"
)

// SkipMirrorNotSynced is the reason of a pass skipped because a resource
// the controller reads is not live in the mirror: deciding from it could
// act on objects that are gone, or miss new ones.
const SkipMirrorNotSynced = "mirror-not-synced"

// Passes keeps, for each controller that works in passes, when it last made
// one and whether it is skipping them: a skip must be visible (in the log,
// the metric kubegcd_reconcile_skipped_passes_total and /status), not a
// silent return.
type Passes struct {
	skipped *prometheus.CounterVec

	mu          sync.Mutex
	controllers []*PassRecorder
}

// NewPasses returns the bookkeeping and registers its metric with reg.
func NewPasses(reg prometheus.Registerer) (*Passes, error) {
	p := &Passes{skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "kubegcd", Subsystem: "reconcile", Name: "skipped_passes_total",
		Help: "Passes a controller did not make, by controller and reason (mirror-not-synced: a resource it reads is not live).",
	}, []string{"controller", "reason"})}
	if err := promutil.Register(reg, p.skipped); err != nil {
		return nil, err
	}
	return p, nil
}

// For returns the recorder of one controller; log is the controller's.
func (p *Passes) For(controller string, log *slog.Logger) *PassRecorder {
	// The series exists at 0 from the start, so an alert on its rate sees
	// the first skip.
	p.skipped.WithLabelValues(controller, SkipMirrorNotSynced)
	r := &PassRecorder{passes: p, controller: controller, log: log, state: PassStatus{Controller: controller}}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.controllers = append(p.controllers, r)
	return r
}

// PassStatus is one controller's passes.
type PassStatus struct {
	Controller string
	// LastPass is when the last pass made started; zero before the first.
	LastPass time.Time
	// Skipping is true from a skipped pass until the next one made;
	// SkipReason is a Skip… constant and SkipDetail says it in words.
	Skipping      bool
	SkipReason    string
	SkipDetail    string
	SkippingSince time.Time
	// SkippedPasses counts every pass skipped since the start.
	SkippedPasses int64
}

// Status lists every controller's passes, by name.
func (p *Passes) Status() []PassStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PassStatus, 0, len(p.controllers))
	for _, r := range p.controllers {
		out = append(out, r.state)
	}
	slices.SortFunc(out, func(a, b PassStatus) int { return strings.Compare(a.Controller, b.Controller) })
	return out
}

// PassRecorder records one controller's passes.
type PassRecorder struct {
	passes     *Passes
	controller string
	log        *slog.Logger

	// Guarded by passes.mu.
	state PassStatus
	// skippedInRun counts the skips since the last pass made.
	skippedInRun int64
}

// Ran records a pass made, started at now.
func (r *PassRecorder) Ran(now time.Time) {
	r.passes.mu.Lock()
	was, skipped := r.state, r.skippedInRun
	r.state = PassStatus{Controller: r.controller, LastPass: now, SkippedPasses: was.SkippedPasses}
	r.skippedInRun = 0
	r.passes.mu.Unlock()
	if was.Skipping {
		r.log.Info("passes resume", "skipped", skipped, "reason", was.SkipReason, "after", now.Sub(was.SkippingSince).Round(time.Millisecond))
	}
}

// Skipped records a pass not made at now, for reason (a Skip… constant)
// said in words by detail. Every skip counts; only a change (the first
// skip, or another reason) is logged, so a controller retrying every
// 100 ms does not flood the log.
func (r *PassRecorder) Skipped(now time.Time, reason, detail string) {
	r.passes.skipped.WithLabelValues(r.controller, reason).Inc()
	r.passes.mu.Lock()
	changed := !r.state.Skipping || r.state.SkipReason != reason || r.state.SkipDetail != detail
	if !r.state.Skipping {
		r.state.SkippingSince = now
	}
	r.state.Skipping, r.state.SkipReason, r.state.SkipDetail = true, reason, detail
	r.state.SkippedPasses++
	r.skippedInRun++
	r.passes.mu.Unlock()
	if changed {
		r.log.Warn("skipping passes", "reason", reason, "detail", detail)
	}
}
