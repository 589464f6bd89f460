package db

import (
	"context"
	"database/sql"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Checkpoints.
//
// A commit appends every page it changed to the WAL, whole. A checkpoint
// copies the WAL's pages into the database file. By default SQLite has the
// committing connection checkpoint once the WAL holds 1,000 pages (4 MB).
// kubegcd's writes touch the same pages again and again: the tail of the
// audit and history tables and their indexes, and the leaves of the indexes
// keyed by UID. With checkpoints every 4 MB, most of those pages were
// copied at each one, and the commit that crossed the mark waited for the
// copy and its fsync.
//
// So the writer does not checkpoint. A goroutine of its own does, on a
// connection of its own, at most once per Options.CheckpointEvery (2 s by
// default) and only after a commit. A page changed many times in that time
// is copied once, and no commit waits for a copy. The writer keeps SQLite's
// own checkpoint as a backstop, at walBackstopPages. It runs only when more
// than that much is written between two checkpoints, or when long reads
// hold the checkpoints back. walSizeLimit then shrinks the WAL file back
// after such a burst.

const (
	// defaultCheckpointEvery is the least time between two checkpoints.
	defaultCheckpointEvery = 2 * time.Second
	// walBackstopPages is where the writer checkpoints by itself: 64 MB of
	// 4 KB pages.
	walBackstopPages = 16384
	// walSizeLimit is the size in bytes the WAL file is cut back to once
	// a checkpoint has emptied it.
	walSizeLimit = 64 << 20
)

// checkpointer is the goroutine that checkpoints, and its connection.
type checkpointer struct {
	conn *sql.DB
	// committed gets a signal after each group commit. It holds one.
	committed chan struct{}
	stop      context.CancelFunc
	done      chan struct{}

	seconds prometheus.Histogram
	errors  prometheus.Counter
}

func newCheckpointer() *checkpointer {
	return &checkpointer{
		committed: make(chan struct{}, 1),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "kubegcd",
			Subsystem: "db",
			Name:      "checkpoint_duration_seconds",
			Help: "Time to copy the pages committed to the WAL into the database file, " +
				"on the checkpointer's connection.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "kubegcd",
			Subsystem: "db",
			Name:      "checkpoint_errors_total",
			Help:      "Checkpoints that failed; the next commit brings the next try.",
		}),
	}
}

// startCheckpointer opens the checkpointer's connection and starts it.
func (d *core) startCheckpointer(every time.Duration) error {
	c := d.checkpointer
	conn, err := openPool(d.Path, false)
	if err != nil {
		return err
	}
	conn.SetMaxOpenConns(1)
	c.conn = conn
	ctx, stop := context.WithCancel(context.Background())
	c.stop, c.done = stop, make(chan struct{})
	go d.runCheckpointer(ctx, every)
	return nil
}

// noteCommit tells the checkpointer that the WAL has grown. It never
// blocks the writer.
func (c *checkpointer) noteCommit() {
	select {
	case c.committed <- struct{}{}:
	default:
	}
}

// runCheckpointer checkpoints after each commit, until ctx ends. It waits
// until every has passed since its last checkpoint.
func (d *core) runCheckpointer(ctx context.Context, every time.Duration) {
	c := d.checkpointer
	defer close(c.done)
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.committed:
		}
		if wait := time.Until(last.Add(every)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		d.checkpoint(ctx)
		last = time.Now()
	}
}

// checkpoint copies what it can of the WAL into the database file. It is
// PASSIVE: it takes no lock that would stop the writer or a reader, and it
// leaves in the WAL the pages a reader's snapshot still needs.
func (d *core) checkpoint(ctx context.Context) {
	c := d.checkpointer
	start := time.Now()
	var busy, walPages, copied int
	err := c.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &walPages, &copied)
	c.seconds.Observe(time.Since(start).Seconds())
	if err != nil && ctx.Err() == nil {
		c.errors.Inc()
		d.noteCorrupt("checkpoint", err)
	}
}

// close stops the checkpointer, waits for it, and closes its connection.
// The last connection to close checkpoints what is left.
func (c *checkpointer) close() error {
	if c.conn == nil {
		return nil
	}
	c.stop()
	<-c.done
	err := c.conn.Close()
	c.conn = nil
	return err
}
