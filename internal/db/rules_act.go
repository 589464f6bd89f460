package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// ActMatch is a stored match as a rule that deletes reads it: the match,
// the resource that serves its object, the resourceVersion the mirror held
// at the match's last pass, and when its notice went out.
type ActMatch struct {
	StoredMatch
	// Group, Version and Resource name the API resource of the object.
	Group, Version, Resource string
	Namespaced               bool
	// ResourceVersion is the object's at the last pass that matched it.
	ResourceVersion string
	// NotifiedAt is when the notice Event about this match went out; nil
	// when none has.
	NotifiedAt *time.Time
}

// ActMatches returns the matches of the rule ruleID that it may act on:
// every stored row but the findings, oldest match first.
func (d Rules) ActMatches(ctx context.Context, ruleID string) ([]ActMatch, error) {
	rows, err := d.query(ctx, `SELECT `+ruleMatchColumns+`, r.api_group, r.version, r.resource, r.namespaced,
			m.resource_version, m.notified_at
		FROM rule_matches m JOIN objects o ON o.uid = m.uid JOIN resources r ON r.id = o.resource_id
		WHERE m.rule_id = ? AND m.finding = 0 ORDER BY m.since, m.uid`, ruleID)
	if err != nil {
		return nil, fmt.Errorf("rule matches: %w", err)
	}
	defer rows.Close()
	var out []ActMatch
	for rows.Next() {
		var m ActMatch
		var since string
		var notified sql.NullString
		if err := rows.Scan(&m.RuleID, &m.Reason, &m.Finding, &since, &m.Passes, &m.Target.APIVersion,
			&m.Target.Kind, &m.Target.Namespace, &m.Target.Name, &m.Target.UID, &m.Group, &m.Version, &m.Resource,
			&m.Namespaced, &m.ResourceVersion, &notified); err != nil {
			return nil, fmt.Errorf("rule matches: %w", err)
		}
		if t := parseTime(sql.NullString{String: since, Valid: true}); t != nil {
			m.Since = *t
		}
		m.NotifiedAt = parseTime(notified)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rule matches: %w", err)
	}
	return out, nil
}

// MarkNotified records that the notice about the rule's match of uid went
// out at at. The mark goes with the match: a match that breaks and comes
// back is noticed again.
func (d Rules) MarkNotified(ctx context.Context, ruleID, uid string, at time.Time) error {
	return d.inWriteTx(ctx, opRuleMatches, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE rule_matches SET notified_at = ? WHERE rule_id = ? AND uid = ?`,
			formatTime(&at), ruleID, uid)
		return err
	})
}

// ReferencedSince reports whether something refers to t now through a
// reference that appeared after since: the object gained a referrer after
// a pass matched it as unreferenced. A StatefulSet's claim template refers
// to every claim its name prefixes.
func (d Rules) ReferencedSince(ctx context.Context, t api.Target, since time.Time) (bool, error) {
	group, _, _ := strings.Cut(t.APIVersion, "/")
	if !strings.Contains(t.APIVersion, "/") {
		group = ""
	}
	var found int
	err := d.queryRow(ctx, `SELECT count(*) FROM ref_history h
		WHERE h.target_kind = ?1 AND h.target_namespace = ?2 AND h.target_group = ?3 AND h.last_referenced > ?5
		  AND (h.target_name = ?4 AND h.prefix = 0
		       OR h.prefix = 1 AND substr(?4, 1, length(h.target_name) + 1) = h.target_name || '-')
		  AND EXISTS (SELECT 1 FROM refs r WHERE r.target_kind = h.target_kind AND r.target_namespace = h.target_namespace
		      AND r.target_name = h.target_name AND r.target_group = h.target_group AND r.prefix = h.prefix)`,
		t.Kind, t.Namespace, group, t.Name, formatTime(&since)).Scan(&found)
	if err != nil {
		return false, fmt.Errorf("references of %s: %w", t, err)
	}
	return found > 0, nil
}

// CountObjectsOfKinds counts the mirrored objects of the kinds given, each
// an apiVersion and a kind: what a rule looked at, for its max_percent.
func (d Rules) CountObjectsOfKinds(ctx context.Context, kinds [][2]string) (int, error) {
	if len(kinds) == 0 {
		return 0, nil
	}
	var cond []string
	var args []any
	for _, k := range kinds {
		cond = append(cond, "(api_version = ? AND kind = ?)")
		args = append(args, k[0], k[1])
	}
	var n int
	if err := d.queryRow(ctx, `SELECT count(*) FROM objects WHERE `+strings.Join(cond, " OR "), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting objects: %w", err)
	}
	return n, nil
}

// MatchedUIDs returns the UIDs that any of the rules ruleIDs matches now,
// findings left out.
func (d Rules) MatchedUIDs(ctx context.Context, ruleIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ruleIDs) == 0 {
		return out, nil
	}
	err := eachString(ctx, d.read, `SELECT DISTINCT uid FROM rule_matches
		WHERE finding = 0 AND rule_id IN (SELECT value FROM json_each(?))`,
		func(uid string) { out[uid] = true }, jsonOrNull(ruleIDs))
	if err != nil {
		return nil, fmt.Errorf("rule matches: %w", err)
	}
	return out, nil
}
