package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"sync"
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
// under. Every line passes through hideURLPasswords first: client-go
// quotes request URLs (its throttling line, its errors), and a URL may
// carry a password however the daemon was configured.
type klogHandler struct{}

func (klogHandler) handler() slog.Handler { return klogCurrent.Load().Handler() }

func (h klogHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.handler().Enabled(ctx, level)
}

func (h klogHandler) Handle(ctx context.Context, r slog.Record) error {
	return hideURLPasswords{h.handler()}.Handle(ctx, r)
}

func (h klogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return hideURLPasswords{h.handler()}.WithAttrs(attrs)
}

func (h klogHandler) WithGroup(name string) slog.Handler {
	return hideURLPasswords{h.handler()}.WithGroup(name)
}

// hideURLPasswords replaces the password of every URL in a record's
// message and attributes with xxxxx before next sees them.
type hideURLPasswords struct{ next slog.Handler }

func (h hideURLPasswords) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h hideURLPasswords) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redactURLPasswords(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h hideURLPasswords) WithAttrs(attrs []slog.Attr) slog.Handler {
	redacted := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		redacted[i] = redactAttr(a)
	}
	return hideURLPasswords{h.next.WithAttrs(redacted)}
}

func (h hideURLPasswords) WithGroup(name string) slog.Handler {
	return hideURLPasswords{h.next.WithGroup(name)}
}

// urlPassword matches the user info of a URL with a password: the scheme
// and user (kept), the password (hidden). The password runs to the last
// '@' before the URL's path, as net/url reads it, so that a malformed one
// with an '@' of its own is hidden whole.
var urlPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:\s"'<>]*):[^/?#\s"'<>]*@`)

// redactURLPasswords hides the password of every URL in s.
func redactURLPasswords(s string) string {
	return urlPassword.ReplaceAllString(s, "${1}:xxxxx@")
}

// redactAttr hides URL passwords in a's value. A value that is neither a
// string nor a group is looked at as it would be printed; one that
// printed a password is logged as its redacted text.
func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(redactURLPasswords(v.String()))
	case slog.KindGroup:
		group := v.Group()
		redacted := make([]slog.Attr, len(group))
		for i, g := range group {
			redacted[i] = redactAttr(g)
		}
		a.Value = slog.GroupValue(redacted...)
	case slog.KindAny:
		a.Value = redactAny(v)
	default:
		a.Value = v
	}
	return a
}

// redactAny: a URL is logged as its redacted string (its JSON form would
// be a struct of fields); an error or any other value only when its text
// held a password, so that the handler prints the rest as it would. A
// value whose Error or String panics is left to the handler, which reports
// the panic as fmt does.
func redactAny(v slog.Value) (redacted slog.Value) {
	defer func() {
		if recover() != nil {
			redacted = v
		}
	}()
	switch x := v.Any().(type) {
	case *url.URL:
		if x != nil {
			return slog.StringValue(x.Redacted())
		}
	case url.URL:
		return slog.StringValue(x.Redacted())
	case error:
		if msg := redactURLPasswords(x.Error()); msg != x.Error() {
			return slog.AnyValue(errors.New(msg))
		}
	default:
		text := fmt.Sprintf("%+v", x)
		if redacted := redactURLPasswords(text); redacted != text {
			return slog.StringValue(redacted)
		}
	}
	return v
}

// onceWarnings logs each warning of the API server once: a candidate's
// every renewal gets the same deprecation warning.
type onceWarnings struct {
	logger *slog.Logger
	seen   sync.Map
}

func (w *onceWarnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	if _, dup := w.seen.LoadOrStore(text, true); !dup {
		w.logger.Info("the API server warns (said once)", "warning", text)
	}
}
