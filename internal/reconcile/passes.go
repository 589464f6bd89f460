package reconcile

import (
	"cmp"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/promutil"
)

// SkipMirrorNotSynced is the reason of a pass skipped because a resource
// the controller reads is not live in the mirror: deciding from it could
// act on objects that are gone, or miss new ones.
const SkipMirrorNotSynced = "mirror-not-synced"

// Passes keeps, for each controller, when it last made a pass (a periodic
// pass, or a full pass over the mirror that feeds a queue) and whether it
// is skipping them: a skip must be visible (in the log, the metric
// kubegcd_reconcile_skipped_passes_total and /status), not a silent
// return. Controllers that work from a queue add its depth and their last
// item.
type Passes struct {
	skipped *prometheus.CounterVec

	mu          sync.Mutex
	controllers []*PassRecorder
}

// NewPasses returns the bookkeeping and registers its metric with reg
// (nil: none).
func NewPasses(reg prometheus.Registerer) *Passes {
	return &Passes{skipped: promutil.With(reg, "reconcile").CounterVec("skipped_passes_total",
		"Passes a controller did not make, by controller and reason "+
			"(mirror-not-synced: a resource it reads is not live).",
		"controller", "reason")}
}

func (p *Passes) For(controller api.Controller, log *slog.Logger) *PassRecorder {
	// The series exists at 0 from the start, so an alert on its rate sees
	// the first skip.
	p.skipped.WithLabelValues(string(controller), SkipMirrorNotSynced)
	r := &PassRecorder{passes: p, controller: controller, log: log, state: PassStatus{Controller: controller}}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.controllers = append(p.controllers, r)
	return r
}

// PassStatus is one controller's passes.
type PassStatus struct {
	Controller api.Controller
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
	// LastWork is when a controller that works from a queue last finished
	// an item; zero before the first, and for controllers without a queue.
	LastWork time.Time
	// QueueDepth is how many items wait in its queues; nil for a
	// controller without one.
	QueueDepth *int
}

// Status lists every controller's passes, by name.
func (p *Passes) Status() []PassStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PassStatus, 0, len(p.controllers))
	for _, r := range p.controllers {
		st := r.state
		if ns := r.lastWork.Load(); ns != 0 {
			st.LastWork = time.Unix(0, ns)
		}
		if r.depth != nil {
			n := r.depth()
			st.QueueDepth = &n
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b PassStatus) int { return cmp.Compare(a.Controller, b.Controller) })
	return out
}

// PassRecorder records one controller's passes; a nil one records nothing.
type PassRecorder struct {
	passes     *Passes
	controller api.Controller
	log        *slog.Logger

	// Guarded by passes.mu.
	state PassStatus
	// skippedInRun counts the skips since the last pass made.
	skippedInRun int64
	// depth, when set, reports the length of the controller's queues.
	depth func() int
	// lastWork is Worked's time in Unix nanoseconds: every item of a busy
	// queue sets it, without a lock.
	lastWork atomic.Int64
}

// Queue makes Status report the length of the controller's queues, which
// depth returns.
func (r *PassRecorder) Queue(depth func() int) {
	if r == nil {
		return
	}
	r.passes.mu.Lock()
	defer r.passes.mu.Unlock()
	r.depth = depth
}

// Worked records an item of the controller's queue finished at now.
func (r *PassRecorder) Worked(now time.Time) {
	if r != nil {
		r.lastWork.Store(now.UnixNano())
	}
}

// Ran records a pass made, started at now.
func (r *PassRecorder) Ran(now time.Time) {
	if r == nil {
		return
	}
	r.passes.mu.Lock()
	was, skipped := r.state, r.skippedInRun
	r.state = PassStatus{Controller: r.controller, LastPass: now, SkippedPasses: was.SkippedPasses}
	r.skippedInRun = 0
	r.passes.mu.Unlock()
	if was.Skipping {
		r.log.Info("passes resume", "skipped", skipped, "reason", was.SkipReason,
			"after", now.Sub(was.SkippingSince).Round(time.Millisecond))
	}
}

// Skipped records a pass not made at now, for reason (a Skip… constant)
// said in words by detail. Every skip counts; only a change (the first
// skip, or another reason) is logged, so a controller retrying every
// 100 ms does not flood the log.
func (r *PassRecorder) Skipped(now time.Time, reason, detail string) {
	if r == nil {
		return
	}
	r.passes.skipped.WithLabelValues(string(r.controller), reason).Inc()
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
