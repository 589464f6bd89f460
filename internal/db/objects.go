package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kubegcd/kubegcd/internal/api"
)

// ErrNotFound is returned when a looked-up row does not exist.
var ErrNotFound = errors.New("not found")

// ResourceStat is a watched resource with its sync state and object count.
type ResourceStat struct {
	Resource
	Synced  bool
	Objects int64
}

// ResourceStats lists every recorded resource with its object count.
func (d Objects) ResourceStats(ctx context.Context) ([]ResourceStat, error) {
	rows, err := d.query(ctx, `
		SELECT r.id, r.api_group, r.version, r.resource, r.kind, r.namespaced, r.synced,
			coalesce((SELECT c.objects FROM resource_counts c WHERE c.resource_id = r.id), 0)
		FROM resources r ORDER BY r.api_group, r.resource`)
	if err != nil {
		return nil, fmt.Errorf("resource stats: %w", err)
	}
	defer rows.Close()
	var out []ResourceStat
	for rows.Next() {
		var s ResourceStat
		if err := rows.Scan(&s.ID, &s.Group, &s.Version, &s.Resource.Resource, &s.Kind, &s.Namespaced,
			&s.Synced, &s.Objects); err != nil {
			return nil, fmt.Errorf("resource stats: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

const objectColumns = `o.uid, o.api_version, o.kind, o.namespace, o.name, o.resource_version, o.creation_timestamp,
	o.deletion_timestamp, o.deletion_grace_period_seconds, o.finalizers`

// sqlObject reads one object's objectColumns by its UID.
const sqlObject = `SELECT ` + objectColumns + ` FROM objects o WHERE o.uid = ?`

// scanObject reads objectColumns, then any extra columns into extra.
func scanObject(sc interface{ Scan(...any) error }, extra ...any) (*Object, error) {
	var (
		o                Object
		created, deleted sql.NullString
		grace            sql.NullInt64
		finalizers       sql.NullString
	)
	dest := append([]any{&o.UID, &o.APIVersion, &o.Kind, &o.Namespace, &o.Name, &o.ResourceVersion, &created,
		&deleted, &grace, &finalizers}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	o.CreationTimestamp = parseTime(created)
	o.DeletionTimestamp = parseTime(deleted)
	if grace.Valid {
		o.DeletionGracePeriodSeconds = &grace.Int64
	}
	if finalizers.Valid {
		if err := json.Unmarshal([]byte(finalizers.String), &o.Finalizers); err != nil {
			return nil, fmt.Errorf("object %s: finalizers: %w", o.UID, err)
		}
	}
	return &o, nil
}

// GetObject returns the object with uid, its owner references and its typed
// columns, or ErrNotFound. Metadata and references come in one query,
// because the controllers read an object per decision.
func (d Objects) GetObject(ctx context.Context, uid string) (*Object, error) {
	var o *Object
	keep := func(got *Object) error { o = got; return nil }
	err := d.objectsWithRefs(ctx, keep, `objects o`, `o.uid = ?`, `o.uid`, uid)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", uid, err)
	}
	if o == nil {
		return nil, ErrNotFound
	}
	if err := d.typedColumns(ctx, o); err != nil {
		return nil, err
	}
	return o, nil
}

// DependentObjects calls fn with each object that names ownerUID as an
// owner, as the rows come. The objects come with their owner references but
// without typed columns: what the ownership GC decides on when an owner
// goes. One query reads them all, and they are never all held at once.
//
// The query walks the owner index in its own order, so the first dependent
// comes at once rather than after all of them were collected (27 ms at
// 50,000). An owner without dependents costs one index probe. A dependent
// that names the owner twice comes once, through its first reference.
func (d Objects) DependentObjects(ctx context.Context, ownerUID string, fn func(*Object) error) error {
	err := d.objectsWithRefs(ctx, fn, dependentsFrom, dependentsWhere, dependentsBy, ownerUID)
	if err != nil {
		return fmt.Errorf("dependents of %s: %w", ownerUID, err)
	}
	return nil
}

const (
	dependentsFrom  = `owner_refs x JOIN objects o ON o.uid = x.dependent_uid`
	dependentsWhere = `x.owner_uid = ? AND NOT EXISTS (SELECT 1 FROM owner_refs y
		WHERE y.owner_uid = x.owner_uid AND y.dependent_uid = x.dependent_uid AND y.position < x.position)`
	dependentsBy = `x.dependent_uid`
)

// objectsWithRefs calls fn with each object (o) that from and where select,
// once its owner references are all read, in order. The objects come in the
// order of by, which must follow o.uid.
func (d *core) objectsWithRefs(ctx context.Context, fn func(*Object) error, from, where, by string, args ...any) error {
	rows, err := d.query(ctx, objectsWithRefsQuery(from, where, by), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var o *Object
	for rows.Next() {
		var refAPIVersion, refKind, refName, refUID sql.NullString
		var controller, block sql.NullBool
		got, err := scanObject(rows, &refAPIVersion, &refKind, &refName, &refUID, &controller, &block)
		if err != nil {
			return err
		}
		if o == nil || o.UID != got.UID {
			if o != nil {
				if err := fn(o); err != nil {
					return err
				}
			}
			o = got
		}
		if refUID.Valid {
			r := api.OwnerRef{APIVersion: refAPIVersion.String, Kind: refKind.String, Name: refName.String,
				UID: refUID.String}
			if controller.Valid {
				r.Controller = &controller.Bool
			}
			if block.Valid {
				r.BlockOwnerDeletion = &block.Bool
			}
			o.OwnerReferences = append(o.OwnerReferences, r)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if o != nil {
		return fn(o)
	}
	return nil
}

// objectsWithRefsQuery is the statement objectsWithRefs runs.
func objectsWithRefsQuery(from, where, by string) string {
	return `SELECT ` + objectColumns + `, r.api_version, r.kind, r.name, r.owner_uid, r.controller,
			r.block_owner_deletion
		FROM ` + from + ` LEFT JOIN owner_refs r ON r.dependent_uid = o.uid
		WHERE ` + where + ` ORDER BY ` + by + `, r.position`
}

const sqlOwnerRefsOf = `SELECT api_version, kind, name, owner_uid, controller, block_owner_deletion
	FROM owner_refs WHERE dependent_uid = ? ORDER BY position`

// scanOwnerRefs reads and closes rows of sqlOwnerRefsOf's columns.
func scanOwnerRefs(rows *sql.Rows) ([]api.OwnerRef, error) {
	defer rows.Close()
	var refs []api.OwnerRef
	for rows.Next() {
		var r api.OwnerRef
		var controller, block sql.NullBool
		if err := rows.Scan(&r.APIVersion, &r.Kind, &r.Name, &r.UID, &controller, &block); err != nil {
			return nil, err
		}
		if controller.Valid {
			r.Controller = &controller.Bool
		}
		if block.Valid {
			r.BlockOwnerDeletion = &block.Bool
		}
		refs = append(refs, r)
	}
	return refs, rows.Err()
}

// typedColumns loads the typed columns of the kinds that have them.
func (d *core) typedColumns(ctx context.Context, o *Object) error {
	switch {
	case o.APIVersion == "v1" && o.Kind == "Pod":
		return d.podColumns(ctx, o)
	case o.APIVersion == "v1" && o.Kind == "Node":
		return d.nodeColumns(ctx, o)
	case o.Kind == "Lease" && strings.HasPrefix(o.APIVersion, "coordination.k8s.io/"):
		return d.leaseColumns(ctx, o)
	case o.Kind == "LeaseCandidate" && strings.HasPrefix(o.APIVersion, "coordination.k8s.io/"):
		return d.leaseCandidateColumns(ctx, o)
	case o.Kind == "StorageVersion" && strings.HasPrefix(o.APIVersion, "internal.apiserver.k8s.io/"):
		return d.storageVersionColumns(ctx, o)
	case isNamespace(o):
		return d.namespaceColumns(ctx, o)
	}
	return nil
}

func (d *core) podColumns(ctx context.Context, o *Object) error {
	var pod Pod
	err := d.queryRow(ctx, `SELECT phase, reason, node_name, generation FROM pods WHERE uid = ?`, o.UID).
		Scan(&pod.Phase, &pod.Reason, &pod.NodeName, &pod.Generation)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pod %s: %w", o.UID, err)
	}
	o.Pod = &pod
	return nil
}

func (d *core) nodeColumns(ctx context.Context, o *Object) error {
	var node Node
	var taints, ttl sql.NullString
	err := d.queryRow(ctx, `SELECT ready, taints, ttl_annotation FROM nodes WHERE uid = ?`, o.UID).
		Scan(&node.Ready, &taints, &ttl)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", o.UID, err)
	}
	if taints.Valid {
		if err := json.Unmarshal([]byte(taints.String), &node.Taints); err != nil {
			return fmt.Errorf("node %s: taints: %w", o.UID, err)
		}
	}
	if ttl.Valid {
		node.TTLAnnotation = &ttl.String
	}
	o.Node = &node
	return nil
}

func (d *core) leaseColumns(ctx context.Context, o *Object) error {
	var l Lease
	var holder, acquire, renew, identity, strategy, preferred sql.NullString
	var duration, transitions sql.NullInt32
	err := d.queryRow(ctx, `SELECT holder_identity, lease_duration_seconds, acquire_time, renew_time,
		lease_transitions, identity_label, strategy, preferred_holder FROM leases WHERE uid = ?`, o.UID).
		Scan(&holder, &duration, &acquire, &renew, &transitions, &identity, &strategy, &preferred)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lease %s: %w", o.UID, err)
	}
	l.HolderIdentity = nullString(holder)
	l.IdentityLabel = nullString(identity)
	l.Strategy, l.PreferredHolder = nullString(strategy), nullString(preferred)
	l.AcquireTime = parseTime(acquire)
	l.RenewTime = parseTime(renew)
	if duration.Valid {
		l.LeaseDurationSeconds = &duration.Int32
	}
	if transitions.Valid {
		l.LeaseTransitions = &transitions.Int32
	}
	o.Lease = &l
	return nil
}

func (d *core) leaseCandidateColumns(ctx context.Context, o *Object) error {
	var c LeaseCandidate
	var ping, renew sql.NullString
	err := d.queryRow(ctx, `SELECT lease_name, binary_version, emulation_version, strategy, ping_time, renew_time
		FROM lease_candidates WHERE uid = ?`, o.UID).
		Scan(&c.LeaseName, &c.BinaryVersion, &c.EmulationVersion, &c.Strategy, &ping, &renew)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lease candidate %s: %w", o.UID, err)
	}
	c.PingTime, c.RenewTime = parseTime(ping), parseTime(renew)
	o.LeaseCandidate = &c
	return nil
}

func (d *core) storageVersionColumns(ctx context.Context, o *Object) error {
	var common sql.NullString
	err := d.queryRow(ctx, `SELECT common_encoding_version FROM storage_versions WHERE uid = ?`,
		o.UID).Scan(&common)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("storage version %s: %w", o.UID, err)
	}
	sv := &StorageVersion{CommonEncodingVersion: nullString(common)}
	rows, err := d.query(ctx, `SELECT api_server_id, encoding_version, decodable_versions, served_versions
		FROM storage_version_entries WHERE uid = ? ORDER BY api_server_id`, o.UID)
	if err != nil {
		return fmt.Errorf("storage version %s: %w", o.UID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e StorageVersionEntry
		var dec, served sql.NullString
		if err := rows.Scan(&e.APIServerID, &e.EncodingVersion, &dec, &served); err != nil {
			return fmt.Errorf("storage version %s: %w", o.UID, err)
		}
		for _, p := range []struct {
			s   sql.NullString
			dst *[]string
		}{{dec, &e.DecodableVersions}, {served, &e.ServedVersions}} {
			if p.s.Valid {
				if err := json.Unmarshal([]byte(p.s.String), p.dst); err != nil {
					return fmt.Errorf("storage version %s: %w", o.UID, err)
				}
			}
		}
		sv.Entries = append(sv.Entries, e)
	}
	o.StorageVersion = sv
	return rows.Err()
}

// ObjectKey names an object for comparisons in tests and tools.
type ObjectKey struct {
	UID             string
	ResourceVersion string
}

// ObjectsOf lists the uid and resourceVersion of every mirrored object of a
// resource.
func (d Objects) ObjectsOf(ctx context.Context, resourceID int64) ([]ObjectKey, error) {
	rows, err := d.query(ctx, `SELECT uid, resource_version FROM objects WHERE resource_id = ? ORDER BY uid`,
		resourceID)
	if err != nil {
		return nil, fmt.Errorf("objects of resource %d: %w", resourceID, err)
	}
	defer rows.Close()
	var out []ObjectKey
	for rows.Next() {
		var k ObjectKey
		if err := rows.Scan(&k.UID, &k.ResourceVersion); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// ResourceID returns the mirror's id of a resource, or ErrNotFound.
func (d Objects) ResourceID(ctx context.Context, group, version, resource string) (int64, error) {
	var id int64
	err := d.queryRow(ctx, `SELECT id FROM resources WHERE api_group = ? AND version = ? AND resource = ?`,
		group, version, resource).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return id, err
}

// ResourceForKind finds the watched resource serving group/kind.
func (d Objects) ResourceForKind(ctx context.Context, group, kind string) (*Resource, error) {
	var r Resource
	err := d.queryRow(ctx, `SELECT id, api_group, version, resource, kind, namespaced FROM resources
		WHERE api_group = ? AND kind = ? ORDER BY id LIMIT 1`, group, kind).
		Scan(&r.ID, &r.Group, &r.Version, &r.Resource, &r.Kind, &r.Namespaced)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("resource for %s/%s: %w", group, kind, err)
	}
	return &r, nil
}
