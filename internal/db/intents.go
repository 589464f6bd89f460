package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Intent is a write to the cluster that was decided and committed to be
// sent, and whose outcome is not recorded yet. Its row is committed before
// the request leaves. The transaction that writes the write's audit row
// (AuditEntry.IntentID) deletes it. So an intent left open at start is a
// write whose outcome a crash lost.
type Intent struct {
	ID int64
	// Entry is the audit row of the write, less its outcome. Time is when
	// the write was sent.
	Entry AuditEntry
	// ResourceVersion is the version the write was decided on.
	ResourceVersion string
}

const (
	sqlInsertIntent = `INSERT INTO intents (time, instance, controller, rule, action, api_version, kind, namespace,
			name, uid, resource_version, facts, reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlDeleteIntent = `DELETE FROM intents WHERE id = ?`
)

// InsertIntent commits in and sets its ID, and in.Entry's IntentID, so that
// the entry resolves the intent once it has an outcome. It returns once the
// commit is done, and the caller sends the write only then. Concurrent
// callers share a commit, as the writer groups what is waiting. So a worker
// waits for the one transaction that holds its intent, not for one per
// worker.
func (d Ledger) InsertIntent(ctx context.Context, in *Intent) error {
	e := &in.Entry
	if e.Time.IsZero() {
		e.Time = d.Now()
	}
	var facts any
	if len(e.Facts) > 0 {
		facts = string(e.Facts)
	}
	err := d.inWriteTx(ctx, opIntent, func(tx *sql.Tx) error {
		st, err := d.txStmt(ctx, tx, sqlInsertIntent)
		if err != nil {
			return err
		}
		tgt := &e.Target
		res, err := st.ExecContext(ctx, formatTime(&e.Time), e.Instance, e.Controller, e.Rule, e.Action,
			tgt.APIVersion, tgt.Kind, tgt.Namespace, tgt.Name, tgt.UID, in.ResourceVersion, facts, e.Reason)
		if err != nil {
			return err
		}
		in.ID, err = res.LastInsertId()
		return err
	})
	e.IntentID = in.ID
	return err
}

// resolveIntent deletes the intent an audit row settles, in that row's
// transaction.
func (d *core) resolveIntent(ctx context.Context, tx *sql.Tx, id int64) error {
	if id == 0 {
		return nil
	}
	st, err := d.txStmt(ctx, tx, sqlDeleteIntent)
	if err != nil {
		return err
	}
	_, err = st.ExecContext(ctx, id)
	return err
}

// WithdrawIntent deletes the intent of a write that was not sent after all.
// Such a write needs no audit row.
func (d Ledger) WithdrawIntent(ctx context.Context, id int64) error {
	return d.inWriteTx(ctx, opIntent, func(tx *sql.Tx) error { return d.resolveIntent(ctx, tx, id) })
}

// OpenIntents returns the intents without an outcome, oldest first.
func (d Ledger) OpenIntents(ctx context.Context) ([]Intent, error) {
	rows, err := d.read.QueryContext(ctx, `SELECT id, time, instance, controller, rule, action, api_version, kind,
		namespace, name, uid, resource_version, facts, reason FROM intents ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("intents: %w", err)
	}
	defer rows.Close()
	var out []Intent
	for rows.Next() {
		var in Intent
		e := &in.Entry
		var ts string
		var facts sql.NullString
		tgt := &e.Target
		if err := rows.Scan(&in.ID, &ts, &e.Instance, &e.Controller, &e.Rule, &e.Action, &tgt.APIVersion,
			&tgt.Kind, &tgt.Namespace, &tgt.Name, &tgt.UID, &in.ResourceVersion, &facts,
			&e.Reason); err != nil {
			return nil, fmt.Errorf("intents: %w", err)
		}
		if t := parseTime(sql.NullString{String: ts, Valid: true}); t != nil {
			e.Time = *t
		}
		if facts.Valid {
			e.Facts = json.RawMessage(facts.String)
		}
		e.IntentID = in.ID
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("intents: %w", err)
	}
	return out, nil
}

// RecordFailure records a write the cluster refused, such as a conflict or
// a failure, in one transaction. p stays pending. When the decision is new,
// RecordFailure writes e, which resolves its intent. A decision is new when
// it was not pending before with the same rule, reason and version, so a
// failure is audited once per decision, not once per retry. Otherwise it
// only resolves the intent. It reports whether the decision was new.
func (d Ledger) RecordFailure(ctx context.Context, p *Pending, e *AuditEntry) (bool, error) {
	if e.Time.IsZero() {
		e.Time = d.Now()
	}
	var isNew bool
	err := d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		var err error
		if isNew, err = d.upsertPending(ctx, tx, p); err != nil {
			return err
		}
		if isNew {
			return d.insertAudit(ctx, tx, e)
		}
		return d.resolveIntent(ctx, tx, e.IntentID)
	})
	return isNew, err
}

// SettleIntent writes e, the audit row of an intent found open at start,
// which resolves the intent. With p, the decision stays pending: its
// outcome is unknown, and its controller decides again. Without p, what was
// pending about the target goes, as for any write carried out. It writes in
// one transaction.
func (d Ledger) SettleIntent(ctx context.Context, e *AuditEntry, p *Pending) error {
	if p == nil {
		return d.InsertAudits(ctx, []*AuditEntry{e})
	}
	return d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		if _, err := d.upsertPending(ctx, tx, p); err != nil {
			return err
		}
		return d.insertAudit(ctx, tx, e)
	})
}
