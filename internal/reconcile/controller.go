package reconcile

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/promutil"
)

// ControllerOptions are what every controller of kubegcd is given: where
// its decisions go, when it may begin, how it reports. Each controller's
// Options embed them beside its own.
type ControllerOptions struct {
	// Applier applies the controller's decisions, or records them in
	// dry-run.
	Applier *Applier
	// Logger is the controller's log; slog.Default() when nil.
	Logger *slog.Logger
	// Synced reports whether the mirror is complete; nothing is decided
	// before.
	Synced func() bool
	// Passes records the controller's passes, skipped ones and its queues
	// (/status, the log, a metric); nil records them nowhere.
	Passes *Passes
	// Heartbeat beats as the controller works, for the watchdog; nil for
	// none.
	Heartbeat *liveness.Loop
	// Registerer takes the controller's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Now is the controller's clock; time.Now when nil.
	Now func() time.Time
}

// Base is what a controller keeps of its ControllerOptions, defaults
// filled, with what it makes of them.
type Base struct {
	ControllerOptions
	// Log is Logger, never nil.
	Log *slog.Logger
	// PassRecorder records this controller's passes.
	PassRecorder *PassRecorder
	// Metrics makes the controller's metrics, kubegcd_<name>_….
	Metrics promutil.Factory
}

// NewBase fills the defaults of o for the controller called name.
func NewBase(name api.Controller, o ControllerOptions) Base {
	o.Logger, o.Now = logAndClock(o.Logger, o.Now)
	if o.Passes == nil {
		o.Passes = NewPasses(nil)
	}
	return Base{ControllerOptions: o, Log: o.Logger, PassRecorder: o.Passes.For(name, o.Logger),
		Metrics: promutil.With(o.Registerer, string(name))}
}

// logAndClock returns log and now, or for either one that is nil the
// default: slog.Default() and the wall clock.
func logAndClock(log *slog.Logger, now func() time.Time) (*slog.Logger, func() time.Time) {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return log, now
}
