package app

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Log formats --log-format takes. auto is journal when stderr is the
// systemd journal, else text.
const (
	logFormatAuto    = "auto"
	logFormatText    = "text"
	logFormatJSON    = "json"
	logFormatJournal = "journal"
)

// resolveLogFormat is the format --log-format means for writing to w.
func resolveLogFormat(w io.Writer, format string) string {
	if format != logFormatAuto {
		return format
	}
	if toJournal(w) {
		return logFormatJournal
	}
	return logFormatText
}

// fatalPrefix leads the one line that says why kubegcd exits: in the
// journal, at error priority, as its other errors are.
func fatalPrefix(w io.Writer, format string) string {
	if resolveLogFormat(w, format) == logFormatJournal {
		return syslogPriority(slog.LevelError)
	}
	return ""
}

func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	switch resolveLogFormat(w, format) {
	case logFormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts))
	case logFormatJournal:
		return slog.New(newJournalHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// toJournal: w is the stream systemd connected to the journal. systemd
// sets $JOURNAL_STREAM to that stream's "device:inode"; a child whose
// stderr was redirected elsewhere inherits the variable, hence the check
// of w itself, as sd-daemon(3) advises.
func toJournal(w io.Writer) bool {
	stream := os.Getenv("JOURNAL_STREAM")
	f, ok := w.(*os.File)
	if stream == "" || !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && stream == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// journalHandler writes text lines for the journal: no time (journald
// stamps each line as it receives it) and, first, the level as a syslog
// priority, "<3>" to "<7>" as sd-daemon(3) defines them, which journald
// strips and stores, so that `journalctl -p warning` works.
type journalHandler struct {
	text slog.Handler // writes to out, one Write per record
	out  *priorityWriter
}

// priorityWriter puts the priority of the record being written before it.
// The handlers derived from one journalHandler share it, and its lock
// holds from choosing the priority to the write.
type priorityWriter struct {
	mu       sync.Mutex
	w        io.Writer
	priority string
}

func (p *priorityWriter) Write(b []byte) (int, error) {
	line := make([]byte, 0, len(p.priority)+len(b))
	line = append(append(line, p.priority...), b...)
	if _, err := p.w.Write(line); err != nil {
		return 0, err
	}
	return len(b), nil
}

func newJournalHandler(w io.Writer, opts *slog.HandlerOptions) *journalHandler {
	out := &priorityWriter{w: w}
	textOpts := *opts
	textOpts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		if opts.ReplaceAttr != nil {
			return opts.ReplaceAttr(groups, a)
		}
		return a
	}
	return &journalHandler{text: slog.NewTextHandler(out, &textOpts), out: out}
}

// syslogPriority maps a level to sd-daemon(3)'s SD_ERR, SD_WARNING,
// SD_INFO and SD_DEBUG.
func syslogPriority(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "<3>"
	case l >= slog.LevelWarn:
		return "<4>"
	case l >= slog.LevelInfo:
		return "<6>"
	}
	return "<7>"
}

func (h *journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.text.Enabled(ctx, l)
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.priority = syslogPriority(r.Level)
	return h.text.Handle(ctx, r)
}

func (h *journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &journalHandler{text: h.text.WithAttrs(as), out: h.out}
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	return &journalHandler{text: h.text.WithGroup(name), out: h.out}
}

// Go's HTTP server reports what no handler sees (a failed TLS handshake,
// an accept error, a panic outside the handlers) through its ErrorLog;
// left nil, that is the standard logger, which writes plain lines to
// stderr whatever --log-format says. serverErrorsPerMinute bounds them:
// any client can cause one per connection.
const serverErrorsPerMinute = 10

// newServerErrorLog is an http.Server's ErrorLog that writes through
// logger, at most serverErrorsPerMinute lines a minute; how many more
// there were is logged when the minute ends.
func newServerErrorLog(logger *slog.Logger) *log.Logger {
	return log.New(&serverErrors{logger: logger, limit: serverErrorsPerMinute, window: time.Minute,
		now: time.Now, afterFunc: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}, "", 0)
}

// serverErrors logs each line log.Logger writes (one Write a line), up to
// limit in a window.
type serverErrors struct {
	logger    *slog.Logger
	limit     int
	window    time.Duration
	now       func() time.Time
	afterFunc func(time.Duration, func())

	mu      sync.Mutex
	start   time.Time // of the current window
	logged  int       // in the current window
	dropped int       // not logged, not yet reported
}

func (s *serverErrors) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.start) >= s.window {
		s.reportDropped()
		s.start, s.logged = now, 0
	}
	if s.logged >= s.limit {
		s.dropped++
		if s.dropped == 1 {
			// Said even if no line follows to say it.
			s.afterFunc(s.start.Add(s.window).Sub(now), s.flush)
		}
		return len(p), nil
	}
	s.logged++
	s.logger.Warn("http server error", "err", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (s *serverErrors) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reportDropped()
}

func (s *serverErrors) reportDropped() {
	if s.dropped > 0 {
		s.logger.Warn("more http server errors, not logged", "count", s.dropped, "limit_per_minute", s.limit)
		s.dropped = 0
	}
}
