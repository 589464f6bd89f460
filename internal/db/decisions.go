package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// DeletionMinute counts the deletions the controllers recorded in one
// minute. Applied counts those sent to the cluster, and DryRun those
// decided in dry-run.
type DeletionMinute struct {
	Minute  time.Time
	Applied int
	DryRun  int
}

// DeletionsPerMinute returns the deletions recorded since since, per minute
// that has any, oldest first. It groups in SQL over the audit_by_time index,
// so that a day of deletions is one row per minute, not per deletion.
func (d Decisions) DeletionsPerMinute(ctx context.Context, since time.Time) ([]DeletionMinute, error) {
	// time is "2006-01-02T15:04:05.000000Z", so its first 16 bytes name the
	// minute.
	rows, err := d.query(ctx, `SELECT substr(time, 1, 16), sum(dry_run = 0), sum(dry_run <> 0) FROM audit
		WHERE time >= ? AND action = 'delete' AND outcome IN (?, ?) AND controller NOT IN (?, ?)
		GROUP BY 1 ORDER BY 1`,
		formatTime(&since), api.OutcomeApplied, api.OutcomeDryRun,
		api.ControllerKubegcd, api.ControllerOperator)
	if err != nil {
		return nil, fmt.Errorf("deletions per minute: %w", err)
	}
	defer rows.Close()
	var out []DeletionMinute
	for rows.Next() {
		var m DeletionMinute
		var minute string
		if err := rows.Scan(&minute, &m.Applied, &m.DryRun); err != nil {
			return nil, fmt.Errorf("deletions per minute: %w", err)
		}
		if m.Minute, err = time.Parse("2006-01-02T15:04", minute); err != nil {
			return nil, fmt.Errorf("deletions per minute: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deletions per minute: %w", err)
	}
	return out, nil
}

// PendingByController counts the pending decisions of each controller that
// has any, from the pending table's primary key.
func (d Decisions) PendingByController(ctx context.Context) (map[api.Controller]int, error) {
	rows, err := d.query(ctx, `SELECT controller, count(*) FROM pending GROUP BY controller`)
	if err != nil {
		return nil, fmt.Errorf("pending by controller: %w", err)
	}
	defer rows.Close()
	out := map[api.Controller]int{}
	for rows.Next() {
		var c api.Controller
		var n int
		if err := rows.Scan(&c, &n); err != nil {
			return nil, fmt.Errorf("pending by controller: %w", err)
		}
		out[c] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending by controller: %w", err)
	}
	return out, nil
}

// AuditFilter selects audit entries. Zero fields match everything. Entries
// come newest first, and Before pages backwards from a cursor, an id.
type AuditFilter struct {
	Controller api.Controller
	Namespace  string
	UID        string
	// Kind keeps rows about objects of that kind, in any case, or of that
	// resource plural. Rule keeps those of that rule id, in any case.
	Kind    string
	Rule    string
	Outcome api.Outcome
	Since   time.Time
	Until   time.Time
	Before  int64
	Limit   int
}

// commonOutcomes are left out of the index audit_rare_outcomes, whose
// condition is rareOutcome (migration 0009).
var commonOutcomes = map[api.Outcome]bool{api.OutcomeApplied: true, api.OutcomeDryRun: true, api.OutcomeSkipped: true}

const rareOutcome = "outcome NOT IN ('applied', 'dry-run', 'skipped')"

// ListAudit returns entries matching f, newest first, and the cursor of the
// next page (0 when there is none).
func (d Decisions) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, int64, error) {
	where, args, err := d.auditWhere(ctx, f)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT id, time, instance, controller, rule, action, api_version, kind, namespace, name, uid, facts,
		reason, dry_run, outcome, error FROM audit`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, f.Limit+1)
	rows, err := d.query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	out, err := scanAudit(rows)
	if err != nil {
		return nil, 0, fmt.Errorf("audit: %w", err)
	}
	var next int64
	if len(out) > f.Limit {
		out = out[:f.Limit]
		next = out[len(out)-1].ID
	}
	return out, next, nil
}

// auditWhere returns the conditions of f and their arguments.
func (d Decisions) auditWhere(ctx context.Context, f AuditFilter) (where []string, args []any, err error) {
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if f.Controller != "" {
		add("controller = ?", f.Controller)
	}
	if f.Namespace != "" {
		add("namespace = ?", f.Namespace)
	}
	if f.UID != "" {
		add("uid = ?", f.UID)
	}
	if f.Kind != "" {
		cond, kinds, err := d.kindCondition(ctx, f.Kind)
		if err != nil {
			return nil, nil, err
		}
		where = append(where, cond)
		args = append(args, kinds...)
	}
	if f.Rule != "" {
		add("rule = ? COLLATE NOCASE", f.Rule)
	}
	if f.Outcome != "" {
		add("outcome = ?", f.Outcome)
		// A rare outcome's query states the partial index's condition,
		// which SQLite must see to use it. A common one's says that it
		// walks back through the history, so each has its own plan.
		if commonOutcomes[f.Outcome] {
			where = append(where, "NOT "+rareOutcome)
		} else {
			where = append(where, rareOutcome)
		}
	}
	if !f.Since.IsZero() {
		add("time >= ?", formatTime(&f.Since))
	}
	if !f.Until.IsZero() {
		add("time < ?", formatTime(&f.Until))
	}
	if f.Before > 0 {
		add("id < ?", f.Before)
	}
	return where, args, nil
}

// scanAudit reads and closes rows of audit entries.
func scanAudit(rows *sql.Rows) ([]AuditEntry, error) {
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var ts string
		var facts sql.NullString
		tgt := &e.Target
		if err := rows.Scan(&e.ID, &ts, &e.Instance, &e.Controller, &e.Rule, &e.Action, &tgt.APIVersion,
			&tgt.Kind, &tgt.Namespace, &tgt.Name, &tgt.UID, &facts, &e.Reason, &e.DryRun, &e.Outcome,
			&e.Error); err != nil {
			return nil, err
		}
		if t := parseTime(sql.NullString{String: ts, Valid: true}); t != nil {
			e.Time = *t
		}
		if facts.Valid {
			e.Facts = json.RawMessage(facts.String)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// PruneAudit deletes entries older than cutoff and returns how many. It
// keeps the newest pause or release, however old, because a manual hold
// lasts until an operator releases it, not until the retention runs out.
func (d Decisions) PruneAudit(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := d.inWriteTx(ctx, opAudit, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM audit WHERE time < ? AND id IS NOT (`+sqlLastHold+`)`,
			formatTime(&cutoff))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}

// PendingFilter selects pending decisions. Kind is a kind in any case or
// a resource plural, as AuditFilter.Kind.
type PendingFilter struct {
	Controller api.Controller
	Namespace  string
	Kind       string
	// Newest lists the newest decisions first. By default the decisions
	// waiting longest come first.
	Newest bool
	// After, when set, continues a listing in the same order after the
	// decision it names, which is the key ListPending returned with a page.
	After *PendingKey
	Limit int
}

// PendingKey is a pending decision's place in the listing: its since, then
// its primary key, so that decisions of the same since keep one order.
type PendingKey struct {
	Since      time.Time
	Controller api.Controller
	UID        string
	Action     api.Action
}

// ListPending returns pending decisions in since order, oldest first unless
// f.Newest, and the key to continue after, nil at the end. Pages are keyset
// ranges of pending_by_since, never an OFFSET. So a page costs the same
// however deep, and a decision that comes or goes between two pages moves
// no other one to a page already read.
func (d Decisions) ListPending(ctx context.Context, f PendingFilter) ([]Pending, *PendingKey, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"controller", string(f.Controller)}, {"namespace", f.Namespace}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if f.Kind != "" {
		cond, kinds, err := d.kindCondition(ctx, f.Kind)
		if err != nil {
			return nil, nil, fmt.Errorf("pending: %w", err)
		}
		where = append(where, cond)
		args = append(args, kinds...)
	}
	op, dir := ">", "ASC"
	if f.Newest {
		op, dir = "<", "DESC"
	}
	if k := f.After; k != nil {
		where = append(where, "(since, controller, uid, action) "+op+" (?, ?, ?, ?)")
		args = append(args, formatTime(&k.Since), k.Controller, k.UID, k.Action)
	}
	q := `SELECT ` + pendingColumns + ` FROM pending`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	q += fmt.Sprintf(" ORDER BY since %[1]s, controller %[1]s, uid %[1]s, action %[1]s LIMIT ?", dir)
	args = append(args, f.Limit+1)
	rows, err := d.query(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("pending: %w", err)
	}
	out, err := scanPending(rows)
	if err != nil {
		return nil, nil, fmt.Errorf("pending: %w", err)
	}
	out, next := page(out, f.Limit, func(p Pending) PendingKey { return p.key() })
	return out, next, nil
}

const pendingColumns = `controller, rule, action, reason, since, not_before, api_version, kind, namespace, name, uid,
	resource_version`

// scanPending reads and closes rows of pendingColumns.
func scanPending(rows *sql.Rows) ([]Pending, error) {
	defer rows.Close()
	out := []Pending{}
	for rows.Next() {
		var p Pending
		var since string
		var notBefore sql.NullString
		tgt := &p.Target
		if err := rows.Scan(&p.Controller, &p.Rule, &p.Action, &p.Reason, &since, &notBefore, &tgt.APIVersion,
			&tgt.Kind, &tgt.Namespace, &tgt.Name, &tgt.UID, &p.ResourceVersion); err != nil {
			return nil, err
		}
		if t := parseTime(sql.NullString{String: since, Valid: true}); t != nil {
			p.Since = *t
		}
		p.NotBefore = parseTime(notBefore)
		out = append(out, p)
	}
	return out, rows.Err()
}

// kindCondition matches the kind column against a kind in any case or a
// resource's plural, as StuckFilter.Kind does. Audit and pending rows keep
// the kind, not the resource, so kindCondition first resolves a plural to
// its kinds. One kind, the usual case, is one comparison, which
// audit_by_kind reads in id order.
func (d *core) kindCondition(ctx context.Context, kind string) (string, []any, error) {
	rows, err := d.query(ctx, `SELECT DISTINCT kind FROM resources
		WHERE kind = ?1 COLLATE NOCASE OR resource = lower(?1)`, kind)
	if err != nil {
		return "", nil, err
	}
	defer rows.Close()
	var kinds []any
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return "", nil, err
		}
		kinds = append(kinds, k)
	}
	if err := rows.Err(); err != nil {
		return "", nil, err
	}
	switch len(kinds) {
	case 0:
		// A kind no resource serves any longer still has its history.
		return "kind = ? COLLATE NOCASE", []any{kind}, nil
	case 1:
		return "kind = ? COLLATE NOCASE", kinds, nil
	}
	return "kind COLLATE NOCASE IN (?" + strings.Repeat(", ?", len(kinds)-1) + ")", kinds, nil
}

// page cuts rows read with LIMIT limit+1 to limit, and returns the key of
// the last row kept when there were more: the cursor of the next page.
func page[T, K any](rows []T, limit int, key func(T) K) ([]T, *K) {
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	next := key(rows[len(rows)-1])
	return rows, &next
}
