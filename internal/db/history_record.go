package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// Write statements of the history, prepared once with the ingest ones.
const (
	sqlLastHistory = `SELECT event, owner_refs, finalizers, deletion_timestamp, NULL, NULL, NULL, NULL
		FROM object_history WHERE uid = ? ORDER BY id DESC LIMIT 1`
	// For a Lease, the holder and preferred holder are compared too. Its
	// last renewal is read, before this write replaces it, to tell whether
	// the Lease ran out in between.
	sqlLastHistoryLease = `SELECT h.event, h.owner_refs, h.finalizers, h.deletion_timestamp, h.holder, l.renew_time,
			l.lease_duration_seconds, h.preferred_holder
		FROM object_history h LEFT JOIN leases l ON l.uid = h.uid WHERE h.uid = ? ORDER BY h.id DESC LIMIT 1`
	// The same facts, from the mirror: the row the write then updates,
	// and the Lease's. A Lease without its typed row, or a row without
	// owners_hash, reads the history instead (mirrored 0).
	sqlMirroredFacts = `SELECT owners_hash IS NOT NULL, owners_hash, finalizers, deletion_timestamp, NULL, NULL,
			NULL, NULL
		FROM objects WHERE uid = ?`
	sqlMirroredFactsLease = `SELECT o.owners_hash IS NOT NULL AND l.uid IS NOT NULL, o.owners_hash, o.finalizers,
			o.deletion_timestamp, l.holder_identity, l.renew_time, l.lease_duration_seconds, l.preferred_holder
		FROM objects o LEFT JOIN leases l ON l.uid = o.uid WHERE o.uid = ?`
	sqlInsertHistory = `INSERT INTO object_history (uid, time, event, api_version, kind, namespace, name,
			owner_refs, finalizers, deletion_timestamp, holder, holder_since, lapsed_at, preferred_holder)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertHistoryOwner = `INSERT OR IGNORE INTO history_owner_refs (owner_uid, dependent_uid) VALUES (?, ?)`
	// sqlHistoryDeletedUID records an object's last state before the object
	// is deleted. The references and holders come from its last history
	// row, because the owner_refs and leases rows go with the object. The
	// rest comes from the mirror.
	sqlHistoryDeletedUID = `INSERT INTO object_history (uid, time, event, api_version, kind, namespace, name,
			owner_refs, finalizers, deletion_timestamp, holder, preferred_holder)
		SELECT o.uid, ?, 'deleted', o.api_version, o.kind, o.namespace, o.name, h.owner_refs, o.finalizers,
			o.deletion_timestamp, h.holder, h.preferred_holder
		FROM objects o LEFT JOIN object_history h ON h.id = (
			SELECT max(id) FROM object_history WHERE uid = o.uid)
		WHERE o.uid = ?`
	// sqlHistoryGone records the deletion of an object already deleted,
	// from what its DELETE returned.
	sqlHistoryGone = `INSERT INTO object_history (uid, time, event, api_version, kind, namespace, name, owner_refs,
			finalizers, deletion_timestamp, holder, preferred_holder)
		SELECT ?1, ?2, 'deleted', ?3, ?4, ?5, ?6, h.owner_refs, ?7, ?8, h.holder, h.preferred_holder
		FROM (SELECT 1) LEFT JOIN object_history h
			ON h.id = (SELECT max(id) FROM object_history WHERE uid = ?1)`
	// goneColumns are what a DELETE of objects returns for the history.
	goneColumns = `uid, api_version, kind, namespace, name, finalizers, deletion_timestamp`
)

// historyWriteQueries are prepared at Open, with writeQueries.
var historyWriteQueries = []string{sqlLastHistory, sqlLastHistoryLease, sqlMirroredFacts, sqlMirroredFactsLease,
	sqlInsertHistory, sqlInsertHistoryOwner, sqlHistoryDeletedUID, sqlHistoryGone}

// historyStatements are the history's part of a write transaction.
type historyStatements struct {
	last, lastLease, mirrored, mirroredLease, insert, insertOwner *sql.Stmt
	// now is when kubegcd saw the changes the transaction writes.
	now any
}

func (d *core) prepareHistory(ctx context.Context, tx *sql.Tx) (historyStatements, error) {
	h := historyStatements{now: formatTime(ptr(d.Now()))}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{{&h.last, sqlLastHistory}, {&h.lastLease, sqlLastHistoryLease}, {&h.mirrored, sqlMirroredFacts},
		{&h.mirroredLease, sqlMirroredFactsLease}, {&h.insert, sqlInsertHistory},
		{&h.insertOwner, sqlInsertHistoryOwner}} {
		st, err := d.txStmt(ctx, tx, p.sql)
		if err != nil {
			return h, err
		}
		*p.dst = st
	}
	return h, nil
}

// record writes a history row for each ownership fact of o that differs
// from its last state, and reports whether a fact the owner GC decides on
// changed: o is new to the mirror, or its references (refs, as jsonOrNull
// encodes them, and owners, their ownersHash), finalizers or deletion
// changed. It also reports whether o's references differ from those
// mirrored. The common update that changes none of them (a status, a
// label, a lease renewal) writes nothing.
//
// The last state comes from the mirror's row of o, which the write then
// updates: one indexed read, of a page the update needs anyway. An object
// the mirror does not hold, or holds without those facts, is compared
// with its last history row instead. Both hold the same facts: only this
// code writes either, in one transaction (see lastState). So an update
// that keeps its owners need not rewrite owner_refs.
//
// A watch event (fromWatch) follows the previous state kubegcd saw, with
// nothing in between. Only then is a Lease renewed after its duration taken
// for one that ran out: a list may come after a gap in what kubegcd saw.
func (h *historyStatements) record(ctx context.Context, o *Object, refs any, owners int64, finalizers any,
	fromWatch bool) (
	ownershipChanged, ownersChanged bool, err error) {
	deletion := formatTime(o.DeletionTimestamp)
	last, err := h.lastState(ctx, o)
	if err != nil {
		return false, false, fmt.Errorf("history of %s: %w", o.UID, err)
	}
	var events []api.HistoryEvent
	var lease leaseFacts
	if !last.alive {
		// New, or back after a relist or after its resource was dropped
		// too soon: a new life.
		events = []api.HistoryEvent{api.HistoryCreated}
	} else {
		// This code encoded every value compared, so equal facts are equal
		// text.
		if last.owners != owners {
			events = append(events, api.HistoryOwnersChanged)
		}
		if !sameText(last.finalizers, finalizers) {
			events = append(events, api.HistoryFinalizersChanged)
		}
		if !sameText(last.deletion, deletion) {
			events = append(events, api.HistoryDeletionRequested)
		}
		if o.Lease != nil {
			lease = leaseChange(o.Lease, last.holder.String, parseTime(last.renew), last.duration, fromWatch)
			if lease.changed {
				events = append(events, api.HistoryHolderChanged)
			}
			// A row written before the column existed has no value in it,
			// which counts as none.
			if o.Lease.preferredHolder() != last.preferred.String {
				events = append(events, api.HistoryPreferredHolderChanged)
			}
		}
	}
	return h.write(ctx, o, refs, finalizers, deletion, events, lease)
}

// lastState is what record compares a write of an object with.
type lastState struct {
	// alive: the object is mirrored, or its last history row is not its
	// deletion. Otherwise a write of it starts a new life.
	alive bool
	// owners is ownersHash of the owner references.
	owners                                         int64
	finalizers, deletion, holder, renew, preferred sql.NullString
	duration                                       sql.NullInt64
}

// lastState reads the last state of o: from its mirrored row when it has
// one with the facts, else from its last history row. The mirrored row
// and the last history row agree. A write of the objects row records each
// fact that changed in the history in the same transaction. A Lease's row
// is written with it, and its holder is the last row's. Its renewal is
// the last one mirrored, which the history row does not hold.
func (h *historyStatements) lastState(ctx context.Context, o *Object) (lastState, error) {
	var l lastState
	var mirrored bool
	var owners sql.NullInt64
	query := h.mirrored
	if o.Lease != nil {
		query = h.mirroredLease
	}
	err := query.QueryRowContext(ctx, o.UID).Scan(&mirrored, &owners, &l.finalizers, &l.deletion, &l.holder,
		&l.renew, &l.duration, &l.preferred)
	switch {
	case err == nil && mirrored:
		l.alive, l.owners = true, owners.Int64
		return l, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return l, err
	}
	query = h.last
	if o.Lease != nil {
		query = h.lastLease
	}
	var event api.HistoryEvent
	var refs sql.NullString
	switch err := query.QueryRowContext(ctx, o.UID).Scan(&event, &refs, &l.finalizers, &l.deletion, &l.holder,
		&l.renew, &l.duration, &l.preferred); {
	case errors.Is(err, sql.ErrNoRows):
		return lastState{}, nil
	case err != nil:
		return l, err
	}
	// NULL, no owners, hashes as nil does.
	l.alive, l.owners = event != api.HistoryDeleted, ownersHash(refs.String)
	return l, nil
}

// ownersHash is the objects row's owners_hash of refs, owner references as
// jsonOrNull encodes them: nil, or the text of a JSON array, never empty.
func ownersHash(refs any) int64 {
	s, _ := refs.(string)
	return int64(*newHash().str(s))
}

// recordNew writes the history of an object new to the mirror, whose UID
// the objects table did not hold: its "created" row. It is what record
// writes for such an object, without the read. The last row of an object
// the mirror does not hold is its "deleted" row, or there is none.
func (h *historyStatements) recordNew(ctx context.Context, o *Object, refs, finalizers any) error {
	_, _, err := h.write(ctx, o, refs, finalizers, formatTime(o.DeletionTimestamp),
		[]api.HistoryEvent{api.HistoryCreated}, leaseFacts{})
	return err
}

// write writes the history rows of events, the changes record found.
func (h *historyStatements) write(ctx context.Context, o *Object, refs, finalizers, deletion any,
	events []api.HistoryEvent, lease leaseFacts) (ownershipChanged, ownersChanged bool, err error) {
	if o.Lease != nil && len(events) > 0 && events[0] == api.HistoryCreated {
		lease = leaseFacts{holder: o.Lease.holder(), since: o.Lease.since()}
	}
	for _, ev := range events {
		var holder, since, lapsed, preferred any
		if o.Lease != nil {
			holder, preferred = o.Lease.holder(), o.Lease.preferredHolder()
			if ev == api.HistoryCreated || ev == api.HistoryHolderChanged {
				since, lapsed = formatTime(lease.since), formatTime(lease.lapsed)
			}
		}
		if _, err := h.insert.ExecContext(ctx, o.UID, h.now, ev, o.APIVersion, o.Kind, o.Namespace, o.Name,
			refs, finalizers, deletion, holder, since, lapsed, preferred); err != nil {
			return false, false, fmt.Errorf("history of %s: %w", o.UID, err)
		}
	}
	ownersChanged = len(events) > 0 && (events[0] == api.HistoryCreated || events[0] == api.HistoryOwnersChanged)
	if ownersChanged {
		for _, r := range o.OwnerReferences {
			if _, err := h.insertOwner.ExecContext(ctx, r.UID, o.UID); err != nil {
				return false, false, fmt.Errorf("history of %s: %w", o.UID, err)
			}
		}
	}
	for _, ev := range events {
		leaseOnly := ev == api.HistoryHolderChanged || ev == api.HistoryPreferredHolderChanged
		ownershipChanged = ownershipChanged || !leaseOnly
	}
	return ownershipChanged, ownersChanged, nil
}

// goneObject is an object deleted from the mirror, as its DELETE returned it.
type goneObject struct {
	uid, apiVersion, kind, namespace, name string
	finalizers, deletionTimestamp          sql.NullString
}

// scanGone reads and closes rows of goneColumns.
func scanGone(rows *sql.Rows) ([]goneObject, error) {
	defer rows.Close()
	var out []goneObject
	for rows.Next() {
		var g goneObject
		if err := rows.Scan(&g.uid, &g.apiVersion, &g.kind, &g.namespace, &g.name, &g.finalizers,
			&g.deletionTimestamp); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// recordGone writes the deleted row of each object gone.
func (d *core) recordGone(ctx context.Context, tx *sql.Tx, gone []goneObject) error {
	if len(gone) == 0 {
		return nil
	}
	st, err := d.txStmt(ctx, tx, sqlHistoryGone)
	if err != nil {
		return err
	}
	now := formatTime(ptr(d.Now()))
	for _, g := range gone {
		if _, err := st.ExecContext(ctx, g.uid, now, g.apiVersion, g.kind, g.namespace, g.name, g.finalizers,
			g.deletionTimestamp); err != nil {
			return fmt.Errorf("history of %s: %w", g.uid, err)
		}
	}
	return nil
}

// leaseFacts is what a Lease's write says of its holder.
type leaseFacts struct {
	changed bool
	holder  string
	since   *time.Time
	lapsed  *time.Time
}

func (l *Lease) holder() string {
	if l.HolderIdentity == nil {
		return ""
	}
	return *l.HolderIdentity
}

func (l *Lease) preferredHolder() string {
	if l.PreferredHolder == nil {
		return ""
	}
	return *l.PreferredHolder
}

// since is when the Lease's present holder took it. For a Lease without a
// holder, it is when the last holder let it go, as a release writes
// renewTime.
func (l *Lease) since() *time.Time {
	if l.holder() == "" || l.AcquireTime == nil {
		return l.RenewTime
	}
	return l.AcquireTime
}

// leaseChange compares a Lease's new spec with the holder of its last row
// and with the renewal the mirror has. It tells whether the holder changed,
// and, for a watch event, whether the holder renewed the Lease only after
// it had run out.
func leaseChange(l *Lease, lastHolder string, lastRenew *time.Time, lastDuration sql.NullInt64,
	fromWatch bool) leaseFacts {
	f := leaseFacts{holder: l.holder()}
	var ranOut *time.Time
	if fromWatch && lastRenew != nil && lastDuration.Valid {
		ranOut = ptr(lastRenew.Add(time.Duration(lastDuration.Int64) * time.Second))
	}
	switch {
	case f.holder != lastHolder:
		f.changed = true
		f.since = l.since()
	case f.holder != "" && ranOut != nil && l.RenewTime != nil && l.RenewTime.After(*ranOut):
		f.changed = true
		f.since = l.RenewTime
	default:
		return f
	}
	if ranOut != nil && lastHolder != "" && f.since != nil && f.since.After(*ranOut) {
		f.lapsed = ranOut
	}
	return f
}

// sameText compares a stored nullable text with a value that jsonOrNull or
// formatTime made: nil or a string.
func sameText(stored sql.NullString, v any) bool {
	s, ok := v.(string)
	return stored.Valid == ok && stored.String == s
}
