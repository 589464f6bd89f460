package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// HistoryEntry is one change in an object's lifecycle, with the object's
// ownership state after it.
type HistoryEntry struct {
	ID                int64
	UID               string
	Time              time.Time
	Event             api.HistoryEvent
	APIVersion        string
	Kind              string
	Namespace         string
	Name              string
	OwnerReferences   []api.OwnerRef
	Finalizers        []string
	DeletionTimestamp *time.Time
	// Leases only; see the migration's comments.
	Holder      *string
	HolderSince *time.Time
	LapsedAt    *time.Time
	// PreferredHolder is a Lease's spec.preferredHolder, "" when it has
	// none. It is nil on rows written before kubegcd recorded it.
	PreferredHolder *string
}

// HistoryOf returns the history of the object with uid, oldest first. The
// list is empty when the history knows nothing of the object.
func (d History) HistoryOf(ctx context.Context, uid string) ([]HistoryEntry, error) {
	rows, err := d.query(ctx, `SELECT `+historyColumns+` FROM object_history WHERE uid = ? ORDER BY id`, uid)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", uid, err)
	}
	out, err := scanHistory(rows)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", uid, err)
	}
	return out, nil
}

const historyColumns = `id, uid, time, event, api_version, kind, namespace, name, owner_refs, finalizers,
	deletion_timestamp, holder, holder_since, lapsed_at, preferred_holder`

// scanHistory reads and closes rows of historyColumns.
func scanHistory(rows *sql.Rows) ([]HistoryEntry, error) {
	defer rows.Close()
	out := []HistoryEntry{}
	for rows.Next() {
		var e HistoryEntry
		var ts string
		var refs, finalizers, deletion, holder, since, lapsed, preferred sql.NullString
		if err := rows.Scan(&e.ID, &e.UID, &ts, &e.Event, &e.APIVersion, &e.Kind, &e.Namespace, &e.Name, &refs,
			&finalizers, &deletion, &holder, &since, &lapsed, &preferred); err != nil {
			return nil, err
		}
		if holder.Valid {
			e.Holder = &holder.String
		}
		if preferred.Valid {
			e.PreferredHolder = &preferred.String
		}
		e.HolderSince, e.LapsedAt = parseTime(since), parseTime(lapsed)
		if t := parseTime(sql.NullString{String: ts, Valid: true}); t != nil {
			e.Time = *t
		}
		e.DeletionTimestamp = parseTime(deletion)
		if refs.Valid {
			if err := json.Unmarshal([]byte(refs.String), &e.OwnerReferences); err != nil {
				return nil, fmt.Errorf("history row %d: owner references: %w", e.ID, err)
			}
		}
		var err error
		if e.Finalizers, err = decodeFinalizers(finalizers); err != nil {
			return nil, fmt.Errorf("history row %d: %w", e.ID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// PruneHistory deletes history older than cutoff and returns how many rows
// went. An object's last row before cutoff stays, unless it records the
// object's deletion. That row is the object's state at cutoff: the next
// change is compared with it, and HistoryAt reads it for any later time. An
// object deleted before cutoff goes entirely.
func (d History) PruneHistory(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := d.inWriteTx(ctx, opHistory, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM object_history WHERE time < ?1 AND (event = 'deleted'
			OR EXISTS (SELECT 1 FROM object_history n
				WHERE n.uid = object_history.uid AND n.id > object_history.id AND n.time < ?1))`,
			formatTime(&cutoff))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM history_owner_refs WHERE NOT EXISTS
			(SELECT 1 FROM object_history h WHERE h.uid = history_owner_refs.dependent_uid)`)
		return err
	})
	return n, err
}

// LeaseHolderHistory returns, for each Lease uid, its rows that name a
// holder (created and holder-changed), oldest first.
func (d History) LeaseHolderHistory(ctx context.Context, uids []string) (map[string][]HistoryEntry, error) {
	return d.historiesOf(ctx, "lease history", uids, ` AND event IN ('created', 'holder-changed')`)
}

// HistoriesOf returns the whole history of each object of uids, oldest
// first, in one query. An object the history knows nothing of has no entry.
func (d History) HistoriesOf(ctx context.Context, uids []string) (map[string][]HistoryEntry, error) {
	return d.historiesOf(ctx, "histories", uids, "")
}

// historiesOf reads the history rows of uids, by uid. where is an SQL
// condition the rows must also meet, after the uid's, or "". what names the
// read in errors.
func (d History) historiesOf(ctx context.Context, what string, uids []string, where string) (
	map[string][]HistoryEntry, error) {
	out := map[string][]HistoryEntry{}
	if len(uids) == 0 {
		return out, nil
	}
	rows, err := d.query(ctx, `SELECT `+historyColumns+` FROM object_history
		WHERE uid IN (SELECT value FROM json_each(?))`+where+` ORDER BY uid, id`, jsonOrNull(uids))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	entries, err := scanHistory(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	for _, e := range entries {
		out[e.UID] = append(out[e.UID], e)
	}
	return out, nil
}

// RecentHistoryOf returns the last n entries of the history of the object
// with uid, oldest first, and whether there are older ones. It reads them
// backwards through object_history_by_uid, so a long history costs no more.
func (d History) RecentHistoryOf(ctx context.Context, uid string, n int) ([]HistoryEntry, bool, error) {
	rows, err := d.query(ctx, `SELECT * FROM (
		SELECT `+historyColumns+` FROM object_history WHERE uid = ? ORDER BY id DESC LIMIT ?)
		ORDER BY id`, uid, n+1)
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", uid, err)
	}
	out, err := scanHistory(rows)
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", uid, err)
	}
	if len(out) > n {
		return out[1:], true, nil
	}
	return out, false, nil
}
