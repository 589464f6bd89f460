package db

import (
	"context"
	"fmt"
)

// sqlLintObject reads one object's ownerReferences through the primary keys
// of objects and owner_refs, for /objects/{uid}.
var sqlLintObject = sqlLintRefs(`objects d CROSS JOIN owner_refs r ON r.dependent_uid = d.uid AND d.uid = ?1`, `r.position`, true)

// LintRefsOf is LintRefs for the ownerReferences of the object with uid.
func (d Objects) LintRefsOf(ctx context.Context, uid string, fn func(*LintRef) error) error {
	if err := d.lintRefs(ctx, sqlLintObject, []any{uid}, fn); err != nil {
		return fmt.Errorf("lint of %s: %w", uid, err)
	}
	return nil
}

// RecentHistoryOf returns the last n entries of the history of the object
// with uid, oldest first, and whether there are older ones. It reads them
// backwards through object_history_by_uid: a long history costs no more.
func (d History) RecentHistoryOf(ctx context.Context, uid string, n int) ([]HistoryEntry, bool, error) {
	rows, err := d.query(ctx, `SELECT * FROM (
		SELECT `+historyColumns+` FROM object_history WHERE uid = ? ORDER BY id DESC LIMIT ?) ORDER BY id`, uid, n+1)
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
