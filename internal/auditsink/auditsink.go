// Package auditsink ships the audit history out of kubegcd, as
// kube-apiserver's audit backends do: to a file of JSON lines (Log) and to
// a webhook, in batches (Webhook).
//
// A sink is not on the path that records a decision. Each reads the audit
// table after its own cursor, in its own goroutine, once rows have
// committed. So a broken sink never blocks a decision, and never costs the
// database a row. Each sink keeps its cursor in the database, so a restart
// resumes where it stopped, and a row leaves at least once.
package auditsink

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/promutil"
)

// Source is what a sink reads of the database: db.Decisions.
type Source interface {
	// AuditAfter returns up to limit rows with an id above after, oldest
	// first.
	AuditAfter(ctx context.Context, after int64, limit int) ([]db.AuditEntry, error)
	// SinkCursor returns the id of the last row the sink has dealt with.
	SinkCursor(ctx context.Context, sink string) (lastID int64, ok bool, err error)
	// SaveSinkCursor records it.
	SaveSinkCursor(ctx context.Context, sink string, lastID int64, now time.Time) error
}

// The backends, as the metrics' label backend and the cursors name them.
const (
	BackendLog     = "log"
	BackendWebhook = "webhook"
)

// The reasons a row is dropped.
const (
	// The webhook's receiver kept failing and the buffer was full: the
	// oldest row made room for the newest.
	reasonBufferFull = "buffer-full"
	// The receiver refused the batch for good (a 4xx but 401, 403, 408 and
	// 429): the same bytes would be refused again.
	reasonRejected = "rejected"
)

// Defaults of Options.
const (
	DefaultPollPeriod = time.Second
	defaultPageSize   = 1000
	// How long a save of the cursor may take at stop.
	stopSaveTimeout = 5 * time.Second
)

// Options are what every sink shares.
type Options struct {
	Source  Source
	Metrics *Metrics
	Logger  *slog.Logger
	// Clock times the polls and back-offs; the real clock when nil.
	Clock clock.Clock
	// PollPeriod is how often a sink looks for new rows when it has
	// shipped every row (DefaultPollPeriod when 0).
	PollPeriod time.Duration
	// PageSize is the most rows one read takes (1000 when 0).
	PageSize int
}

func (o *Options) setDefaults() {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.PollPeriod <= 0 {
		o.PollPeriod = DefaultPollPeriod
	}
	if o.PageSize <= 0 {
		o.PageSize = defaultPageSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
}

// Metrics count what the sinks ship, retry and drop, by backend.
type Metrics struct {
	sent     *prometheus.CounterVec
	retried  *prometheus.CounterVec
	dropped  *prometheus.CounterVec
	buffered *prometheus.GaugeVec
}

// NewMetrics makes the sinks' metrics and registers them with reg (none
// when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promutil.With(reg, "audit_sink")
	return &Metrics{
		sent: f.CounterVec("rows_sent_total",
			"Audit rows a sink shipped: written to the log file, or accepted by the webhook.", "backend"),
		retried: f.CounterVec("batches_retried_total",
			"Batches of audit rows a sink failed to ship and will try again, after a back-off.", "backend"),
		dropped: f.CounterVec("rows_dropped_total",
			"Audit rows a sink gave up on; the database and GET /audit keep them. "+
				"reason buffer-full: the webhook failed while its buffer was full; "+
				"rejected: the webhook refused the batch for good; "+
				"too-large: one row is longer than --audit-log-maxsize.", "backend", "reason"),
		buffered: f.GaugeVec("buffered_rows",
			"Audit rows the webhook holds in memory, read and not yet accepted.", "backend"),
	}
}

// init gives backend's series their zero, so that a rate or an alert sees
// them before the first event.
func (m *Metrics) init(backend string) {
	m.sent.WithLabelValues(backend)
	m.retried.WithLabelValues(backend)
	m.dropped.WithLabelValues(backend, reasonBufferFull)
	if backend == BackendWebhook {
		m.dropped.WithLabelValues(backend, reasonRejected)
		m.buffered.WithLabelValues(backend)
	}
}

// encode is row e's JSON, byte for byte what GET /audit sends for it.
func encode(e *db.AuditEntry) ([]byte, error) {
	b, err := json.Marshal(e.API())
	if err != nil {
		return nil, fmt.Errorf("audit row %d: %w", e.ID, err)
	}
	return b, nil
}

// cursor is a sink's place in the history, and its durable copy.
type cursor struct {
	o     *Options
	sink  string
	last  int64 // every row up to it is shipped or dropped
	saved int64
}

// load reads the sink's cursor, trying again every poll until it can or
// ctx ends. A sink without one starts at the oldest row kept.
func (c *cursor) load(ctx context.Context) error {
	for {
		last, _, err := c.o.Source.SinkCursor(ctx, c.sink)
		if err == nil {
			c.last, c.saved = last, last
			return nil
		}
		c.o.Logger.Warn("audit sink cannot read its cursor; trying again", "backend", c.sink, "err", err)
		if !sleep(ctx, c.o.Clock, c.o.PollPeriod) {
			return ctx.Err()
		}
	}
}

// save writes the cursor when it moved. A failed save is logged: the sink
// goes on, and a restart ships again what followed the last saved cursor.
func (c *cursor) save(ctx context.Context) {
	if c.last == c.saved {
		return
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), stopSaveTimeout)
		defer cancel()
	}
	if err := c.o.Source.SaveSinkCursor(ctx, c.sink, c.last, c.o.Clock.Now()); err != nil {
		c.o.Logger.Warn("audit sink cannot save its cursor; a restart ships its rows again",
			"backend", c.sink, "cursor", c.last, "err", err)
		return
	}
	c.saved = c.last
}

// sleep waits d on clk, or until ctx ends; it says whether d passed.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}
