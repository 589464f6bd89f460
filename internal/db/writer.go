package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// maxGroup bounds how many writes share one transaction.
const maxGroup = 256

// errClosed is returned for writes after Close.
var errClosed = errors.New("database is closed")

// writeOp is a kind of write. It says where the writer puts a write in its
// group.
type writeOp struct {
	// name labels the write's metrics and errors.
	name string
	// afterHeld puts the write after the held writes of its group (see
	// runWriter).
	afterHeld bool
	// unchecked runs the write with SQLite's foreign keys off (see
	// setForeignKeys).
	unchecked bool
	// replayable says a power loss may lose the write: it only mirrors the
	// cluster, and the watch's resume point, written with it, goes with it.
	// kubegcd then reads it again from the API server. A group of such
	// writes alone commits without syncing the WAL (see setSync).
	replayable bool
}

// The kinds of write. The ledger's writes go after the held ones: audit
// rows then keep the order of the writes they record, and an applied row
// clears pending rows before a later decision writes new ones.
var (
	opResource = writeOp{name: "resource"}
	opList     = writeOp{name: "list", replayable: true}
	// A page of a first fill writes only objects it adds and their rows,
	// each after its object: no foreign key can fail, and no row is
	// deleted, so no cascade is due. Checking the keys took a quarter of
	// the CPU of a page of pods with six references each.
	opFirstFill = writeOp{name: "list", unchecked: true, replayable: true}
	opEvents    = writeOp{name: "events", replayable: true}
	opHistory   = writeOp{name: "history"}
	opIntent    = writeOp{name: "intent"}
	opAudit     = writeOp{name: "audit", afterHeld: true}
	opPending   = writeOp{name: "pending", afterHeld: true}
)

// writeReq is one caller's write, waiting for its turn on the writer.
type writeReq struct {
	ctx    context.Context
	op     writeOp
	fn     func(*sql.Tx) error
	start  time.Time
	done   chan error
	onDone func(error)
	// linger is how long the writer holds the request before it runs it
	// (see inWriteTxAsync).
	linger time.Duration
}

// inWriteTx runs fn in a write transaction and returns once it is committed
// (or failed). Writes from concurrent callers are group-committed: the
// writer takes every request already waiting and runs them in one
// transaction, so that a burst of small writes costs one commit, not one
// each, while a failing write still rolls back only itself (see runGroup).
// fn may run more than once: it must derive everything from tx and set
// its outputs anew each time.
func (d *core) inWriteTx(ctx context.Context, op writeOp, fn func(tx *sql.Tx) error) error {
	req := &writeReq{ctx: ctx, op: op, fn: fn, start: time.Now(), done: make(chan error, 1)}
	select {
	case d.writes <- req:
	case <-ctx.Done():
		return fmt.Errorf("database %s: %w", op.name, ctx.Err())
	case <-d.writerDone:
		return fmt.Errorf("database %s: %w", op.name, errClosed)
	}
	// Wait even if ctx ends: fn may be running and still touching the
	// caller's variables.
	return <-req.done
}

// inWriteTxAsync queues fn like inWriteTx and returns at once. It waits
// neither for the write nor for room in the writer's queue: when the queue
// is full, a goroutine of its own waits for room. Requests queued while
// there is room keep their order. onDone, if set, gets the result on the
// writer's goroutine. Close commits whatever is still queued. A request
// still waiting for room when the writer has stopped gets errClosed.
//
// A positive linger spaces out the runs of such requests. A request that
// comes less than linger after the last one ran is held until linger after
// that run. One that comes later runs at once. While a request is held,
// its caller may queue more rows, and its fn takes them all when it runs,
// so that they share one transaction (see WriteApplied). Close runs a held
// request at once.
func (d *core) inWriteTxAsync(op writeOp, linger time.Duration, fn func(tx *sql.Tx) error, onDone func(error)) {
	req := &writeReq{ctx: context.Background(), op: op, fn: fn, start: time.Now(), done: make(chan error, 1),
		onDone: onDone, linger: linger}
	queue := func() {
		select {
		case d.writes <- req:
		case <-d.writerDone:
			if onDone != nil {
				onDone(fmt.Errorf("database %s: %w", op.name, errClosed))
			}
		}
	}
	select {
	case d.writes <- req:
	default:
		// The one caller (WriteApplied, through its applier) keeps at most one request
		// queued, so there is at most one such goroutine.
		go queue()
	}
}

// runWriter owns the write connection until Close, then commits what is
// still queued or held.
func (d *core) runWriter() {
	defer close(d.writerDone)
	var h holding
	for {
		var batch []*writeReq
		select {
		case <-d.probes: // see WriterAlive
			continue
		case r := <-d.writes:
			if h.hold(r) {
				continue
			}
			batch = h.add(batch, r)
		case <-h.due:
			batch = h.release(batch)
		case <-d.stopWriter:
			d.commitRest(&h)
			return
		}
		d.commitGroup(d.fill(&h, batch))
	}
}

// fill adds to batch the requests already queued, up to maxGroup.
func (d *core) fill(h *holding, batch []*writeReq) []*writeReq {
	for len(batch) < maxGroup {
		select {
		case r := <-d.writes:
			if !h.hold(r) {
				batch = h.add(batch, r)
			}
		default:
			return batch
		}
	}
	return batch
}

// commitRest commits the held requests together, then each request still
// queued on its own.
func (d *core) commitRest(h *holding) {
	if len(h.held) > 0 {
		d.commitGroup(h.release(nil))
	}
	for {
		select {
		case r := <-d.writes:
			d.commitGroup([]*writeReq{r})
		default:
			return
		}
	}
}

// holding keeps back the requests that linger (see inWriteTxAsync). They
// run together once linger has passed since the last such run. The writer
// holds requests only in a stream of them: one that comes later than that
// runs at once.
type holding struct {
	held []*writeReq
	// due fires when the held requests may run; nil while none is held.
	due     <-chan time.Time
	lastRun time.Time
}

// hold keeps r back when it lingers and the last run is too recent. It
// reports whether it did.
func (h *holding) hold(r *writeReq) bool {
	if r.linger <= 0 {
		return false
	}
	if len(h.held) == 0 {
		wait := time.Until(h.lastRun.Add(r.linger))
		if wait <= 0 {
			h.lastRun = time.Now()
			return false
		}
		h.due = time.After(wait)
	}
	h.held = append(h.held, r)
	return true
}

// release adds the held requests to batch.
func (h *holding) release(batch []*writeReq) []*writeReq {
	if len(h.held) == 0 {
		return batch
	}
	now := time.Now()
	h.lastRun = now
	for _, r := range h.held {
		r.start = now // its write time, not its linger
	}
	batch = append(batch, h.held...)
	h.held, h.due = nil, nil
	return batch
}

// add puts r in batch, after the held requests when its kind asks it.
func (h *holding) add(batch []*writeReq, r *writeReq) []*writeReq {
	if r.op.afterHeld {
		batch = h.release(batch)
	}
	return append(batch, r)
}

func (d *core) commitGroup(batch []*writeReq) {
	results := make([]error, len(batch))
	finish := func() {
		for i, r := range batch {
			d.observe(r.op.name, r.start)
			d.noteCorrupt(r.op.name, results[i])
			r.done <- results[i]
			if r.onDone != nil {
				r.onDone(results[i])
			}
		}
	}
	defer finish()
	for start := 0; start < len(batch); {
		// A run of writes that check foreign keys alike shares a
		// transaction: the pragma holds for a whole transaction.
		end := start + 1
		for end < len(batch) && batch[end].op.unchecked == batch[start].op.unchecked {
			end++
		}
		group, res := batch[start:end], results[start:end]
		if err := d.setForeignKeys(!group[0].op.unchecked); err != nil {
			for i := range res {
				res[i] = fmt.Errorf("database %s: foreign keys: %w", group[i].op.name, err)
			}
		} else if err := d.setSync(replayable(group)); err != nil {
			for i := range res {
				res[i] = fmt.Errorf("database %s: synchronous: %w", group[i].op.name, err)
			}
		} else if !d.runGroup(group, res, false) {
			d.runGroup(group, res, true)
		}
		start = end
	}
	d.checkpointer.noteCommit()
}

// setForeignKeys turns SQLite's foreign keys on or off on the write
// connection. A new connection starts with them on (see dsn), so a
// connection that the pool replaced can only check more than asked, never
// less.
func (d *core) setForeignKeys(on bool) error {
	return d.setPragma(&d.foreignKeysOff, !on, `PRAGMA foreign_keys = OFF`, `PRAGMA foreign_keys = ON`)
}

// setPragma brings a setting of the write connection, whose value is
// *state, to want: it runs set for true, unset for false. It runs between
// transactions, where a pragma takes effect.
func (d *core) setPragma(state *bool, want bool, set, unset string) error {
	if *state == want {
		return nil
	}
	q := unset
	if want {
		q = set
	}
	if _, err := d.write.ExecContext(context.Background(), q); err != nil {
		return err
	}
	*state = want
	return nil
}

// replayable says whether every write of group is replayable.
func replayable(group []*writeReq) bool {
	return !slices.ContainsFunc(group, func(r *writeReq) bool { return !r.op.replayable })
}

// setSync sets how the write connection commits, between transactions.
// A group of replayable writes alone commits with synchronous=NORMAL: the
// WAL is written, not synced, and a power loss may take the commit back.
// Any other group commits with FULL, the connection's default (see dsn),
// whose sync also makes every commit before it durable: the WAL is
// appended in order. So a power loss keeps a prefix of the commits, and
// an intent is never durable without the mirror it was decided on.
func (d *core) setSync(lazy bool) error {
	return d.setPragma(&d.lazySync, lazy, `PRAGMA synchronous = NORMAL`, `PRAGMA synchronous = FULL`)
}

// runGroup runs the writes of batch not yet failed in one transaction and
// commits it. Without savepoints it is the fast pass. At the first failing
// write it rolls everything back, records that write's error and returns
// false. The caller then runs the group again with savepoints, and the
// writes before the failing one run again. A write fails the same way in
// both passes, because it sees the same writes before it.
//
// The fast pass exists because a savepoint costs more than the write it
// guards when the write is large. Each statement in a savepoint truncates
// the in-memory sub-journal from its start, so a list page of 500 objects
// paid quadratically for it.
//
// So every write must be able to run again: each fn derives everything from
// its transaction and sets its outputs anew, never appends to them.
func (d *core) runGroup(batch []*writeReq, results []error, savepoints bool) bool {
	fail := func(err error) {
		for i, r := range batch {
			if results[i] == nil {
				results[i] = fmt.Errorf("database %s: %w", r.op.name, err)
			}
		}
	}
	tx, err := d.write.BeginTx(context.Background(), nil)
	if err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return true
	}
	ok := 0
	for i, r := range batch {
		if results[i] != nil {
			continue
		}
		run := func() error { return r.fn(tx) }
		var err error
		if savepoints {
			err = d.inSavepoint(r.ctx, tx, "w", run)
			if errors.Is(err, errReplayCareful) {
				// Its first run kept no part apart, and one part failed.
				// Run it again: this time it writes each part in a
				// savepoint.
				err = d.inSavepoint(r.ctx, tx, "w", run)
			}
		} else {
			err = run()
		}
		var sp savepointError
		switch {
		case errors.Is(err, errReplayCareful) && !savepoints:
			// The write asks to run again with savepoints. That is not a
			// failure of the write.
			tx.Rollback()
			return false
		case errors.As(err, &sp):
			tx.Rollback()
			fail(sp.err)
			return true
		case err != nil && !savepoints && len(batch) > 1:
			tx.Rollback()
			results[i] = fmt.Errorf("database %s: %w", r.op.name, err)
			return false
		case err != nil:
			results[i] = fmt.Errorf("database %s: %w", r.op.name, err)
		default:
			ok++
		}
	}
	if ok == 0 {
		tx.Rollback()
		return true
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return true
	}
	d.writesPerCommit.Observe(float64(ok))
	return true
}

// errReplayCareful is what a write of several parts returns when one part
// failed on its first run. That run kept no part apart, so the writer runs
// the write again, and the write then puts each part in a savepoint (see
// WriteApplied). It is not a failure of the write.
var errReplayCareful = errors.New("replay the group with savepoints")

// savepointError is a failure of the savepoint machinery itself, which
// leaves the whole transaction unusable.
type savepointError struct{ err error }

func (e savepointError) Error() string { return e.err.Error() }

// inSavepoint runs fn inside savepoint name. A failing fn rolls back only
// its own writes, and inSavepoint returns its error as it is.
func (d *core) inSavepoint(ctx context.Context, tx *sql.Tx, name string, fn func() error) error {
	exec := func(q string) error {
		st, err := d.txStmt(ctx, tx, q)
		if err == nil {
			_, err = st.ExecContext(ctx)
		}
		if err != nil {
			return savepointError{err}
		}
		return nil
	}
	if err := exec("SAVEPOINT " + name); err != nil {
		return err
	}
	if err := fn(); err != nil {
		if rerr := exec("ROLLBACK TO " + name); rerr != nil {
			return rerr
		}
		if rerr := exec("RELEASE " + name); rerr != nil {
			return rerr
		}
		return err
	}
	return exec("RELEASE " + name)
}
