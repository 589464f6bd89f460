package db

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// GraphFilter selects part of the ownership graph. Zero fields match
// everything; set fields intersect.
type GraphFilter struct {
	// Namespace keeps objects in that namespace, plus the cluster-scoped and
	// missing owners they reference.
	Namespace string
	// Isolated adds, with Namespace, the objects of that namespace that have
	// neither owners nor dependents. They are nodes without edges.
	Isolated bool
	// UIDs keeps these objects with their transitive owners and transitive
	// dependents.
	UIDs []string
	// Limit bounds the number of nodes; 0 means 10000.
	Limit int
}

// GraphNode is one vertex of the ownership graph: a mirrored object that
// has owners or dependents, or an owner known only from references to it.
// GraphFilter.Isolated adds objects that have neither.
type GraphNode struct {
	UID                string
	APIVersion         string
	Kind               string
	Namespace          string
	Name               string
	Missing            bool
	BeingDeleted       bool
	DeletingDependents bool
	// Virtual is upstream's word for an owner known only from an
	// ownerReference, not observed. For kubegcd that is the same as
	// Missing.
	Virtual bool
}

// GraphEdge is one ownerReference, from the dependent to the owner's UID.
type GraphEdge struct {
	Dependent          string
	Owner              string
	Controller         bool
	BlockOwnerDeletion bool
}

// Graph is a part of the ownership graph, nodes ordered by UID and edges by
// dependent, then owner.
type Graph struct {
	Nodes []GraphNode
	Edges []GraphEdge
	// Truncated: more nodes matched than the limit allowed.
	Truncated bool
}

// UnknownUIDError names a UID that is neither mirrored nor named by any
// ownerReference. It matches ErrNotFound.
type UnknownUIDError struct{ UID string }

func (e *UnknownUIDError) Error() string {
	return fmt.Sprintf("uid %q is not in the mirror and no object names it as an owner", e.UID)
}

func (e *UnknownUIDError) Is(target error) bool { return target == ErrNotFound }

// querier is what both *sql.DB and *sql.Tx offer for reading.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readTx runs fn in one read transaction, so that its queries see one
// snapshot of the mirror while ingestion keeps writing. A read-only
// transaction begins DEFERRED, so it never takes the write lock.
func (d *core) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return readTxOn(ctx, d.read, fn)
}

// readTxOn is readTx on the connections of pool.
func readTxOn(ctx context.Context, pool *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// participates is true for a UID that names an object with owners or is
// named as an owner.
const participates = `(EXISTS (SELECT 1 FROM owner_refs p WHERE p.dependent_uid = s.uid)
	OR EXISTS (SELECT 1 FROM owner_refs p WHERE p.owner_uid = s.uid))`

// Graph returns the part of the ownership graph f selects. A UID in f.UIDs
// that the graph does not know gives an *UnknownUIDError.
func (d Objects) Graph(ctx context.Context, f GraphFilter) (*Graph, error) {
	if f.Limit <= 0 {
		f.Limit = 10000
	}
	g := &Graph{Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	err := d.readSnapshot(ctx, len(f.UIDs) > 0, func(tx querier) error {
		for _, uid := range f.UIDs {
			var known bool
			err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM objects WHERE uid = ?1)
				OR EXISTS (SELECT 1 FROM owner_refs WHERE owner_uid = ?1)`, uid).Scan(&known)
			if err != nil {
				return err
			}
			if !known {
				return &UnknownUIDError{UID: uid}
			}
		}
		// The kinds tell a node's namespace. They are read once, for the
		// walk and the nodes.
		namespaced, err := namespacedKinds(ctx, tx)
		if err != nil {
			return err
		}
		uids, edges, known, err := graphUIDs(ctx, tx, f, namespaced)
		if err != nil {
			return err
		}
		if len(uids) > f.Limit {
			uids, g.Truncated = uids[:f.Limit], true
		}
		if len(uids) == 0 {
			return nil
		}
		if g.Nodes, err = graphNodes(ctx, tx, uids, known, namespaced, f.Namespace); err != nil {
			return err
		}
		if edges != nil {
			g.Edges = edges
			return nil
		}
		g.Edges, err = graphEdges(ctx, tx, uids, jsonOrNull(uids))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("graph: %w", err)
	}
	return g, nil
}

// graphUIDs returns the UIDs of the nodes f selects, ordered, at most
// f.Limit+1 of them: one more tells that the limit cut. When a walk from
// f.UIDs found them, graphUIDs also returns the edges between the first
// f.Limit, non-nil but maybe empty, and the nodes the walk read.
func graphUIDs(ctx context.Context, q querier, f GraphFilter, namespaced map[groupKind]bool) (
	[]string, []GraphEdge, map[string]GraphNode, error) {
	if len(f.UIDs) > 0 && f.Namespace == "" {
		uids, edges, nodes, ok, err := closureUIDs(ctx, q, f.UIDs, f.Limit, namespaced)
		if err != nil || ok {
			if edges == nil {
				edges = []GraphEdge{}
			}
			return uids, edges, nodes, err
		}
	}
	uids, err := graphUIDsSQL(ctx, q, f)
	return uids, nil, nil, err
}

// graphUIDsSQL is graphUIDs in one statement.
func graphUIDsSQL(ctx context.Context, q querier, f GraphFilter) ([]string, error) {
	var ctes, sets []string
	var args []any
	if len(f.UIDs) > 0 {
		// Walk up through owner_refs' primary key and down through its
		// owner index. UNION, unlike UNION ALL, stops at cycles.
		ctes = append(ctes, `seed(uid) AS (SELECT value FROM json_each(?)),
			up(uid) AS (SELECT uid FROM seed
				UNION SELECT r.owner_uid FROM owner_refs r JOIN up ON r.dependent_uid = up.uid),
			down(uid) AS (SELECT uid FROM seed
				UNION SELECT r.dependent_uid FROM owner_refs r JOIN down ON r.owner_uid = down.uid),
			closure(uid) AS (SELECT uid FROM up UNION SELECT uid FROM down)`)
		args = append(args, jsonOrNull(f.UIDs))
		// Only a seed can fail to take part, because every other member was
		// reached through an ownerReference. So only seeds pay the check.
		sets = append(sets,
			`SELECT s.uid FROM closure s WHERE s.uid NOT IN (SELECT uid FROM seed) OR `+participates)
	}
	if f.Namespace != "" {
		// Objects of the namespace that take part, and the owners outside any
		// namespace (cluster-scoped, or not mirrored) that they name. An owner
		// mirrored in another namespace is not theirs (BR-21-07) and is left out.
		// Isolated keeps the objects that take no part too.
		takesPart := " AND " + participates
		if f.Isolated {
			takesPart = ""
		}
		sets = append(sets, `SELECT s.uid FROM objects s WHERE s.namespace = ?`+takesPart+`
			UNION SELECT r.owner_uid FROM objects d JOIN owner_refs r ON r.dependent_uid = d.uid
				LEFT JOIN objects o ON o.uid = r.owner_uid
			WHERE d.namespace = ? AND (o.uid IS NULL OR o.namespace = '')`)
		args = append(args, f.Namespace, f.Namespace)
	}
	if len(sets) == 0 {
		sets = append(sets, allGraphUIDs(""))
	}
	query := ""
	if len(ctes) > 0 {
		query = "WITH RECURSIVE " + strings.Join(ctes, ", ") + " "
	}
	// Each set is wrapped so that its own UNION does not mix with INTERSECT.
	for i, s := range sets {
		if i > 0 {
			query += " INTERSECT "
		}
		query += "SELECT uid FROM (" + s + ")"
	}
	query += " ORDER BY uid LIMIT ?"
	args = append(args, f.Limit+1)

	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		out = append(out, uid)
	}
	return out, rows.Err()
}

// graphNodes reads the nodes uids, in their order. known holds some of
// them, which the walk that found them already read. namespaced holds every
// kind (see namespacedKinds). With a namespace filter, every owner that is
// not mirrored is named from that namespace.
func graphNodes(ctx context.Context, q querier, uids []string, known map[string]GraphNode,
	namespaced map[groupKind]bool, namespace string) ([]GraphNode, error) {
	out := make([]GraphNode, len(uids))
	var rest []string
	var restAt []int
	for i, u := range uids {
		if n, ok := known[u]; ok {
			out[i] = n
		} else {
			rest, restAt = append(rest, u), append(restAt, i)
		}
	}
	var missing []string
	if err := eachNodeRow(ctx, q, rest, namespaced, func(i int, n GraphNode, _ bool) error {
		out[restAt[i]] = n
		if n.Missing {
			missing = append(missing, n.UID)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(missing) == 0 {
		return out, nil
	}
	// The owners not mirrored, named by their first reference.
	first, err := firstRefs(ctx, q, missing)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if n := &out[i]; n.Missing {
			ref := first[n.UID]
			n.APIVersion, n.Kind, n.Namespace, n.Name = ref[0], ref[1], ref[2], ref[3]
			if err := finishNode(n, sql.NullString{}, namespaced, namespace); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// sqlObjectRows reads the object of each UID of the JSON array ?1. The
// outer loop of the LEFT JOIN walks the array in its order, one row per
// UID, so the rows need not name their UIDs. The driver's work is per row
// and per column, since it takes the connection's mutex for each call. So
// an object's fields come in one column, joined by unit separators, which
// no name or kind holds (see splitObjectRow). The column is NULL for an
// object not mirrored. Joining all the rows in one, by group_concat, cost
// more: 96–100 ms against 87–90 for the graph of a tree of 10,000.
const sqlObjectRows = `SELECT ((o.deletion_timestamp IS NOT NULL) * 2 + o.named_owner)
		|| x'1f' || o.api_version || x'1f' || o.kind || x'1f' || o.namespace || x'1f' || o.name
		|| x'1f' || coalesce(o.finalizers, '')
	FROM json_each(?1) k LEFT JOIN objects o ON o.uid = k.value`

// objectRow is an object as sqlObjectRows reads it.
type objectRow struct {
	// namedOwner is set for an object named as an owner: a walk down must
	// look for its dependents.
	namedOwner, deleting              bool
	apiVersion, kind, namespace, name string
	finalizers                        sql.NullString // a JSON array
}

// splitObjectRow splits an object that sqlObjectRows packed. Its fields are
// the flags, then apiVersion, kind, namespace, name and finalizers (empty
// for none). The flags add 2 when the object is being deleted and 1 when it
// is named as an owner.
func splitObjectRow(packed string) (objectRow, error) {
	// Cut by hand: strings.SplitN's slice would be an allocation a row.
	var f [6]string
	n, rest := 0, packed
	for ; n < 5; n++ {
		field, after, ok := strings.Cut(rest, "\x1f")
		if !ok {
			break
		}
		f[n], rest = field, after
	}
	f[n] = rest
	if n != 5 || len(f[0]) != 1 || f[0][0] < '0' || f[0][0] > '3' {
		return objectRow{}, fmt.Errorf("a row of %d fields, flags %q", n+1, f[0])
	}
	flags := f[0][0] - '0'
	return objectRow{namedOwner: flags&1 != 0, deleting: flags&2 != 0, apiVersion: f[1], kind: f[2],
		namespace: f[3], name: f[4], finalizers: sql.NullString{String: f[5], Valid: f[5] != ""}}, nil
}

// eachObjectRow reads the objects uids and calls fn with each, in their
// order. i is the object's place in uids. r is nil for an object not
// mirrored, and it is reused for the next row once fn returns. A wide read
// is split over a paired transaction (see splitRead): the second half's
// rows wait for fn until the first half's are done.
func eachObjectRow(ctx context.Context, q querier, uids []string, fn func(i int, r *objectRow) error) error {
	if len(uids) == 0 {
		return nil
	}
	var r objectRow // one for every row: fn keeps none
	emit := func(i int, packed sql.NullString) error {
		if !packed.Valid {
			return fn(i, nil)
		}
		var err error
		if r, err = splitObjectRow(packed.String); err != nil {
			return fmt.Errorf("object %s: %w", uids[i], err)
		}
		return fn(i, &r)
	}
	var rest []sql.NullString // the second half's rows
	restAt := 0
	read := func(ctx context.Context, q querier, keys []string, off, half int) error {
		if half == 1 {
			restAt, rest = off, make([]sql.NullString, 0, len(keys))
			return scanObjectRows(ctx, q, keys, func(_ int, packed sql.NullString) error {
				rest = append(rest, packed)
				return nil
			})
		}
		return scanObjectRows(ctx, q, keys, func(i int, packed sql.NullString) error {
			return emit(off+i, packed)
		})
	}
	if err := splitRead(ctx, q, uids, splitRows, read); err != nil {
		return err
	}
	for i, packed := range rest {
		if err := emit(restAt+i, packed); err != nil {
			return err
		}
	}
	return nil
}

// scanObjectRows runs sqlObjectRows for uids and calls fn with each row,
// packed, in their order.
func scanObjectRows(ctx context.Context, q querier, uids []string, fn func(i int, packed sql.NullString) error) error {
	rows, err := q.QueryContext(ctx, sqlObjectRows, jsonOrNull(uids))
	if err != nil {
		return err
	}
	defer rows.Close()
	i := 0
	var packed sql.NullString // Scan's target escapes: one for every row
	for ; rows.Next(); i++ {
		if i == len(uids) {
			return errors.New("objects: more rows than UIDs")
		}
		if err := rows.Scan(&packed); err != nil {
			return err
		}
		if err := fn(i, packed); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if i != len(uids) {
		return fmt.Errorf("objects: %d rows for %d UIDs", i, len(uids))
	}
	return nil
}

// eachNodeRow reads the nodes uids and calls fn with each, in their order,
// where i is the node's place in uids. mayOwn tells whether it may have
// dependents: it is named as an owner, or not mirrored. A node not mirrored
// comes with only its UID, and Missing set.
func eachNodeRow(ctx context.Context, q querier, uids []string, namespaced map[groupKind]bool,
	fn func(i int, n GraphNode, mayOwn bool) error) error {
	return eachObjectRow(ctx, q, uids, func(i int, r *objectRow) error {
		n := GraphNode{UID: uids[i]}
		if r == nil {
			n.Missing = true
			return fn(i, n, true)
		}
		n.APIVersion, n.Kind, n.Namespace, n.Name = r.apiVersion, r.kind, r.namespace, r.name
		n.BeingDeleted = r.deleting
		if err := finishNode(&n, r.finalizers, namespaced, ""); err != nil {
			return err
		}
		return fn(i, n, r.namedOwner)
	})
}

// sqlFirstRef reads the first reference to an owner that is not mirrored,
// in owner_refs_by_owner order. The owner takes its identity from that
// reference. The index's order needs no sort, however many dependents the
// owner has.
const sqlFirstRef = `SELECT json_array(r.api_version, r.kind, coalesce(d.namespace, ''), r.name) FROM owner_refs r
	LEFT JOIN objects d ON d.uid = r.dependent_uid
	WHERE r.owner_uid = %s ORDER BY r.dependent_uid, r.position LIMIT 1`

// firstRefs maps each of uids, owners that are not mirrored, to the
// apiVersion, kind, namespace and name of its first reference. The
// namespace is the dependent's.
func firstRefs(ctx context.Context, q querier, uids []string) (map[string][4]string, error) {
	query := `SELECT k.value, (` + fmt.Sprintf(sqlFirstRef, "k.value") + `) FROM json_each(?1) k`
	rows, err := q.QueryContext(ctx, query, jsonOrNull(uids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string][4]string, len(uids))
	for rows.Next() {
		var uid string
		var ref sql.NullString
		if err := rows.Scan(&uid, &ref); err != nil {
			return nil, err
		}
		var id [4]string
		if ref.Valid {
			if err := json.Unmarshal([]byte(ref.String), &id); err != nil {
				return nil, fmt.Errorf("node %s: %w", uid, err)
			}
		}
		out[uid] = id
	}
	return out, rows.Err()
}

// finishNode completes n as read. A node not mirrored is virtual. It takes
// a namespace only when its kind is namespaced, and only the namespace of
// the filter, when there is one. An object being deleted deletes its
// dependents first when one of its finalizers (a JSON array) is
// foregroundDeletion.
func finishNode(n *GraphNode, finalizers sql.NullString, namespaced map[groupKind]bool, namespace string) error {
	if n.Missing {
		n.Virtual = true
		// The reference gives no namespace. A namespaced owner can only be
		// in its dependent's, and a cluster-scoped or unknown kind has none
		// we can tell.
		switch {
		case !namespaced[groupKind{gcrules.Group(n.APIVersion), n.Kind}]:
			n.Namespace = ""
		case namespace != "":
			n.Namespace = namespace
		}
	}
	if n.BeingDeleted {
		fins, err := decodeFinalizers(finalizers)
		if err != nil {
			return fmt.Errorf("object %s: %w", n.UID, err)
		}
		n.DeletingDependents = slices.Contains(fins, gcrules.FinalizerForeground)
	}
	return nil
}

// scanGraphNodes reads the nodes whose UIDs the column uid of from lists,
// and calls fn for each. from is a table expression, with args. The nodes
// come in orderBy's order, or in from's when orderBy is empty.
func scanGraphNodes(ctx context.Context, q querier, from, uid, orderBy string, args []any, namespace string,
	fn func(GraphNode) error) error {
	namespaced, err := namespacedKinds(ctx, q)
	if err != nil {
		return err
	}
	// A node that is not mirrored reads its identity from its first
	// reference, in a subquery that runs only for it. As a LEFT JOIN, the
	// lookup ran for every node.
	rows, err := q.QueryContext(ctx, `
		SELECT `+uid+`, o.uid IS NULL, coalesce(o.api_version, ''), coalesce(o.kind, ''),
			coalesce(o.namespace, ''), coalesce(o.name, ''), o.deletion_timestamp IS NOT NULL, o.finalizers,
			CASE WHEN o.uid IS NULL THEN (`+fmt.Sprintf(sqlFirstRef, uid)+`) END
		FROM `+from+`
			LEFT JOIN objects o ON o.uid = `+uid+`
		`+orderBy, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var n GraphNode
		var finalizers, firstRef sql.NullString
		if err := rows.Scan(&n.UID, &n.Missing, &n.APIVersion, &n.Kind, &n.Namespace, &n.Name, &n.BeingDeleted,
			&finalizers, &firstRef); err != nil {
			return err
		}
		if firstRef.Valid {
			var id [4]string
			if err := json.Unmarshal([]byte(firstRef.String), &id); err != nil {
				return fmt.Errorf("node %s: %w", n.UID, err)
			}
			n.APIVersion, n.Kind, n.Namespace, n.Name = id[0], id[1], id[2], id[3]
		}
		if err := finishNode(&n, finalizers, namespaced, namespace); err != nil {
			return err
		}
		if err := fn(n); err != nil {
			return err
		}
	}
	return rows.Err()
}

// graphEdges reads the ownerReferences between the nodes uids, ordered by
// dependent, owner and position. set is the JSON array of uids. It reads
// each dependent's references through owner_refs' primary key and keeps
// those whose owner is a node in Go. A second IN over the set would build
// an index of it per request.
func graphEdges(ctx context.Context, q querier, uids []string, set any) ([]GraphEdge, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT r.dependent_uid, r.owner_uid, coalesce(r.controller, 0), coalesce(r.block_owner_deletion, 0)
		FROM json_each(?1) k CROSS JOIN owner_refs r ON r.dependent_uid = k.value`, set)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	nodes := make(map[string]struct{}, len(uids))
	for _, u := range uids {
		nodes[u] = struct{}{}
	}
	type edge struct {
		GraphEdge
		n int // the reference's place in the rows, for a stable order
	}
	var edges []edge
	for rows.Next() {
		var e GraphEdge
		if err := rows.Scan(&e.Dependent, &e.Owner, &e.Controller, &e.BlockOwnerDeletion); err != nil {
			return nil, err
		}
		if _, ok := nodes[e.Owner]; ok {
			edges = append(edges, edge{e, len(edges)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The rows come by dependent, then position. Order each dependent's
	// references by owner, and keep the positions in order for the same
	// owner.
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(strings.Compare(a.Dependent, b.Dependent), strings.Compare(a.Owner, b.Owner),
			cmp.Compare(a.n, b.n))
	})
	out := make([]GraphEdge, len(edges))
	for i, e := range edges {
		out[i] = e.GraphEdge
	}
	return out, nil
}

type groupKind struct{ group, kind string }

// namespacedKinds maps every discovered kind to whether it is namespaced.
func namespacedKinds(ctx context.Context, q querier) (map[groupKind]bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT api_group, kind, namespaced FROM resources`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[groupKind]bool{}
	for rows.Next() {
		var gk groupKind
		var ns bool
		if err := rows.Scan(&gk.group, &gk.kind, &ns); err != nil {
			return nil, err
		}
		out[gk] = out[gk] || ns
	}
	return out, rows.Err()
}
