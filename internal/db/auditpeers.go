package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AuditPeers is what audit sharing writes and reads: the rows merged from
// peers, how far each peer's database was read, the identities that wrote
// into this database, and the gaps a handover left.
type AuditPeers struct{ *core }

// AuditPeers is the role of audit sharing.
func (d *DB) AuditPeers() AuditPeers { return AuditPeers{d.core} }

// ReplicaRow is an audit row as a peer takes it: with the id it has in the
// database of the instance that wrote it.
type ReplicaRow struct {
	AuditEntry
	OriginID int64
}

// AuditHead is the newest row of a database: its local id and its time.
// ID is 0 when the history is empty.
type AuditHead struct {
	ID   int64
	Time time.Time
}

// AuditGap is a part of an instance's history this database may be
// missing: that instance's rows before Before, after Since (nil: from the
// start).
type AuditGap struct {
	Instance   string
	Since      *time.Time
	Before     time.Time
	RecordedBy string
}

// PeerCursor is how far this instance read one peer's database.
type PeerCursor struct {
	Store    string
	After    int64
	URL      string
	Instance string
	PulledAt time.Time
}

// AuditStore returns this database's id among the copies, made by
// migration 0025.
func (d Decisions) AuditStore(ctx context.Context) (string, error) {
	return auditStore(ctx, d.core)
}

// StoreID returns this database's id among the copies.
func (d AuditPeers) StoreID(ctx context.Context) (string, error) { return auditStore(ctx, d.core) }

func auditStore(ctx context.Context, d *core) (string, error) {
	var id string
	if err := d.queryRow(ctx, `SELECT id FROM audit_store LIMIT 1`).Scan(&id); err != nil {
		return "", fmt.Errorf("audit store: %w", err)
	}
	return id, nil
}

// AuditWriters returns the identities that wrote rows into this database
// themselves, oldest first.
func (d Decisions) AuditWriters(ctx context.Context) ([]string, error) {
	return auditWriters(ctx, d.core)
}

// Writers returns the identities that wrote rows into this database
// themselves, oldest first.
func (d AuditPeers) Writers(ctx context.Context) ([]string, error) { return auditWriters(ctx, d.core) }

func auditWriters(ctx context.Context, d *core) ([]string, error) {
	rows, err := d.query(ctx, `SELECT instance FROM audit_writers ORDER BY since, instance`)
	if err != nil {
		return nil, fmt.Errorf("audit writers: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("audit writers: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// RecordWriter notes that instance writes into this database, once per
// start of the daemon.
func (d AuditPeers) RecordWriter(ctx context.Context, instance string) error {
	now := d.Now()
	return d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO audit_writers (instance, since) VALUES (?, ?)`,
			instance, formatTime(&now))
		return err
	})
}

// ReplicaPage returns up to limit rows whose local id is greater than
// after, in id order, rows merged from peers included, and the newest row.
func (d Decisions) ReplicaPage(ctx context.Context, after int64, limit int) ([]ReplicaRow, AuditHead, error) {
	var head AuditHead
	var ts sql.NullString
	err := d.queryRow(ctx, `SELECT id, time FROM audit ORDER BY id DESC LIMIT 1`).Scan(&head.ID, &ts)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return []ReplicaRow{}, head, nil
	case err != nil:
		return nil, head, fmt.Errorf("audit replica: %w", err)
	}
	if t := parseTime(ts); t != nil {
		head.Time = *t
	}
	rows, err := d.query(ctx, `SELECT coalesce(origin_id, id), id, time, instance, controller, rule, action,
		api_version, kind, namespace, name, uid, facts, reason, dry_run, outcome, error
		FROM audit WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
	if err != nil {
		return nil, head, fmt.Errorf("audit replica: %w", err)
	}
	defer rows.Close()
	out := []ReplicaRow{}
	for rows.Next() {
		var r ReplicaRow
		var ts string
		var facts sql.NullString
		tgt := &r.Target
		if err := rows.Scan(&r.OriginID, &r.ID, &ts, &r.Instance, &r.Controller, &r.Rule, &r.Action,
			&tgt.APIVersion, &tgt.Kind, &tgt.Namespace, &tgt.Name, &tgt.UID, &facts, &r.Reason, &r.DryRun,
			&r.Outcome, &r.Error); err != nil {
			return nil, head, fmt.Errorf("audit replica: %w", err)
		}
		if t := parseTime(sql.NullString{String: ts, Valid: true}); t != nil {
			r.Time = *t
		}
		if facts.Valid {
			r.Facts = []byte(facts.String)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, head, fmt.Errorf("audit replica: %w", err)
	}
	return out, head, nil
}

// Cursor returns how far this instance read the database store: the
// peer's local id of the last row taken, 0 before any.
func (d AuditPeers) Cursor(ctx context.Context, store string) (int64, error) {
	var after int64
	err := d.queryRow(ctx, `SELECT after_id FROM audit_peer_cursors WHERE store = ?`, store).Scan(&after)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("audit peer cursor: %w", err)
	}
	return after, nil
}

// Cursors returns every peer database's cursor.
func (d AuditPeers) Cursors(ctx context.Context) ([]PeerCursor, error) {
	rows, err := d.query(ctx, `SELECT store, after_id, url, instance, pulled_at FROM audit_peer_cursors
		ORDER BY store`)
	if err != nil {
		return nil, fmt.Errorf("audit peer cursors: %w", err)
	}
	defer rows.Close()
	var out []PeerCursor
	for rows.Next() {
		var c PeerCursor
		var ts string
		if err := rows.Scan(&c.Store, &c.After, &c.URL, &c.Instance, &ts); err != nil {
			return nil, fmt.Errorf("audit peer cursors: %w", err)
		}
		if t := parseTime(sql.NullString{String: ts, Valid: true}); t != nil {
			c.PulledAt = *t
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

const sqlMergeAudit = `INSERT OR IGNORE INTO audit (time, instance, controller, rule, action, api_version, kind,
		namespace, name, uid, facts, reason, dry_run, outcome, error, origin_id)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// Merge writes the rows of one page read from the peer database c.Store,
// and moves its cursor to c.After, in one transaction. A row already held
// (the same instance and origin id) is left as it is, so a row read twice
// is one row and a merged row never replaces another. A row whose
// instance refuse names is skipped: this database's own rows come from
// here, never from a peer. Merge returns how many rows it added.
func (d AuditPeers) Merge(ctx context.Context, c PeerCursor, rows []ReplicaRow,
	refuse func(instance string) bool) (int, error) {
	if c.PulledAt.IsZero() {
		c.PulledAt = d.Now()
	}
	var added int
	err := d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		added = 0
		st, err := d.txStmt(ctx, tx, sqlMergeAudit)
		if err != nil {
			return err
		}
		for i := range rows {
			r := &rows[i]
			if refuse != nil && refuse(r.Instance) {
				continue
			}
			var facts any
			if len(r.Facts) > 0 {
				facts = string(r.Facts)
			}
			tgt := &r.Target
			res, err := st.ExecContext(ctx, formatTime(&r.Time), r.Instance, r.Controller, r.Rule, r.Action,
				tgt.APIVersion, tgt.Kind, tgt.Namespace, tgt.Name, tgt.UID, facts, r.Reason, r.DryRun, r.Outcome,
				r.Error, r.OriginID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				added++
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO audit_peer_cursors (store, after_id, url, instance, pulled_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (store) DO UPDATE SET after_id = max(after_id, excluded.after_id), url = excluded.url,
				instance = excluded.instance, pulled_at = excluded.pulled_at`,
			c.Store, c.After, c.URL, c.Instance, formatTime(&c.PulledAt))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("audit merge: %w", err)
	}
	return added, nil
}

// ResetCursor forgets how far the database store was read: its next read
// starts from its first row. A peer whose history is shorter than the
// cursor (its file was replaced by an older copy) is read again whole.
func (d AuditPeers) ResetCursor(ctx context.Context, store string) error {
	return d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM audit_peer_cursors WHERE store = ?`, store)
		return err
	})
}

// NewestOf returns the time of the newest row instance wrote that this
// database holds; nil when it holds none. It reads audit_by_origin
// backwards, so it costs one row however long the history.
func (d AuditPeers) NewestOf(ctx context.Context, instance string) (*time.Time, error) {
	var ts string
	err := d.queryRow(ctx, `SELECT time FROM audit WHERE instance = ?
		ORDER BY coalesce(origin_id, id) DESC LIMIT 1`, instance).Scan(&ts)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return parseTime(sql.NullString{String: ts, Valid: true}), nil
}

// RecordGap notes that g.Instance's rows before g.Before may be missing.
// A gap already recorded for that instance keeps its since and takes the
// later before.
func (d AuditPeers) RecordGap(ctx context.Context, g AuditGap) error {
	return d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO audit_gaps (instance, since, before, recorded_by)
			VALUES (?, ?, ?, ?)
			ON CONFLICT (instance) DO UPDATE SET before = max(before, excluded.before),
				recorded_by = excluded.recorded_by`,
			g.Instance, formatTime(g.Since), formatTime(&g.Before), g.RecordedBy)
		return err
	})
}

// ClearGaps removes the gaps of the instances named, and returns those
// it removed.
func (d AuditPeers) ClearGaps(ctx context.Context, instances []string) ([]string, error) {
	var cleared []string
	err := d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		cleared = cleared[:0]
		for _, in := range instances {
			res, err := tx.ExecContext(ctx, `DELETE FROM audit_gaps WHERE instance = ?`, in)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				cleared = append(cleared, in)
			}
		}
		return nil
	})
	return cleared, err
}

// Gaps returns the gaps recorded, by instance.
func (d AuditPeers) Gaps(ctx context.Context) ([]AuditGap, error) { return auditGaps(ctx, d.core) }

// AuditGaps returns the parts of other instances' histories this database
// may be missing, by instance.
func (d Decisions) AuditGaps(ctx context.Context) ([]AuditGap, error) { return auditGaps(ctx, d.core) }

func auditGaps(ctx context.Context, d *core) ([]AuditGap, error) {
	rows, err := d.query(ctx, `SELECT instance, since, before, recorded_by FROM audit_gaps ORDER BY instance`)
	if err != nil {
		return nil, fmt.Errorf("audit gaps: %w", err)
	}
	defer rows.Close()
	var out []AuditGap
	for rows.Next() {
		var g AuditGap
		var since sql.NullString
		var before string
		if err := rows.Scan(&g.Instance, &since, &before, &g.RecordedBy); err != nil {
			return nil, fmt.Errorf("audit gaps: %w", err)
		}
		g.Since = parseTime(since)
		if t := parseTime(sql.NullString{String: before, Valid: true}); t != nil {
			g.Before = *t
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
