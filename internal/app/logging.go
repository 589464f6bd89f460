package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
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
