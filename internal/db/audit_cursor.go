package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// opSinkCursor is the write of an audit sink's cursor.
var opSinkCursor = writeOp{name: "audit sink cursor"}

// AuditAfter returns up to limit rows of the audit history with an id
// greater than after, oldest first: what an audit sink ships next. The
// rows are those this database's instances wrote, not those merged from
// peers (origin_id set, migration 0025). The single writer
// commits ids in increasing order, so a row committed later never has a
// smaller id than one already read, and a cursor misses nothing.
func (d Decisions) AuditAfter(ctx context.Context, after int64, limit int) ([]AuditEntry, error) {
	rows, err := d.query(ctx, `SELECT id, time, instance, controller, rule, action, api_version, kind, namespace,
		name, uid, facts, reason, dry_run, outcome, error FROM audit WHERE id > ? AND origin_id IS NULL
		ORDER BY id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("audit after %d: %w", after, err)
	}
	out, err := scanAudit(rows)
	if err != nil {
		return nil, fmt.Errorf("audit after %d: %w", after, err)
	}
	return out, nil
}

// SinkCursor returns the id of the last audit row the sink named has
// shipped or dropped; ok is false for a sink that never saved one.
func (d Decisions) SinkCursor(ctx context.Context, sink string) (lastID int64, ok bool, err error) {
	err = d.queryRow(ctx, `SELECT last_id FROM audit_sink_cursors WHERE sink = ?`, sink).Scan(&lastID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("audit sink %s: cursor: %w", sink, err)
	}
	return lastID, true, nil
}

// SaveSinkCursor records that the sink named has shipped or dropped every
// audit row up to lastID. A cursor never moves back.
func (d Decisions) SaveSinkCursor(ctx context.Context, sink string, lastID int64, now time.Time) error {
	err := d.inWriteTx(ctx, opSinkCursor, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO audit_sink_cursors (sink, last_id, updated) VALUES (?, ?, ?)
			ON CONFLICT (sink) DO UPDATE SET last_id = excluded.last_id, updated = excluded.updated
			WHERE excluded.last_id > last_id`, sink, lastID, formatTime(&now))
		return err
	})
	if err != nil {
		return fmt.Errorf("audit sink %s: saving cursor: %w", sink, err)
	}
	return nil
}
