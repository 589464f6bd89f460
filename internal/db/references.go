package db

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// ReferenceRow is a reference an object makes by name, with its target as
// the mirror holds it.
type ReferenceRow struct {
	Ref
	// TargetUID is the target's UID when the mirror holds it; "" when it
	// does not, and for a prefix.
	TargetUID string
	// Exists: the mirror holds the target, or for a prefix one of the
	// names it starts.
	Exists bool
}

// ReferrerRow is an object that references a given one by name, and the
// field it does so through.
type ReferrerRow struct {
	Referrer api.Target
	Via      string
}

// ObjectReferences is what the mirror knows of the references around one
// object: those it makes, those made to it, and when it was last
// referenced.
type ObjectReferences struct {
	Refs          []ReferenceRow
	RefsTruncated bool
	// Referrers are by namespace, kind, name and field.
	Referrers          []ReferrerRow
	ReferrersTruncated bool
	// LastReferenced is when a reference to the object last appeared or
	// went (ref_history); nil when none ever did while kubegcd watched.
	LastReferenced *time.Time
}

// ReferencesAround returns, from one snapshot, up to limit references o
// makes, up to limit of the references made to it (a StatefulSet's claim
// prefix included) and when it was last referenced.
func (d Objects) ReferencesAround(ctx context.Context, o *Object, limit int) (*ObjectReferences, error) {
	out := &ObjectReferences{}
	group := apiGroup(o.APIVersion)
	prefix := ordinalPrefix(o.Name)
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		if out.Refs, out.RefsTruncated, err = referencesOf(ctx, tx, o.UID, limit); err != nil {
			return err
		}
		if out.Referrers, out.ReferrersTruncated, err = referrersOf(ctx, tx, group, o.Kind, o.Namespace, o.Name, prefix,
			limit); err != nil {
			return err
		}
		var last sql.NullString
		err = tx.QueryRowContext(ctx, `SELECT max(last_referenced) FROM ref_history
			WHERE target_kind = ?1 AND target_namespace = ?2 AND target_group = ?3
			  AND (target_name = ?4 AND prefix = 0 OR target_name = ?5 AND prefix = 1)`,
			o.Kind, o.Namespace, group, o.Name, prefix).Scan(&last)
		out.LastReferenced = parseTime(last)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("references of %s: %w", o.UID, err)
	}
	return out, nil
}

// apiGroup is the group of an apiVersion: "" for the core group.
func apiGroup(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// ordinalPrefix is what a StatefulSet's claim prefix would be for a claim
// named name, <template>-<set>-<ordinal>: name without its ordinal. It is
// "", which no reference names, when name does not end in -<digits>.
func ordinalPrefix(name string) string {
	p := strings.TrimRight(name, "0123456789")
	if len(p) == len(name) || !strings.HasSuffix(p, "-") {
		return ""
	}
	return p
}

// referencesOf reads the references uid makes, by field, kind and name, each
// with its target's UID when mirrored. A target's group is that of its
// apiVersion; a prefix exists when a name of it followed by digits does.
func referencesOf(ctx context.Context, tx *sql.Tx, uid string, limit int) ([]ReferenceRow, bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT r.target_group, r.target_kind, r.target_namespace, r.target_name, r.via,
			r.optional, r.prefix,
			CASE WHEN r.prefix THEN NULL ELSE (SELECT t.uid FROM objects t
				WHERE t.kind = r.target_kind AND t.namespace = r.target_namespace AND t.name = r.target_name
				  AND `+groupSQL("t.api_version")+` = r.target_group LIMIT 1) END,
			r.prefix AND EXISTS (SELECT 1 FROM objects t
				WHERE t.kind = r.target_kind AND t.namespace = r.target_namespace
				  AND t.name >= r.target_name || '0' AND t.name < r.target_name || ':'
				  AND substr(t.name, length(r.target_name) + 1) NOT GLOB '*[^0-9]*'
				  AND `+groupSQL("t.api_version")+` = r.target_group)
		FROM refs r WHERE r.referrer_uid = ?
		ORDER BY r.via, r.target_kind, r.target_namespace, r.target_name, r.target_group LIMIT ?`, uid, limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	out := []ReferenceRow{}
	for rows.Next() {
		var r ReferenceRow
		var target sql.NullString
		var prefixExists bool
		if err := rows.Scan(&r.Group, &r.Kind, &r.Namespace, &r.Name, &r.Via, &r.Optional, &r.Prefix, &target,
			&prefixExists); err != nil {
			return nil, false, err
		}
		r.TargetUID, r.Exists = target.String, target.Valid || prefixExists
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// referrersOf reads up to limit referrers of the object group/kind
// namespace/name, or of its claim prefix when prefix is not "". They are
// sorted by referrer UID, so the first limit are the same each time; they
// come back by namespace, kind, name and field.
func referrersOf(ctx context.Context, tx *sql.Tx, group, kind, namespace, name, prefix string,
	limit int) ([]ReferrerRow, bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT o.uid, o.api_version, o.kind, o.namespace, o.name, r.via
		FROM refs r JOIN objects o ON o.uid = r.referrer_uid
		WHERE r.target_kind = ?1 AND r.target_namespace = ?2 AND r.target_name IN (?3, ?4) AND r.target_group = ?5
		  AND r.prefix = (r.target_name = ?4)
		ORDER BY r.referrer_uid, r.via LIMIT ?6`, kind, namespace, name, prefix, group, limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	out := []ReferrerRow{}
	for rows.Next() {
		var r ReferrerRow
		t := &r.Referrer
		if err := rows.Scan(&t.UID, &t.APIVersion, &t.Kind, &t.Namespace, &t.Name, &r.Via); err != nil {
			return nil, false, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	truncated := len(out) > limit
	if truncated {
		out = out[:limit]
	}
	slices.SortFunc(out, func(a, b ReferrerRow) int {
		x, y := a.Referrer, b.Referrer
		return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Name, y.Name),
			cmp.Compare(x.UID, y.UID), cmp.Compare(a.Via, b.Via))
	})
	return out, truncated, nil
}

// TargetsOf returns the objects of uids the mirror holds, by UID: how a
// rule's matches, which are UIDs, are named.
func (d Objects) TargetsOf(ctx context.Context, uids []string) (map[string]api.Target, error) {
	out := make(map[string]api.Target, len(uids))
	if len(uids) == 0 {
		return out, nil
	}
	rows, err := d.query(ctx, `SELECT uid, api_version, kind, namespace, name FROM objects
		WHERE uid IN (SELECT value FROM json_each(?))`, jsonOrNull(uids))
	if err != nil {
		return nil, fmt.Errorf("objects by uid: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t api.Target
		if err := rows.Scan(&t.UID, &t.APIVersion, &t.Kind, &t.Namespace, &t.Name); err != nil {
			return nil, fmt.Errorf("objects by uid: %w", err)
		}
		out[t.UID] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("objects by uid: %w", err)
	}
	return out, nil
}
