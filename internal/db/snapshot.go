package db

import (
	"context"
	"database/sql"
	"runtime"
	"sync/atomic"
)

// A walk of a big part of the graph spends most of its time reading rows:
// about 4 µs each through the driver, on one core. So its widest reads, a
// level's objects or an owner level's references, are split in two. The
// halves are read at once on two read transactions that see the same
// snapshot of the mirror, so the answer is the one a single transaction
// would give.

// pairedTx is a read transaction and, when aux is not nil, a second one on
// another connection that sees the same snapshot. splitRead gives aux half
// of a wide read.
type pairedTx struct {
	*sql.Tx
	aux   *sql.Tx
	split *splitting
}

// splitting is how a database splits its wide reads (see splitRead).
type splitting struct {
	// rowMin is the fewest keys for which a read of a row or two per key
	// splits. Below it, the second statement and goroutine cost more than
	// they save. Tests lower it, to split small reads too.
	rowMin int
	// count counts the reads split, for tests.
	count atomic.Int64
	// hook, when tests set it, runs between the two transactions' starts. A
	// commit there must leave the read unsplit.
	hook func()
}

// defaultSplitRowMin is splitting.rowMin of an opened database.
const defaultSplitRowMin = 512

// splitKind says how wide a read must be to split. splitRows splits from
// splitting.rowMin keys. splitSteps, for a step down the graph where an
// owner may have thousands of dependents, splits from two.
type splitKind int

const (
	splitRows splitKind = iota
	splitSteps
)

// readSnapshot runs fn in one read transaction, as readTx does. It pairs it
// with a second transaction on the same snapshot when three things hold:
// the read is wide (it may walk a big part of the graph), the machine has
// more than one core, and a pair slot is free (see pairedTx).
//
// Two transactions see the same snapshot when no commit comes between their
// starts. The second connection's PRAGMA data_version tells: it changes
// when a transaction of that connection starts on a database changed since
// its last one. readSnapshot reads it on that connection before the first
// transaction starts, and again as the second starts. When the two values
// are equal, the database did not change in between, and so not when the
// first transaction started either. Otherwise the read runs unsplit on the
// first transaction alone.
func (d *core) readSnapshot(ctx context.Context, wide bool, fn func(q querier) error) error {
	if !wide {
		return d.readTx(ctx, func(tx *sql.Tx) error { return fn(tx) })
	}
	single := func() error {
		d.pairedReads.WithLabelValues("single").Inc()
		return d.readTx(ctx, func(tx *sql.Tx) error { return fn(tx) })
	}
	if runtime.GOMAXPROCS(0) < 2 {
		return single()
	}
	// A pair holds two connections of the pool. The slots bound the pairs
	// so that single reads always find a connection: a pair takes its
	// second while it holds its first.
	select {
	case d.pairSlots <- struct{}{}:
		defer func() { <-d.pairSlots }()
	default:
		return single()
	}
	conn, err := d.read.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var before, after int64
	if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&before); err != nil {
		return err
	}
	return d.readTx(ctx, func(tx *sql.Tx) error {
		// The first transaction's snapshot is taken by its first read.
		var v int64
		if err := tx.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
			return err
		}
		if d.split.hook != nil {
			d.split.hook()
		}
		aux, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer aux.Rollback()
		if err := aux.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&after); err != nil {
			return err
		}
		if after != before {
			d.pairedReads.WithLabelValues("moved").Inc()
			return fn(tx)
		}
		d.pairedReads.WithLabelValues("paired").Inc()
		return fn(&pairedTx{Tx: tx, aux: aux, split: &d.split})
	})
}

// halfRead reads keys, which are all the keys of a read or one half of
// them. off is their place in all the keys, and half is 0 or 1.
type halfRead func(ctx context.Context, q querier, keys []string, off, half int) error

// splitRead calls read once with all keys, unless q is a paired
// transaction and keys are as many as kind asks. Then it calls read with
// each half of keys at once: the first half on q's own transaction, the
// second on the other one. As the halves run at once, each must keep to
// its own state: the places of its keys in a shared slice, or a slice of
// its own.
func splitRead(ctx context.Context, q querier, keys []string, kind splitKind, read halfRead) error {
	p, ok := q.(*pairedTx)
	if !ok || p.aux == nil {
		return read(ctx, q, keys, 0, 0)
	}
	least := 2
	if kind == splitRows {
		least = max(least, p.split.rowMin)
	}
	if len(keys) < least {
		return read(ctx, q, keys, 0, 0)
	}
	p.split.count.Add(1)
	mid := len(keys) / 2
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- read(ctx, p.aux, keys[mid:], mid, 1) }()
	err := read(ctx, p.Tx, keys[:mid], 0, 0)
	if err != nil {
		cancel() // the other half's answer is not wanted
	}
	if auxErr := <-done; err == nil {
		err = auxErr
	}
	return err
}

// openReads opens n connections of the read pool, each with the schema
// read, and leaves them idle in it. Otherwise the first wide read would
// open its pair's second connection, which costs more than the read.
func openReads(ctx context.Context, pool *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := pool.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		var one int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&one); err != nil {
			return err
		}
	}
	return nil
}
