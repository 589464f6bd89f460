package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// The ownership graph as history shows it at a past time.

// GroupKind names a kind across its versions.
type GroupKind struct{ Group, Kind string }

// HistorySnapshot is the part of the ownership graph around some objects as
// history shows it at one time.
type HistorySnapshot struct {
	// Closure holds the UIDs reached from the seeds through the owners and
	// the dependents they had then, sorted; some may not have existed then.
	Closure []string
	// States holds the last history row at or before the time of every
	// object of Closure that existed then (not deleted by then), by UID.
	States []HistoryEntry
	// Truncated: the walk stopped at the limit.
	Truncated bool
	// Namespaced tells, for every discovered kind, whether it is
	// namespaced.
	Namespaced map[GroupKind]bool
}

// HistoryAt walks from uids up through their owners and down through their
// dependents as history shows them at time at, reaching at most about limit
// objects. A UID that history does not know (no row of its own, never
// named as an owner) gives an error matching ErrNotFound.
func (d History) HistoryAt(ctx context.Context, uids []string, at time.Time, limit int) (*HistorySnapshot, error) {
	snap := &HistorySnapshot{}
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		for _, uid := range uids {
			var known bool
			err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM object_history WHERE uid = ?1)
				OR EXISTS (SELECT 1 FROM history_owner_refs WHERE owner_uid = ?1)`, uid).Scan(&known)
			if err != nil {
				return err
			}
			if !known {
				return fmt.Errorf("uid %q: history knows no such object: %w", uid, ErrNotFound)
			}
		}
		w := &historyWalk{ctx: ctx, tx: tx, at: formatTime(&at), states: map[string]*HistoryEntry{},
			seen: map[string]bool{}, limit: limit}
		if err := w.walk(uids); err != nil {
			return err
		}
		snap.Truncated = w.truncated
		for uid := range w.seen {
			snap.Closure = append(snap.Closure, uid)
			if st := w.states[uid]; st != nil {
				snap.States = append(snap.States, *st)
			}
		}
		sort.Strings(snap.Closure)
		sort.Slice(snap.States, func(i, j int) bool { return snap.States[i].UID < snap.States[j].UID })
		kinds, err := namespacedKinds(ctx, tx)
		snap.Namespaced = map[GroupKind]bool{}
		for gk, ns := range kinds {
			snap.Namespaced[GroupKind{gk.group, gk.kind}] = ns
		}
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("history graph: %w", err)
	}
	return snap, nil
}

// historyWalk is one HistoryAt in progress.
type historyWalk struct {
	ctx   context.Context
	tx    *sql.Tx
	at    any
	limit int
	// states holds what was loaded: nil for a UID that did not exist at
	// the time.
	states    map[string]*HistoryEntry
	seen      map[string]bool
	truncated bool
}

// walk goes up from the seeds, then down from them, level by level, one
// query per level.
func (w *historyWalk) walk(seeds []string) error {
	for _, u := range seeds {
		w.seen[u] = true
	}
	frontier := seeds
	for len(frontier) > 0 && !w.full() {
		if err := w.load(frontier); err != nil {
			return err
		}
		var next []string
		for _, u := range frontier {
			if st := w.states[u]; st != nil {
				for _, r := range st.OwnerReferences {
					if !w.seen[r.UID] {
						w.seen[r.UID] = true
						next = append(next, r.UID)
					}
				}
			}
		}
		frontier = next
	}
	down := map[string]bool{}
	for _, u := range seeds {
		down[u] = true
	}
	frontier = seeds
	for len(frontier) > 0 && !w.full() {
		cands, err := w.candidates(frontier)
		if err != nil {
			return err
		}
		if err := w.load(cands); err != nil {
			return err
		}
		owners := map[string]bool{}
		for _, u := range frontier {
			owners[u] = true
		}
		var next []string
		for _, c := range cands {
			st := w.states[c]
			if st == nil || down[c] {
				continue
			}
			for _, r := range st.OwnerReferences {
				if owners[r.UID] {
					down[c], w.seen[c] = true, true
					next = append(next, c)
					break
				}
			}
		}
		frontier = next
	}
	return nil
}

func (w *historyWalk) full() bool {
	if len(w.seen) > w.limit {
		w.truncated = true
	}
	return w.truncated
}

// load reads the state at the time of each UID not loaded yet.
func (w *historyWalk) load(uids []string) error {
	var todo []string
	for _, u := range uids {
		if _, ok := w.states[u]; !ok {
			w.states[u] = nil
			todo = append(todo, u)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	rows, err := w.tx.QueryContext(w.ctx, `SELECT `+historyColumns+` FROM object_history WHERE id IN (
			SELECT (SELECT h.id FROM object_history h WHERE h.uid = k.value AND h.time <= ?2
				ORDER BY h.id DESC LIMIT 1)
			FROM json_each(?1) k)`, jsonOrNull(todo), w.at)
	if err != nil {
		return err
	}
	entries, err := scanHistory(rows)
	if err != nil {
		return err
	}
	for i := range entries {
		if e := &entries[i]; e.Event != api.HistoryDeleted {
			w.states[e.UID] = e
		}
	}
	return nil
}

// candidates returns the objects that ever named one of owners.
func (w *historyWalk) candidates(owners []string) ([]string, error) {
	rows, err := w.tx.QueryContext(w.ctx, `SELECT DISTINCT dependent_uid FROM history_owner_refs
		WHERE owner_uid IN (SELECT value FROM json_each(?)) ORDER BY 1`, jsonOrNull(owners))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
