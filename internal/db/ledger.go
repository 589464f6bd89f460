package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// InsertAudit appends an entry and sets its id.
func (d Ledger) InsertAudit(ctx context.Context, e *AuditEntry) error {
	if e.Time.IsZero() {
		e.Time = d.Now()
	}
	return d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error { return d.insertAudit(ctx, tx, e) })
}

const (
	sqlInsertAudit = `INSERT INTO audit (time, instance, controller, rule, action, api_version, kind, namespace,
			name, uid, facts, reason, dry_run, outcome, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlDeletePending      = `DELETE FROM pending WHERE controller = ? AND uid = ?`
	sqlDeleteOtherPending = `DELETE FROM pending WHERE controller = ? AND uid = ? AND action != ?`
)

func (d *core) insertAudit(ctx context.Context, tx *sql.Tx, e *AuditEntry) error {
	var facts any
	if len(e.Facts) > 0 {
		facts = string(e.Facts)
	}
	st, err := d.txStmt(ctx, tx, sqlInsertAudit)
	if err != nil {
		return err
	}
	// The new row's id comes from the connection, not from RETURNING, which
	// costs a result set per row.
	res, err := st.ExecContext(ctx,
		formatTime(&e.Time), e.Instance, e.Controller, e.Rule, e.Action, e.Target.APIVersion, e.Target.Kind,
		e.Target.Namespace, e.Target.Name, e.Target.UID, facts, e.Reason, e.DryRun, e.Outcome, e.Error)
	if err != nil {
		return err
	}
	if e.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	return d.resolveIntent(ctx, tx, e.IntentID)
}

// InsertAudits writes entries in one transaction, all or none. They are the
// rows the applier kept in memory while the database could not take them.
// An entry that settles a decision also removes what was pending about its
// target.
func (d Ledger) InsertAudits(ctx context.Context, entries []*AuditEntry) error {
	return d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		for _, e := range entries {
			if e.Time.IsZero() {
				e.Time = d.Now()
			}
			if err := d.insertAudit(ctx, tx, e); err != nil {
				return err
			}
			if !e.Settles() {
				continue
			}
			st, err := d.txStmt(ctx, tx, sqlDeletePending)
			if err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, e.Controller, e.Target.UID); err != nil {
				return err
			}
		}
		return nil
	})
}

// AppliedWriteTimes returns when each write to the cluster recorded since
// since was applied, by any instance, oldest first. A restarted daemon
// starts its blast-radius window from them. It reads the audit_by_time
// index.
func (d Ledger) AppliedWriteTimes(ctx context.Context, since time.Time) ([]time.Time, error) {
	rows, err := d.query(ctx, `SELECT time FROM audit WHERE time >= ? AND outcome = ? AND dry_run = 0
		AND controller NOT IN (?, ?) ORDER BY time`,
		formatTime(&since), api.OutcomeApplied, api.ControllerKubegcd, api.ControllerOperator)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var ts string
		if err := rows.Scan(&ts); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		if t := parseTime(sql.NullString{String: ts, Valid: true}); t != nil {
			out = append(out, *t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return out, nil
}

// sqlLastHold finds the newest pause or release of the blast-radius cap,
// by time: a row merged from a peer takes the next id when it arrives,
// which may be after a newer row of this instance's.
const sqlLastHold = `SELECT id FROM audit
	WHERE controller IN ('` + string(api.ControllerKubegcd) + `', '` + string(api.ControllerOperator) + `')
	AND action IN ('` + string(api.ActionPause) + `', '` + string(api.ActionRelease) + `')
	ORDER BY time DESC, id DESC LIMIT 1`

// LastHold returns the newest pause or release of enforcement and when it
// was recorded, or "" when there is none. A manual hold outlives a restart.
func (d Ledger) LastHold(ctx context.Context) (action api.Action, at time.Time, err error) {
	var ts string
	err = d.queryRow(ctx, `SELECT action, time FROM audit WHERE id = (`+sqlLastHold+`)`).Scan(&action, &ts)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("audit: %w", err)
	}
	if t := parseTime(sql.NullString{String: ts, Valid: true}); t != nil {
		at = *t
	}
	return action, at, nil
}

// UpsertPending records p and reports whether it is a new decision. A
// decision is new when it was not pending before, or was pending for
// another rule, reason or resourceVersion. An unchanged decision keeps its
// original Since.
func (d Ledger) UpsertPending(ctx context.Context, p *Pending) (bool, error) {
	var isNew bool
	err := d.inWriteTx(ctx, opPending, func(tx *sql.Tx) error {
		var err error
		isNew, err = d.upsertPending(ctx, tx, p)
		return err
	})
	return isNew, err
}

// upsertPending writes p in tx and reports whether it is a new decision
// (see UpsertPending).
func (d *core) upsertPending(ctx context.Context, tx *sql.Tx, p *Pending) (bool, error) {
	var rule, reason, rv, since string
	isNew := false
	err := tx.QueryRowContext(ctx, `SELECT rule, reason, resource_version, since FROM pending
		WHERE controller = ? AND uid = ? AND action = ?`,
		p.Controller, p.Target.UID, p.Action).Scan(&rule, &reason, &rv, &since)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		isNew = true
	case err != nil:
		return false, err
	default:
		isNew = rule != p.Rule || reason != p.Reason || rv != p.ResourceVersion
		if t := parseTime(sql.NullString{String: since, Valid: true}); t != nil && !isNew {
			p.Since = *t
		}
	}
	if p.Since.IsZero() {
		p.Since = d.Now()
	}
	// A controller holds one decision about an object, so a new decision
	// replaces the one held before, even for another action. svgc, for
	// example, may decide to remove a StorageVersion's stale entries where
	// it held a deletion of the whole object.
	st, err := d.txStmt(ctx, tx, sqlDeleteOtherPending)
	if err != nil {
		return false, err
	}
	if _, err := st.ExecContext(ctx, p.Controller, p.Target.UID, p.Action); err != nil {
		return false, err
	}
	tgt := &p.Target
	_, err = tx.ExecContext(ctx, `INSERT INTO pending (controller, uid, action, rule, reason, api_version, kind,
			namespace, name, resource_version, since, not_before)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (controller, uid, action) DO UPDATE SET rule = excluded.rule, reason = excluded.reason,
			api_version = excluded.api_version, kind = excluded.kind, namespace = excluded.namespace,
			name = excluded.name, resource_version = excluded.resource_version, since = excluded.since,
			not_before = excluded.not_before`,
		p.Controller, tgt.UID, p.Action, p.Rule, p.Reason, tgt.APIVersion, tgt.Kind, tgt.Namespace, tgt.Name,
		p.ResourceVersion, formatTime(&p.Since), formatTime(p.NotBefore))
	return isNew, err
}

// ClearPending forgets the decisions a controller held about uid.
func (d Ledger) ClearPending(ctx context.Context, controller api.Controller, uid string) error {
	return d.inWriteTx(ctx, opPending, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, sqlDeletePending, controller, uid)
		return err
	})
}

// PendingUID names an object a controller holds decisions pending about.
type PendingUID struct {
	Controller api.Controller
	UID        string
}

// PendingUIDs returns every (controller, uid) with pending rows.
func (d Ledger) PendingUIDs(ctx context.Context) ([]PendingUID, error) {
	rows, err := d.query(ctx, `SELECT DISTINCT controller, uid FROM pending`)
	if err != nil {
		return nil, fmt.Errorf("pending: %w", err)
	}
	defer rows.Close()
	var out []PendingUID
	for rows.Next() {
		var k PendingUID
		if err := rows.Scan(&k.Controller, &k.UID); err != nil {
			return nil, fmt.Errorf("pending: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending: %w", err)
	}
	return out, nil
}

// AppliedRow is the audit row of a write carried out. ClearPending asks
// that what its controller held pending about the target go in the same
// transaction.
type AppliedRow struct {
	Entry        *AuditEntry
	ClearPending bool
}

// appliedLinger is the least time between two runs of WriteApplied's
// requests. Every commit of audit rows rewrites the last page of the table
// and of each of its six indexes. Rows of 50 ms share those pages. Rows
// written as they came, a few per commit at 1,000 writes/s, took about
// twice the bytes each (BenchmarkApplyDiskWrites, internal/reconcile).
const appliedLinger = 50 * time.Millisecond

// WriteApplied asks the writer for a transaction that writes the rows take
// returns, and returns without waiting for it. take runs when the
// transaction does. A request that comes less than appliedLinger after the
// last one ran waits for the rest of that time, so the rows the caller
// queues meanwhile go in the same transaction. A lone row is written at
// once. The worker that carried out the write need not wait for the disk
// before it takes the next.
//
// done hears once: the rows taken, each row's error, and the transaction's
// error. failed is nil when every row was written, and err is nil when the
// rows are committed. A request may never run, because its transaction
// could not begin or the database is closing. Then take runs on done's
// goroutine, so that the rows' callers hear why. Close commits the requests
// still queued.
func (d Ledger) WriteApplied(take func() []AppliedRow, done func(rows []AppliedRow, failed []error, err error)) {
	// Only the writer's goroutine touches taken, written and failed, or
	// this one when the request is refused before it is queued. The rows
	// are taken once: a replay of the group (see runGroup) writes the same
	// ones again.
	var taken, written []AppliedRow
	var failed []error
	runs := 0
	d.inWriteTxAsync(opAudit, appliedLinger, func(tx *sql.Tx) error {
		if runs == 0 {
			taken = take()
		}
		// A second run is a replay, which writes each row in a savepoint.
		careful := runs > 0
		runs++
		written, failed = d.writeApplied(tx, taken, careful)
		if !careful && failed != nil {
			return errReplayCareful
		}
		return nil
	}, func(err error) {
		if runs == 0 {
			written, failed = take(), nil
		}
		if err != nil {
			failed = nil
		}
		for i := range failed {
			if failed[i] != nil {
				failed[i] = fmt.Errorf("database audit: %w", failed[i])
			}
		}
		done(written, failed, err)
	})
}

// writeApplied writes entries and returns them with each one's error. An
// entry written has a nil error, and failed is nil when every entry was
// written. failed is a slice of its own, because writeApplied runs again on
// the same entries when its transaction is replayed.
//
// A careless pass writes the entries one after the other and stops at the
// first failure, which leaves the transaction to be rolled back. A careful
// pass writes each entry in a savepoint of its own, so that a failure loses
// only its own row. A savepoint copies into the sub-journal every page its
// write first changes, so the careless pass, the common one, costs half as
// much.
func (d *core) writeApplied(tx *sql.Tx, entries []AppliedRow, careful bool) ([]AppliedRow, []error) {
	ctx := context.Background()
	var failed []error
	for i, a := range entries {
		if a.Entry.Time.IsZero() {
			a.Entry.Time = d.Now()
		}
		write := func() error {
			if err := d.insertAudit(ctx, tx, a.Entry); err != nil || !a.ClearPending {
				return err
			}
			st, err := d.txStmt(ctx, tx, sqlDeletePending)
			if err != nil {
				return err
			}
			_, err = st.ExecContext(ctx, a.Entry.Controller, a.Entry.Target.UID)
			return err
		}
		var err error
		if careful {
			err = d.inSavepoint(ctx, tx, "a", write)
		} else {
			err = write()
		}
		if err != nil {
			if failed == nil {
				failed = make([]error, len(entries))
			}
			failed[i] = err
			if !careful {
				break
			}
		}
	}
	return entries, failed
}
