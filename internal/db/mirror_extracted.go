package db

import (
	"context"
	"database/sql"
	"errors"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Ref is a reference an object makes to another by name, as internal/refs
// extracts it: a volume's ConfigMap, a binding's ServiceAccount. The
// target need not exist.
type Ref struct {
	// Group is the target's API group: "" for the core group.
	Group, Kind string
	// Namespace is "" for a cluster-scoped target.
	Namespace, Name string
	// Via is the field the reference came from.
	Via string
	// Optional: the referrer works without the target. Prefix: Name is a
	// prefix that an ordinal completes.
	Optional, Prefix bool
}

// KeyValue is a kept label or annotation.
type KeyValue struct{ Key, Value string }

// Kept label and annotation keys: the keys the built-in cleanup rules
// read. Ingestion keeps them on every object, whatever --mirror-labels and
// --mirror-annotations allow.
var (
	KeptLabelKeys = []string{"kubegcd.io/keep", "kor/used", "owner", "cleanup.kyverno.io/ttl"}
	// helm.sh/resource-policy is Helm's "keep"; the others are the TTLs of
	// kubegcd, kube-janitor and Kyverno.
	KeptAnnotationKeys = []string{"kubegcd.io/ttl", "kubegcd.io/expires", "kubegcd.io/keep", "janitor/ttl",
		"janitor/expires", "cleanup.kyverno.io/ttl", "helm.sh/resource-policy"}
)

// Job holds what the cleanup rules read of a batch Job.
type Job struct {
	// Complete and Failed: the condition of that type is True.
	Complete, Failed bool
	// FinishedAt is status.completionTime, or the Failed condition's
	// lastTransitionTime.
	FinishedAt              *time.Time
	TTLSecondsAfterFinished *int32
}

// CronJob holds a CronJob's history limits and whether it is suspended.
type CronJob struct {
	SuccessfulJobsHistoryLimit, FailedJobsHistoryLimit *int32
	Suspend                                            bool
}

// Secret holds a Secret's type, never its data.
type Secret struct{ Type string }

// PVC holds a PersistentVolumeClaim's phase and bound volume.
type PVC struct{ Phase, VolumeName string }

// Workload holds spec.replicas of a Deployment, ReplicaSet, StatefulSet
// or ReplicationController; nil when unset.
type Workload struct{ Replicas *int32 }

// hasExtracted reports whether o carries anything extractedStatements
// writes.
func (o *Object) hasExtracted() bool {
	return len(o.Refs) > 0 || len(o.Labels) > 0 || len(o.Annotations) > 0 || o.Job != nil || o.CronJob != nil ||
		o.Secret != nil || o.PVC != nil || o.Workload != nil
}

// extractedHash is a hash of what o's extracted rows hold, or nil when o
// has none: the objects row keeps it (extracted_hash), so that a write
// that changes none of them skips them.
func (o *Object) extractedHash() any {
	if !o.hasExtracted() {
		return nil
	}
	h := newHash()
	for _, r := range o.Refs {
		h.str("r").str(r.Group).str(r.Kind).str(r.Namespace).str(r.Name).str(r.Via).bool(r.Optional).bool(r.Prefix)
	}
	for _, kv := range o.Labels {
		h.str("l").str(kv.Key).str(kv.Value)
	}
	for _, kv := range o.Annotations {
		h.str("a").str(kv.Key).str(kv.Value)
	}
	if j := o.Job; j != nil {
		h.str("j").bool(j.Complete).bool(j.Failed).time(j.FinishedAt).int32(j.TTLSecondsAfterFinished)
	}
	if c := o.CronJob; c != nil {
		h.str("c").int32(c.SuccessfulJobsHistoryLimit).int32(c.FailedJobsHistoryLimit).bool(c.Suspend)
	}
	if s := o.Secret; s != nil {
		h.str("s").str(s.Type)
	}
	if p := o.PVC; p != nil {
		h.str("p").str(p.Phase).str(p.VolumeName)
	}
	if w := o.Workload; w != nil {
		h.str("w").int32(w.Replicas)
	}
	return int64(*h)
}

// fnv64 is FNV-1a, 64 bits: stable across runs, as the stored hash must
// be, and free of allocations. Each value ends with 0xff, a byte no UTF-8
// string holds, so that two lists of values hash alike only when equal.
type fnv64 uint64

const fnvPrime = 1099511628211

func newHash() *fnv64 {
	h := fnv64(14695981039346656037)
	return &h
}

func (h *fnv64) str(s string) *fnv64 {
	x := *h
	for i := 0; i < len(s); i++ {
		x ^= fnv64(s[i])
		x *= fnvPrime
	}
	x ^= 0xff
	x *= fnvPrime
	*h = x
	return h
}

func (h *fnv64) bool(b bool) *fnv64 {
	if b {
		return h.str("1")
	}
	return h.str("0")
}

func (h *fnv64) int32(p *int32) *fnv64 {
	if p == nil {
		return h.str("-")
	}
	var buf [12]byte
	return h.bytes(strconv.AppendInt(buf[:0], int64(*p), 10))
}

func (h *fnv64) bytes(b []byte) *fnv64 {
	x := *h
	for _, c := range b {
		x ^= fnv64(c)
		x *= fnvPrime
	}
	x ^= 0xff
	x *= fnvPrime
	*h = x
	return h
}

func (h *fnv64) time(t *time.Time) *fnv64 {
	if f, ok := formatTime(t).(string); ok {
		return h.str(f)
	}
	return h.str("-")
}

// sameHash compares a stored extracted_hash with extractedHash's value.
func sameHash(stored sql.NullInt64, h any) bool {
	v, ok := h.(int64)
	return stored.Valid == ok && stored.Int64 == v
}

// Write statements of the extracted rows, prepared once with the ingest
// ones.
const (
	sqlStoredHash = `SELECT extracted_hash FROM objects WHERE uid = ?`
	sqlRefsOf     = `SELECT target_group, target_kind, target_namespace, target_name, via, optional, prefix
		FROM refs WHERE referrer_uid = ?`
	sqlDropRef = `DELETE FROM refs WHERE referrer_uid = ? AND target_group = ? AND target_kind = ?
		AND target_namespace = ? AND target_name = ? AND via = ?`
	// An optional that changed is updated in place: no trigger fires, and
	// the target's history stays as it is.
	sqlSetRefOptional = `UPDATE refs SET optional = ? WHERE referrer_uid = ? AND target_group = ? AND target_kind = ?
		AND target_namespace = ? AND target_name = ? AND via = ?`
	sqlDropLabels      = `DELETE FROM object_labels WHERE uid = ?`
	sqlAddLabel        = `INSERT INTO object_labels (uid, key, value) VALUES (?, ?, ?)`
	sqlDropAnnotations = `DELETE FROM object_annotations WHERE uid = ?`
	sqlAddAnnotation   = `INSERT INTO object_annotations (uid, key, value) VALUES (?, ?, ?)`
	sqlUpsertJob       = `INSERT INTO jobs (uid, complete, failed, finished_at, ttl_seconds_after_finished)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET complete = excluded.complete, failed = excluded.failed,
			finished_at = excluded.finished_at, ttl_seconds_after_finished = excluded.ttl_seconds_after_finished`
	sqlUpsertCronJob = `INSERT INTO cronjobs (uid, successful_jobs_history_limit, failed_jobs_history_limit, suspend)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET successful_jobs_history_limit = excluded.successful_jobs_history_limit,
			failed_jobs_history_limit = excluded.failed_jobs_history_limit, suspend = excluded.suspend`
	sqlUpsertSecret = `INSERT INTO secrets (uid, type) VALUES (?, ?)
		ON CONFLICT (uid) DO UPDATE SET type = excluded.type`
	sqlUpsertPVC = `INSERT INTO pvcs (uid, phase, volume_name) VALUES (?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET phase = excluded.phase, volume_name = excluded.volume_name`
	sqlUpsertWorkload = `INSERT INTO workloads (uid, replicas) VALUES (?, ?)
		ON CONFLICT (uid) DO UPDATE SET replicas = excluded.replicas`
)

var (
	// addRefs writes rows of refs. OR FAIL: a statement that fails keeps
	// the rows it wrote before, instead of undoing them. SQLite then keeps
	// no statement journal, a copy of each page the statement changes: 7 %
	// of the CPU of a first fill of pods went to it. The writer undoes a
	// failed write whole (TestFailedFirstFillWriteLeavesNoRow). With
	// foreign keys on, SQLite journals the statement all the same.
	addRefs = newMultiRow(`INSERT OR FAIL INTO refs (referrer_uid, target_group, target_kind, target_namespace,
			target_name, via, optional, prefix)`, "", 8)
	// touchRefHistory records the targets a transaction added references
	// to: their first and last reference. One row per target and
	// transaction, however many referrers the transaction adds (a
	// Deployment's pods).
	touchRefHistory = newMultiRow(`INSERT OR FAIL INTO ref_history (target_group, target_kind, target_namespace,
			target_name, prefix, first_referenced, last_referenced)`,
		` ON CONFLICT DO UPDATE SET last_referenced = excluded.last_referenced`, 7)
)

// extractedQueries are the statements of extractedStatements, by index.
var extractedQueries = append(append([]string{
	xStoredHash: sqlStoredHash, xRefsOf: sqlRefsOf,
	xDropRef:        sqlDropRef,
	xSetRefOptional: sqlSetRefOptional, xDropLabels: sqlDropLabels, xAddLabel: sqlAddLabel,
	xDropAnnotations: sqlDropAnnotations, xAddAnnotation: sqlAddAnnotation, xUpsertJob: sqlUpsertJob,
	xUpsertCronJob: sqlUpsertCronJob, xUpsertSecret: sqlUpsertSecret, xUpsertPVC: sqlUpsertPVC,
	xUpsertWorkload: sqlUpsertWorkload,
}, addRefs.queries()...), touchRefHistory.queries()...)

const (
	xStoredHash = iota
	xRefsOf
	xDropRef
	xSetRefOptional
	xDropLabels
	xAddLabel
	xDropAnnotations
	xAddAnnotation
	xUpsertJob
	xUpsertCronJob
	xUpsertSecret
	xUpsertPVC
	xUpsertWorkload
	xCount
)

// extractedStatements write the extracted rows of objects in one
// transaction. Each statement is bound to the transaction when first used:
// most writes (a status update) use none.
type extractedStatements struct {
	d     *core
	tx    *sql.Tx
	stmts [xCount]*sql.Stmt
	// touched are the targets this transaction added a reference to:
	// finish records them in ref_history.
	touched map[histKey]bool
	// pending holds the rows of refs that a first fill leaves to finish,
	// which writes them sorted by referrer (see deferRefs).
	pending []pendingRef
	// args is room for the values of a multi-row statement.
	args []any
}

// histKey is a row of ref_history by its primary key.
type histKey struct {
	group, kind, namespace, name string
	prefix                       bool
}

// compare orders keys as the primary key of ref_history does. It compares
// a field only when the ones before it are equal: cmp.Or would compare
// them all, and a page's sort compares a million times.
func (a histKey) compare(b histKey) int {
	for _, c := range [...][2]string{{a.kind, b.kind}, {a.namespace, b.namespace}, {a.name, b.name},
		{a.group, b.group}} {
		if n := strings.Compare(c[0], c[1]); n != 0 {
			return n
		}
	}
	return cmpBool(a.prefix, b.prefix)
}

func (x *extractedStatements) exec(ctx context.Context, i int, args ...any) (sql.Result, error) {
	st, err := x.stmt(ctx, i)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (x *extractedStatements) stmt(ctx context.Context, i int) (*sql.Stmt, error) {
	if x.stmts[i] == nil {
		st, err := x.d.txStmt(ctx, x.tx, extractedQueries[i])
		if err != nil {
			return nil, err
		}
		x.stmts[i] = st
	}
	return x.stmts[i], nil
}

// storedHash reads the extracted_hash of the object uid: NULL when it has
// none or is not mirrored.
func (x *extractedStatements) storedHash(ctx context.Context, uid string) (sql.NullInt64, error) {
	var h sql.NullInt64
	st, err := x.stmt(ctx, xStoredHash)
	if err != nil {
		return h, err
	}
	if err := st.QueryRowContext(ctx, uid).Scan(&h); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return h, err
	}
	return h, nil
}

// write replaces the extracted rows of o with what o holds. fresh says
// that none are stored (no extracted hash): nothing is read or dropped.
func (x *extractedStatements) write(ctx context.Context, o *Object, fresh bool) error {
	if err := x.writeRefs(ctx, o, fresh); err != nil {
		return err
	}
	return x.writeKept(ctx, o, fresh)
}

// writeFirst writes the extracted rows of o, which a first fill writes,
// and leaves its rows of refs to finish.
func (x *extractedStatements) writeFirst(ctx context.Context, o *Object) error {
	x.deferRefs(o)
	return x.writeKept(ctx, o, true)
}

// writeKept writes the labels, annotations and typed fields kept of o.
func (x *extractedStatements) writeKept(ctx context.Context, o *Object, fresh bool) error {
	if err := x.replaceKeys(ctx, o.UID, xDropLabels, xAddLabel, o.Labels, fresh); err != nil {
		return err
	}
	if err := x.replaceKeys(ctx, o.UID, xDropAnnotations, xAddAnnotation, o.Annotations, fresh); err != nil {
		return err
	}
	var err error
	switch {
	case o.Job != nil:
		j := o.Job
		_, err = x.exec(ctx, xUpsertJob, o.UID, j.Complete, j.Failed, formatTime(j.FinishedAt),
			ptrOrNull(j.TTLSecondsAfterFinished))
	case o.CronJob != nil:
		c := o.CronJob
		_, err = x.exec(ctx, xUpsertCronJob, o.UID, ptrOrNull(c.SuccessfulJobsHistoryLimit),
			ptrOrNull(c.FailedJobsHistoryLimit), c.Suspend)
	case o.Secret != nil:
		_, err = x.exec(ctx, xUpsertSecret, o.UID, o.Secret.Type)
	case o.PVC != nil:
		_, err = x.exec(ctx, xUpsertPVC, o.UID, o.PVC.Phase, o.PVC.VolumeName)
	case o.Workload != nil:
		_, err = x.exec(ctx, xUpsertWorkload, o.UID, ptrOrNull(o.Workload.Replicas))
	}
	return err
}

func (x *extractedStatements) replaceKeys(ctx context.Context, uid string, drop, add int, kvs []KeyValue,
	fresh bool) error {
	if !fresh {
		if _, err := x.exec(ctx, drop, uid); err != nil {
			return err
		}
	}
	for _, kv := range kvs {
		if _, err := x.exec(ctx, add, uid, kv.Key, kv.Value); err != nil {
			return err
		}
	}
	return nil
}

// refKey names a row of refs among a referrer's rows: the writes keep
// one row per referrer and refKey.
type refKey struct{ group, kind, namespace, name, via string }

type refFlags struct{ optional, prefix bool }

// writeRefs brings o's rows of refs to o.Refs and touches only the rows
// that differ: the triggers of refs record a reference added or dropped in
// ref_history, and a reference kept must not count as either.
func (x *extractedStatements) writeRefs(ctx context.Context, o *Object, fresh bool) error {
	stored := map[refKey]refFlags{}
	if !fresh {
		var err error
		if stored, err = x.storedRefs(ctx, o.UID); err != nil {
			return err
		}
	}
	var add, setOptional []Ref
	for k, r := range uniqueRefs(o.Refs) {
		f, ok := stored[k]
		switch {
		case !ok:
			add = append(add, r)
		case f.prefix != r.Prefix:
			// Another target's history: drop the row, then add it again.
			add = append(add, r)
			continue
		case f.optional != r.Optional:
			setOptional = append(setOptional, r)
		}
		delete(stored, k)
	}
	for k := range stored {
		if _, err := x.exec(ctx, xDropRef, o.UID, k.group, k.kind, k.namespace, k.name, k.via); err != nil {
			return err
		}
	}
	for _, r := range setOptional {
		if _, err := x.exec(ctx, xSetRefOptional, r.Optional, o.UID, r.Group, r.Kind, r.Namespace, r.Name,
			r.Via); err != nil {
			return err
		}
	}
	args := x.args[:0]
	for _, r := range add {
		args = append(args, o.UID, r.Group, r.Kind, r.Namespace, r.Name, r.Via, r.Optional, r.Prefix)
		x.touch(r)
	}
	x.args = args
	return addRefs.exec(ctx, x.d, x.tx, args)
}

// uniqueRefs yields refs by key, each key once: the first of two with one
// key wins, as refs holds one row per referrer and key.
func uniqueRefs(refs []Ref) iter.Seq2[refKey, Ref] {
	return func(yield func(refKey, Ref) bool) {
		seen := make(map[refKey]bool, len(refs))
		for _, r := range refs {
			k := refKey{r.Group, r.Kind, r.Namespace, r.Name, r.Via}
			if seen[k] {
				continue
			}
			seen[k] = true
			if !yield(k, r) {
				return
			}
		}
	}
}

// cmpBool orders false before true, as SQLite orders 0 before 1.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// pendingRef is a row of refs that finish writes.
type pendingRef struct {
	uid string
	Ref
}

// deferRefs leaves the rows of refs of o, which has none stored, to
// finish. A first fill writes a page of referrers, whose random UIDs land
// on random leaves of refs_by_referrer: sorted at the end, the rows of a
// page fill its leaves in turn instead. Only a page of a first fill
// defers: no write in it reads refs or deletes a referrer before finish.
func (x *extractedStatements) deferRefs(o *Object) {
	for _, r := range uniqueRefs(o.Refs) {
		x.pending = append(x.pending, pendingRef{o.UID, r})
		x.touch(r)
	}
}

// reserve makes room for the references of objs, which a first fill
// defers: a page of 5,000 pods would otherwise grow the slice and the map
// a dozen times.
func (x *extractedStatements) reserve(objs []*Object) {
	n := 0
	for _, o := range objs {
		n += len(o.Refs)
	}
	if n > 0 {
		x.pending = slices.Grow(x.pending, n)
		if x.touched == nil {
			x.touched = make(map[histKey]bool, n)
		}
	}
}

// writePending writes the rows deferRefs left, sorted by referrer,
// a statement of the largest multi-row size at a time. Only the referrer
// orders them: refs_by_referrer is keyed by it alone, and the rows of one
// referrer may land in any order.
func (x *extractedStatements) writePending(ctx context.Context) error {
	slices.SortFunc(x.pending, func(a, b pendingRef) int { return strings.Compare(a.uid, b.uid) })
	for rows := range slices.Chunk(x.pending, multiRowSizes[0]) {
		args := x.args[:0]
		for _, r := range rows {
			args = append(args, r.uid, r.Group, r.Kind, r.Namespace, r.Name, r.Via, r.Optional, r.Prefix)
		}
		x.args = args
		if err := addRefs.exec(ctx, x.d, x.tx, args); err != nil {
			return err
		}
	}
	x.pending = nil
	return nil
}

// touch notes that a reference to r's target was added now.
func (x *extractedStatements) touch(r Ref) {
	if x.touched == nil {
		x.touched = map[histKey]bool{}
	}
	x.touched[histKey{r.Group, r.Kind, r.Namespace, r.Name, r.Prefix}] = true
}

// finish records in ref_history the targets the transaction added a
// reference to, each once. The trigger refs_removed records a reference
// dropped, by any path.
func (x *extractedStatements) finish(ctx context.Context) error {
	if err := x.writePending(ctx); err != nil {
		return err
	}
	if len(x.touched) == 0 {
		return nil
	}
	now := formatTime(ptr(time.Now()))
	keys := slices.SortedFunc(maps.Keys(x.touched), histKey.compare)
	args := x.args[:0]
	for _, k := range keys {
		args = append(args, k.group, k.kind, k.namespace, k.name, k.prefix, now, now)
	}
	x.args, x.touched = args, nil
	return touchRefHistory.exec(ctx, x.d, x.tx, args)
}

// storedRefs reads the rows of refs of the referrer uid.
func (x *extractedStatements) storedRefs(ctx context.Context, uid string) (map[refKey]refFlags, error) {
	st, err := x.stmt(ctx, xRefsOf)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, uid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[refKey]refFlags{}
	for rows.Next() {
		var k refKey
		var f refFlags
		if err := rows.Scan(&k.group, &k.kind, &k.namespace, &k.name, &k.via, &f.optional, &f.prefix); err != nil {
			return nil, err
		}
		out[k] = f
	}
	return out, rows.Err()
}
