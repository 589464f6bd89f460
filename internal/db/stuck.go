package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// StuckFilter selects objects being deleted, for /stuck.
type StuckFilter struct {
	// Namespace keeps the objects in that namespace and the Namespace of
	// that name: "why is my namespace stuck" wants both.
	Namespace string
	// Kind keeps objects of that kind (any case) or resource plural.
	Kind string
	// UID keeps only the object with that UID: /objects/{uid} explains it.
	UID string
	// RequestedBefore keeps deletions requested at or before it. Zero keeps
	// every one.
	RequestedBefore time.Time
	// Limit bounds Objects; 0 means 500.
	Limit int
	// ContentLimit bounds the objects named per namespace; 0 means 20.
	ContentLimit int
	// DependentLimit bounds the blocking dependents kept per owner; 0
	// means 20.
	DependentLimit int
	// Depth bounds how far chains of blocking dependents are followed; 0
	// means 5.
	Depth int
}

// StuckData is what the mirror holds about objects that are being deleted
// and still exist, read in one snapshot.
type StuckData struct {
	// Objects are the deletions f selects, oldest request first.
	Objects []*Object
	// Truncated: more matched than f.Limit.
	Truncated bool
	// Blocking maps the UID of an owner deleting in the foreground to its
	// dependents with blockOwnerDeletion: true, at most f.DependentLimit
	// each. The owners are among Objects, the named namespace content and,
	// down to f.Depth, these dependents themselves. MoreBlocking counts the
	// dependents left out.
	Blocking     map[string][]*Object
	MoreBlocking map[string]int
	// Orphaning maps the UID of an owner being deleted with the orphan
	// finalizer to the dependents that still name it, at most
	// f.DependentLimit each. The owners are among Objects and the named
	// namespace content. MoreOrphaning counts the dependents left out.
	Orphaning     map[string][]*Object
	MoreOrphaning map[string]int
	// Content holds what is left in each Namespace among Objects.
	Content map[string]*NamespaceContent
}

// NamespaceContent is what is left in a namespace.
type NamespaceContent struct {
	// Objects are the first f.ContentLimit left, those being deleted first,
	// then by kind and name.
	Objects []*Object
	// ByKind counts every object left by "Kind" (core) or "Kind.group".
	ByKind map[string]int
	Total  int
}

// requestedSeconds is an object's DeletionRequested as Unix seconds in SQL.
const requestedSeconds = `(unixepoch(o.deletion_timestamp, 'subsec') - coalesce(o.deletion_grace_period_seconds, 0))`

// stuckColumns are objectColumns plus a pod's and a namespace's typed
// columns, NULL for other kinds. The node of a terminating pod says who
// must finish it. A namespace's spec finalizers and conditions say what
// holds it.
const stuckColumns = objectColumns + `, p.phase, p.reason, p.node_name, p.generation,
	n.phase, n.spec_finalizers, n.conditions`

// stuckJoins bring in stuckColumns' typed columns.
const stuckJoins = `LEFT JOIN pods p ON p.uid = o.uid LEFT JOIN namespaces n ON n.uid = o.uid`

// Stuck reads the deletions f selects, the chains of dependents that hold
// the foreground ones, and what is left in the namespaces among them.
func (d Objects) Stuck(ctx context.Context, f StuckFilter) (*StuckData, error) {
	if f.Limit <= 0 {
		f.Limit = 500
	}
	if f.ContentLimit <= 0 {
		f.ContentLimit = 20
	}
	if f.DependentLimit <= 0 {
		f.DependentLimit = 20
	}
	if f.Depth <= 0 {
		f.Depth = 5
	}
	out := &StuckData{Blocking: map[string][]*Object{}, MoreBlocking: map[string]int{},
		Orphaning: map[string][]*Object{}, MoreOrphaning: map[string]int{},
		Content: map[string]*NamespaceContent{}}
	err := d.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		if out.Objects, out.Truncated, err = stuckObjects(ctx, tx, f); err != nil {
			return err
		}
		var namespaces []string
		for _, o := range out.Objects {
			if isNamespace(o) {
				namespaces = append(namespaces, o.Name)
			}
		}
		if err := namespaceContent(ctx, tx, namespaces, f.ContentLimit, out.Content); err != nil {
			return err
		}
		roots := append([]*Object(nil), out.Objects...)
		for _, c := range out.Content {
			roots = append(roots, c.Objects...)
		}
		var orphaning []string
		for _, o := range roots {
			if _, seen := out.Orphaning[o.UID]; !seen && o.IsOrphaning() {
				orphaning = append(orphaning, o.UID)
				out.Orphaning[o.UID] = nil
			}
		}
		_, err = stuckDependents(ctx, tx, orphaning, false, f.DependentLimit, out.Orphaning, out.MoreOrphaning)
		if err != nil {
			return err
		}
		// Follow foreground owners level by level. An owner seen once is
		// not read again, so a cycle ends.
		level := roots
		for depth := 0; depth < f.Depth && len(level) > 0; depth++ {
			var owners []string
			for _, o := range level {
				if _, seen := out.Blocking[o.UID]; !seen && o.IsForegroundDeleting() {
					owners = append(owners, o.UID)
					out.Blocking[o.UID] = nil
				}
			}
			level, err = stuckDependents(ctx, tx, owners, true, f.DependentLimit, out.Blocking,
				out.MoreBlocking)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stuck deletions: %w", err)
	}
	return out, nil
}

func isNamespace(o *Object) bool { return o.APIVersion == "v1" && o.Kind == "Namespace" }

func stuckObjects(ctx context.Context, q querier, f StuckFilter) ([]*Object, bool, error) {
	where := []string{"o.deletion_timestamp IS NOT NULL"}
	var args []any
	if !f.RequestedBefore.IsZero() {
		where = append(where, requestedSeconds+` <= ?`)
		args = append(args, float64(f.RequestedBefore.UnixMicro())/1e6)
	}
	if f.Namespace != "" {
		where = append(where,
			`(o.namespace = ? OR (o.api_version = 'v1' AND o.kind = 'Namespace' AND o.name = ?))`)
		args = append(args, f.Namespace, f.Namespace)
	}
	if f.UID != "" {
		where = append(where, `o.uid = ?`)
		args = append(args, f.UID)
	}
	if f.Kind != "" {
		where = append(where, `(o.kind = ? COLLATE NOCASE
			OR o.resource_id IN (SELECT id FROM resources WHERE resource = lower(?)))`)
		args = append(args, f.Kind, f.Kind)
	}
	args = append(args, f.Limit+1)
	// objects_deleting, a partial index, holds only the objects being
	// deleted, so this never scans the whole mirror.
	rows, err := q.QueryContext(ctx, `SELECT `+stuckColumns+`
		FROM objects o `+stuckJoins+`
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY `+requestedSeconds+`, o.uid LIMIT ?`, args...)
	if err != nil {
		return nil, false, err
	}
	objs, err := scanStuck(rows)
	if err != nil {
		return nil, false, err
	}
	if len(objs) > f.Limit {
		return objs[:f.Limit], true, nil
	}
	return objs, false, nil
}

// scanStuck reads and closes rows of stuckColumns, then extra columns.
func scanStuck(rows *sql.Rows, extra ...any) ([]*Object, error) {
	defer rows.Close()
	var out []*Object
	for rows.Next() {
		o, err := scanStuckRow(rows, extra...)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

func scanStuckRow(rows *sql.Rows, extra ...any) (*Object, error) {
	var phase, reason, node, nsPhase, nsFins, nsConds sql.NullString
	var gen sql.NullInt64
	dest := append([]any{&phase, &reason, &node, &gen, &nsPhase, &nsFins, &nsConds}, extra...)
	o, err := scanObject(rows, dest...)
	if err != nil {
		return nil, err
	}
	if phase.Valid {
		o.Pod = &Pod{Phase: phase.String, Reason: reason.String, NodeName: node.String, Generation: gen.Int64}
	}
	if o.NamespaceStatus, err = namespaceStatus(nsPhase, nsFins, nsConds); err != nil {
		return nil, fmt.Errorf("namespace %s: %w", o.UID, err)
	}
	return o, nil
}

// namespaceContent fills content for each namespace: the objects left,
// named up to limit and counted by kind.
func namespaceContent(ctx context.Context, q querier, namespaces []string, limit int,
	content map[string]*NamespaceContent) error {
	if len(namespaces) == 0 {
		return nil
	}
	for _, ns := range namespaces {
		content[ns] = &NamespaceContent{ByKind: map[string]int{}}
	}
	set := jsonOrNull(namespaces)
	// Naming the namespaced resources lets objects_by_resource (resource,
	// namespace, name) find a namespace's objects without a scan.
	const inNamespaces = `o.resource_id IN (SELECT id FROM resources WHERE namespaced = 1)
		AND o.namespace IN (SELECT value FROM json_each(?))`
	rows, err := q.QueryContext(ctx, `SELECT o.namespace, o.api_version, o.kind, count(*) FROM objects o
		WHERE `+inNamespaces+` GROUP BY o.namespace, o.api_version, o.kind`, set)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var ns, apiVersion, kind string
		var n int
		if err := rows.Scan(&ns, &apiVersion, &kind, &n); err != nil {
			return err
		}
		key := kind
		if g := gcrules.Group(apiVersion); g != "" {
			key += "." + g
		}
		content[ns].ByKind[key] += n
		content[ns].Total += n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = q.QueryContext(ctx, `SELECT `+stuckColumns+` FROM (
			SELECT o.namespace AS ns, o.uid, row_number() OVER (PARTITION BY o.namespace
				ORDER BY o.deletion_timestamp IS NULL, o.kind, o.name) AS n
			FROM objects o WHERE `+inNamespaces+`) s
		JOIN objects o ON o.uid = s.uid `+stuckJoins+`
		WHERE s.n <= ? ORDER BY s.ns, s.n`, set, limit)
	if err != nil {
		return err
	}
	objs, err := scanStuck(rows)
	if err != nil {
		return err
	}
	for _, o := range objs {
		content[o.Namespace].Objects = append(content[o.Namespace].Objects, o)
	}
	return nil
}

// stuckDependents records in deps the dependents of each owner, at most
// limit each, and counts the rest in more. When blocking, it keeps only
// dependents with blockOwnerDeletion: true. It returns those recorded.
func stuckDependents(ctx context.Context, q querier, owners []string, blocking bool, limit int,
	deps map[string][]*Object, more map[string]int) ([]*Object, error) {
	if len(owners) == 0 {
		return nil, nil
	}
	var owner string
	rows, err := q.QueryContext(ctx, `SELECT `+stuckColumns+`, r.owner_uid
		FROM owner_refs r JOIN objects o ON o.uid = r.dependent_uid `+stuckJoins+`
		WHERE r.owner_uid IN (SELECT value FROM json_each(?)) AND (r.block_owner_deletion = 1 OR NOT ?)
		ORDER BY r.owner_uid, o.kind, o.namespace, o.name`, jsonOrNull(owners), blocking)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []*Object
	for rows.Next() {
		o, err := scanStuckRow(rows, &owner)
		if err != nil {
			return nil, err
		}
		if len(deps[owner]) >= limit {
			more[owner]++
			continue
		}
		deps[owner] = append(deps[owner], o)
		found = append(found, o)
	}
	return found, rows.Err()
}

// StuckCount is how many objects of one kind were asked to be deleted
// longer ago than a threshold and still exist, and when the oldest was.
type StuckCount struct {
	Group, Kind string
	Count       int
	Oldest      time.Time
}

// StuckCounts counts, by group and kind, the deletions requested at or
// before requestedBefore that have not finished. It also counts the
// Namespaces being deleted, however recently.
func (d Objects) StuckCounts(ctx context.Context, requestedBefore time.Time) (
	counts []StuckCount, terminatingNamespaces int, err error) {
	err = d.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT o.api_version, o.kind, count(*), min(`+requestedSeconds+`)
			FROM objects o WHERE o.deletion_timestamp IS NOT NULL AND `+requestedSeconds+` <= ?
			GROUP BY o.api_version, o.kind ORDER BY o.api_version, o.kind`,
			float64(requestedBefore.UnixMicro())/1e6)
		if err != nil {
			return err
		}
		defer rows.Close()
		byKey := map[[2]string]int{}
		for rows.Next() {
			var apiVersion, kind string
			var n int
			var oldest float64
			if err := rows.Scan(&apiVersion, &kind, &n, &oldest); err != nil {
				return err
			}
			group := gcrules.Group(apiVersion)
			t := time.UnixMicro(int64(oldest * 1e6)).UTC()
			// Two versions of one group and kind are one series.
			if i, ok := byKey[[2]string{group, kind}]; ok {
				counts[i].Count += n
				if t.Before(counts[i].Oldest) {
					counts[i].Oldest = t
				}
				continue
			}
			byKey[[2]string{group, kind}] = len(counts)
			counts = append(counts, StuckCount{Group: group, Kind: kind, Count: n, Oldest: t})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM objects o
			WHERE o.deletion_timestamp IS NOT NULL AND o.api_version = 'v1' AND o.kind = 'Namespace'`,
		).Scan(&terminatingNamespaces)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("stuck counts: %w", err)
	}
	return counts, terminatingNamespaces, nil
}
