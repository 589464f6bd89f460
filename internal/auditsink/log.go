package auditsink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
	"k8s.io/apimachinery/pkg/util/wait"
)

// reasonTooLarge: one row's line is longer than --audit-log-maxsize, so no
// file can hold it.
const reasonTooLarge = "too-large"

// chunkBytes bounds one write to the file: lines are written a chunk at a
// time, so a page of rows never needs a file larger than the rotation's
// size.
const chunkBytes = 64 << 10

// LogConfig is the log backend's configuration, named as kube-apiserver's
// --audit-log-* flags.
type LogConfig struct {
	// Path is the file's; "-" writes to standard output.
	Path string
	// MaxAge is how many days a rotated file is kept (0: no limit).
	MaxAge int
	// MaxBackups is how many rotated files are kept (0: no limit).
	MaxBackups int
	// MaxSizeMB is the size in megabytes at which the file is rotated
	// (0: 100, lumberjack's default).
	MaxSizeMB int
	// Compress gzips the rotated files.
	Compress bool
}

// CheckPath says, in a line, why the log can not be written at path: its
// directory is missing, or is not one.
func CheckPath(path string) error {
	if path == "-" {
		return nil
	}
	if path == "" {
		return errors.New("empty path")
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("its directory %s must exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s must be a directory", dir)
	}
	return nil
}

// Log writes every audit row this database holds, one JSON line each, to
// a file that lumberjack rotates, or to standard output.
type Log struct {
	o      Options
	cfg    LogConfig
	out    io.Writer
	closer io.Closer
	// maxLine is the longest line the file takes; 0: any.
	maxLine int
}

// NewLog makes the log backend. stdout is where Path "-" writes.
func NewLog(cfg LogConfig, stdout io.Writer, o Options) *Log {
	o.setDefaults()
	o.Metrics.init(BackendLog)
	l := &Log{o: o, cfg: cfg}
	if cfg.Path == "-" {
		l.out = stdout
		return l
	}
	// lumberjack, as kube-apiserver's --audit-log-path: the rotation flags
	// mean what they mean there.
	lj := &lumberjack.Logger{Filename: cfg.Path, MaxAge: cfg.MaxAge, MaxBackups: cfg.MaxBackups,
		MaxSize: cfg.MaxSizeMB, Compress: cfg.Compress}
	l.out, l.closer = lj, lj
	if cfg.MaxSizeMB > 0 {
		l.maxLine = cfg.MaxSizeMB << 20
	}
	return l
}

// Run ships rows until ctx ends; it returns nil then. A write that fails
// (a full disk) is tried again with a back-off, from the same row.
func (l *Log) Run(ctx context.Context) error {
	if l.closer != nil {
		defer l.closer.Close()
	}
	c := &cursor{o: &l.o, sink: BackendLog}
	if err := c.load(ctx); err != nil {
		return nil
	}
	defer c.save(ctx)
	backoff := newBackoff(l.o.PollPeriod / 10)
	for ctx.Err() == nil {
		n, err := l.shipPage(ctx, c)
		c.save(ctx)
		var wait time.Duration
		switch {
		case err != nil:
			l.o.Metrics.retried.WithLabelValues(BackendLog).Inc()
			wait = backoff.Step()
			l.o.Logger.Warn("audit log: cannot write; trying again", "path", l.cfg.Path, "err", err,
				"retry_in", wait)
		case n < l.o.PageSize:
			backoff = newBackoff(l.o.PollPeriod / 10)
			wait = l.o.PollPeriod
		}
		if !sleep(ctx, l.o.Clock, wait) {
			break
		}
	}
	return nil
}

// shipPage writes the page of rows after c and moves c past what it
// wrote. It returns how many rows the page had.
func (l *Log) shipPage(ctx context.Context, c *cursor) (int, error) {
	rows, err := l.o.Source.AuditAfter(ctx, c.last, l.o.PageSize)
	if err != nil {
		return 0, err
	}
	var chunk []byte
	var chunkLast int64
	chunkRows := 0
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if _, err := l.out.Write(chunk); err != nil {
			return err
		}
		l.o.Metrics.sent.WithLabelValues(BackendLog).Add(float64(chunkRows))
		c.last = chunkLast
		chunk, chunkRows = chunk[:0], 0
		return nil
	}
	for i := range rows {
		line, err := encode(&rows[i])
		if err != nil {
			return 0, err
		}
		line = append(line, '\n')
		if l.maxLine > 0 && len(line) > l.maxLine {
			if err := flush(); err != nil {
				return 0, err
			}
			l.o.Metrics.dropped.WithLabelValues(BackendLog, reasonTooLarge).Inc()
			l.o.Logger.Warn("audit log: a row is larger than --audit-log-maxsize; it stays in the database only",
				"id", rows[i].ID, "bytes", len(line))
			c.last = rows[i].ID
			continue
		}
		if len(chunk)+len(line) > chunkBytes && len(chunk) > 0 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
		chunk = append(chunk, line...)
		chunkLast = rows[i].ID
		chunkRows++
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return len(rows), nil
}

// newBackoff doubles from initial to 30 s, or stays at initial when that
// is longer, forever.
func newBackoff(initial time.Duration) *wait.Backoff {
	if initial <= 0 {
		initial = 10 * time.Millisecond
	}
	return &wait.Backoff{Duration: initial, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32,
		Cap: max(initial, 30*time.Second)}
}
