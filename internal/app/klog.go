package app

import (
	"context"
	"log/slog"
	"sync/atomic"

	"k8s.io/klog/v2"
)

// klog's logger, where client-go logs, is process-wide. It is set once,
// before any goroutine can read it (init), to a handler that forwards to
// the running daemon's logger; a daemon started later in the same process
// (the end-to-end tests run several, beside their own client-go clients)
// switches the forwarding atomically instead of setting klog's logger while
// other goroutines read it. Before any daemon runs, lines go to slog's
// default logger (stderr), as klog's own would.
var klogCurrent atomic.Pointer[slog.Logger]

func init() {
	klogCurrent.Store(slog.Default())
	klog.SetSlogLogger(slog.New(klogHandler{}))
}

// routeKlog sends client-go's klog lines to logger.
func routeKlog(logger *slog.Logger) { klogCurrent.Store(logger) }

// klogHandler forwards to the logger routeKlog was given last. A logger
// derived with attributes or a group stays with the daemon it was derived
// under.
type klogHandler struct{}

func (klogHandler) handler() slog.Handler { return klogCurrent.Load().Handler() }

func (h klogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.handler().Enabled(ctx, level)
}

func (h klogHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.handler().Handle(ctx, r)
}

func (h klogHandler) WithAttrs(attrs []slog.Attr) slog.Handler { return h.handler().WithAttrs(attrs) }

func (h klogHandler) WithGroup(name string) slog.Handler { return h.handler().WithGroup(name) }
