package db

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// stmtCache keeps one prepared statement per query text and pool: SQLite
// spends more time parsing a small query than running it, and the hot
// queries run thousands of times a second under load.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// get returns the cached statement for query, preparing it on a miss. The
// lock is not held while preparing: preparing needs a free connection, and
// whoever holds one may be waiting here.
func (c *stmtCache) get(ctx context.Context, pool *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.stmts[query]
	c.mu.Unlock()
	if ok {
		return st, nil
	}
	st, err := pool.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.stmts[query]; ok {
		st.Close()
		return prev, nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = st
	return st, nil
}

// lookup returns a cached statement without preparing one.
func (c *stmtCache) lookup(query string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.stmts[query]
	return st, ok
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}

// queryRow runs a single-row read through a cached statement.
func (d *core) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := d.readStmts.get(ctx, d.read, query)
	if err != nil {
		// Surface the error through Row.Scan, as QueryRowContext would.
		return d.read.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// query runs a read through a cached statement.
func (d *core) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := d.readStmts.get(ctx, d.read, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// txStmt returns the write statement for query, bound to tx. The writer
// has one connection, which tx holds, so a statement not cached yet is
// prepared on tx itself, and cached for the next transaction by warmWrites
// or by the first use outside a transaction.
// A query missing from writeQueries is prepared again in every
// transaction, which costs more than running it: unpreparedWrites counts
// those, for TestHotWritesArePrepared.
func (d *core) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := d.writeStmts.lookup(query); ok {
		return tx.StmtContext(ctx, st), nil
	}
	d.unpreparedWrites.Add(1)
	return tx.PrepareContext(ctx, query)
}

// warmWrites prepares the hot write statements once, before any
// transaction holds the writer's connection.
func (d *core) warmWrites(ctx context.Context) error {
	for _, q := range writeQueries {
		if _, err := d.writeStmts.get(ctx, d.write, q); err != nil {
			return err
		}
	}
	return nil
}

// eachString calls fn with the one column of each row query returns.
func eachString(ctx context.Context, q querier, query string, fn func(string), args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		fn(s)
	}
	return rows.Err()
}

// queryStrings returns the one column of each row query returns.
func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	var out []string
	err := eachString(ctx, q, query, func(s string) { out = append(out, s) }, args...)
	return out, err
}

// strings returns the one column of each row query returns. what names
// the read in errors.
func (d *core) strings(ctx context.Context, what, query string, args ...any) ([]string, error) {
	out, err := queryStrings(ctx, d.read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
