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

// opRuleMatches writes a rule's matches.
var opRuleMatches = writeOp{name: "rules"}

// StoredMatch is what a rule matches now, as its passes left it.
type StoredMatch struct {
	RuleID string
	Target api.Target
	Reason string
	// Finding marks a row shown with the matches but never acted on.
	Finding bool
	// Since is the first pass of the run of passes that matched it
	// without a break; Passes counts them.
	Since  time.Time
	Passes int
}

// ReplaceRuleMatches records a pass of the rule ruleID at at: a match
// already held keeps its since and counts one more pass; a new one starts
// at at; one the pass no longer returned is deleted. A UID the mirror no
// longer holds is left out. Each match keeps the resourceVersion the
// mirror holds now, which a rule that deletes checks live. A match whose
// object changed since the last pass starts again at at, with one pass
// and no notice: a rule acts only on what held still for its passes.
func (d Rules) ReplaceRuleMatches(ctx context.Context, ruleID string, matches []RuleMatch, at time.Time) error {
	return d.inWriteTx(ctx, opRuleMatches, func(tx *sql.Tx) error {
		held := map[string]bool{}
		hold := func(uid string) { held[uid] = true }
		err := eachString(ctx, tx, `SELECT uid FROM rule_matches WHERE rule_id = ?`, hold, ruleID)
		if err != nil {
			return err
		}
		// A match whose object changed since the last pass starts again:
		// its passes, its since and its notice.
		update, err := tx.PrepareContext(ctx, `UPDATE rule_matches AS m SET reason = ?1, finding = ?2,
			passes = CASE WHEN o.resource_version = m.resource_version THEN m.passes + 1 ELSE 1 END,
			since = CASE WHEN o.resource_version = m.resource_version THEN m.since ELSE ?5 END,
			notified_at = CASE WHEN o.resource_version = m.resource_version THEN m.notified_at END,
			resource_version = o.resource_version
			FROM objects AS o WHERE o.uid = m.uid AND m.rule_id = ?3 AND m.uid = ?4`)
		if err != nil {
			return err
		}
		defer update.Close()
		insert, err := tx.PrepareContext(ctx, `INSERT INTO rule_matches
			(rule_id, uid, reason, finding, since, passes, resource_version)
			SELECT ?1, ?2, ?3, ?4, ?5, 1, resource_version FROM objects WHERE uid = ?2`)
		if err != nil {
			return err
		}
		defer insert.Close()
		since := formatTime(&at)
		done := make(map[string]bool, len(matches))
		for _, m := range matches {
			if done[m.UID] {
				continue
			}
			done[m.UID] = true
			if held[m.UID] {
				delete(held, m.UID)
				_, err = update.ExecContext(ctx, m.Reason, m.Finding, ruleID, m.UID, since)
			} else {
				_, err = insert.ExecContext(ctx, ruleID, m.UID, m.Reason, m.Finding, since)
			}
			if err != nil {
				return err
			}
		}
		if len(held) == 0 {
			return nil
		}
		gone := make([]string, 0, len(held))
		for uid := range held {
			gone = append(gone, uid)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM rule_matches WHERE rule_id = ? AND uid IN (SELECT value FROM json_each(?))`,
			ruleID, jsonOrNull(gone))
		return err
	})
}

// KeepRuleMatches deletes the matches of every rule whose id is not in
// ids: rules that are no longer loaded.
func (d Rules) KeepRuleMatches(ctx context.Context, ids []string) error {
	if ids == nil {
		ids = []string{}
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return d.inWriteTx(ctx, opRuleMatches, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM rule_matches
			WHERE rule_id NOT IN (SELECT value FROM json_each(?))`, string(b))
		return err
	})
}

// RuleMatchFilter selects stored matches.
type RuleMatchFilter struct {
	// RuleID keeps one rule's matches; "" keeps every rule's.
	RuleID    string
	Namespace string
	// Kind is a kind in any case or a resource plural, as AuditFilter.Kind.
	Kind string
	// After continues a listing after the match it names: the key
	// ListRuleMatches returned with a page.
	After *RuleMatchKey
	// Limit bounds a page (default 100).
	Limit int
}

// RuleMatchKey is a match's place in the listing: by rule, then UID.
type RuleMatchKey struct {
	RuleID string
	UID    string
}

const ruleMatchColumns = `m.rule_id, m.reason, m.finding, m.since, m.passes,
	o.api_version, o.kind, o.namespace, o.name, o.uid`

// ListRuleMatches returns the matches f selects, ordered by rule and UID,
// and the key to continue after (nil at the end). Pages are keyset
// ranges of the table's primary key, as ListPending's are.
func (d Rules) ListRuleMatches(ctx context.Context, f RuleMatchFilter) ([]StoredMatch, *RuleMatchKey, error) {
	var where []string
	var args []any
	if f.RuleID != "" {
		where = append(where, "m.rule_id = ?")
		args = append(args, f.RuleID)
	}
	if f.Namespace != "" {
		where = append(where, "o.namespace = ?")
		args = append(args, f.Namespace)
	}
	if f.Kind != "" {
		cond, kinds, err := d.kindCondition(ctx, f.Kind)
		if err != nil {
			return nil, nil, fmt.Errorf("rule matches: %w", err)
		}
		where = append(where, "o."+cond)
		args = append(args, kinds...)
	}
	if k := f.After; k != nil {
		where = append(where, "(m.rule_id, m.uid) > (?, ?)")
		args = append(args, k.RuleID, k.UID)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT ` + ruleMatchColumns + ` FROM rule_matches m JOIN objects o ON o.uid = m.uid`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY m.rule_id, m.uid LIMIT ?"
	args = append(args, f.Limit+1)
	rows, err := d.query(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("rule matches: %w", err)
	}
	out, err := scanRuleMatches(rows)
	if err != nil {
		return nil, nil, fmt.Errorf("rule matches: %w", err)
	}
	out, next := page(out, f.Limit, func(m StoredMatch) RuleMatchKey {
		return RuleMatchKey{RuleID: m.RuleID, UID: m.Target.UID}
	})
	return out, next, nil
}

// MatchesOf returns the rules that match the object uid now, by rule id.
func (d Rules) MatchesOf(ctx context.Context, uid string) ([]StoredMatch, error) {
	rows, err := d.query(ctx, `SELECT `+ruleMatchColumns+` FROM rule_matches m JOIN objects o ON o.uid = m.uid
		WHERE m.uid = ? ORDER BY m.rule_id`, uid)
	if err != nil {
		return nil, fmt.Errorf("rule matches: %w", err)
	}
	out, err := scanRuleMatches(rows)
	if err != nil {
		return nil, fmt.Errorf("rule matches: %w", err)
	}
	return out, nil
}

// scanRuleMatches reads and closes rows of ruleMatchColumns.
func scanRuleMatches(rows *sql.Rows) ([]StoredMatch, error) {
	defer rows.Close()
	out := []StoredMatch{}
	for rows.Next() {
		var m StoredMatch
		var since string
		if err := rows.Scan(&m.RuleID, &m.Reason, &m.Finding, &since, &m.Passes, &m.Target.APIVersion, &m.Target.Kind,
			&m.Target.Namespace, &m.Target.Name, &m.Target.UID); err != nil {
			return nil, err
		}
		if t := parseTime(sql.NullString{String: since, Valid: true}); t != nil {
			m.Since = *t
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// RuleMatchCount is how many rows a rule holds: matches, and findings
// apart.
type RuleMatchCount struct {
	Matches, Findings int
}

// CountRuleMatches counts the stored rows of each rule, or of ruleID
// alone when it is not "".
func (d Rules) CountRuleMatches(ctx context.Context, ruleID string) (map[string]RuleMatchCount, error) {
	q := `SELECT rule_id, count(*) - total(finding), total(finding) FROM rule_matches`
	var args []any
	if ruleID != "" {
		q += ` WHERE rule_id = ?`
		args = append(args, ruleID)
	}
	rows, err := d.query(ctx, q+` GROUP BY rule_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("counting rule matches: %w", err)
	}
	defer rows.Close()
	out := map[string]RuleMatchCount{}
	for rows.Next() {
		var id string
		var c RuleMatchCount
		if err := rows.Scan(&id, &c.Matches, &c.Findings); err != nil {
			return nil, fmt.Errorf("counting rule matches: %w", err)
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counting rule matches: %w", err)
	}
	return out, nil
}
