package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Change tells subscribers what a committed write did.
type Change struct {
	Type       ChangeType
	ResourceID int64
	UID        string // empty for ChangeRelisted
	// Owners of a deleted object, as its last state named them (watch
	// deletions only).
	Owners []string
	// Examined is set for a watch deletion whose commit also read
	// HasDependents and DeletingOwners. HasDependents tells whether a
	// mirrored object names the deleted one as an owner. DeletingOwners are
	// those of Owners mirrored with a deletionTimestamp: only they can be
	// waiting for it to go. Without Examined, a deletion may have
	// dependents and any owner may be waiting.
	Examined       bool
	HasDependents  bool
	DeletingOwners []string
	// OwnershipChanged is set for an upsert when the object is new to the
	// mirror, or when its ownerReferences, finalizers or deletion changed.
	// ownergc decides on these facts, and this is its contract with the
	// mirror: it looks at an upserted object again only when
	// OwnershipChanged is set. An update of anything else, such as a
	// status, a label or a Lease renewal, leaves it false.
	OwnershipChanged bool
	// TypedChanged is set for an upsert that wrote the object's typed row:
	// the object is new to the mirror, or, for a Node, its readiness,
	// taints or TTL annotation changed. It is always set for other kinds.
	// A node's status update that changes none of them leaves it false.
	TypedChanged bool
}

// ChangeType is the kind of a Change.
type ChangeType int

const (
	// ChangeUpserted: an object was created or updated.
	ChangeUpserted ChangeType = iota
	// ChangeDeleted: an object left the mirror.
	ChangeDeleted
	// ChangeRelisted: a resource was listed again in full, so anything
	// about it may have changed.
	ChangeRelisted
)

func (t ChangeType) String() string {
	switch t {
	case ChangeUpserted:
		return "upserted"
	case ChangeDeleted:
		return "deleted"
	case ChangeRelisted:
		return "relisted"
	}
	return fmt.Sprintf("ChangeType(%d)", int(t))
}

// Event is one change from a watch, to be applied to the mirror.
type Event struct {
	ResourceID int64
	Deleted    bool
	Object     *Object // for a delete only UID is needed
}

// statements holds the write statements of one transaction.
type statements struct {
	touch, update, upsert, insertNew, deleteObj, deleteRefs, insertRef *sql.Stmt
	nameOwner                                                          *sql.Stmt
	upsertPod, upsertNode, upsertLease, upsertSV, delSVEs              *sql.Stmt
	insertSVE, upsertNamespace, upsertCandidate                        *sql.Stmt
	history                                                            historyStatements
	extracted                                                          extractedStatements
}

// Write statements of the ingest path, prepared once (see warmWrites).
const (
	sqlTouch = `UPDATE objects SET sync_epoch = ?
		WHERE uid = ? AND resource_id = ? AND resource_version = ? AND extracted_hash IS ?`
	// sqlUpdate writes a new version of an object whose indexed columns and
	// extracted rows are unchanged, such as a Lease renewed or a status
	// updated. An upsert sets every column, so SQLite rewrites every index
	// entry of the row.
	sqlUpdate = `UPDATE objects
		SET resource_version = ?, deletion_grace_period_seconds = ?, finalizers = ?, sync_epoch = ?, owners_hash = ?
		WHERE uid = ? AND resource_id = ? AND api_version = ? AND kind = ? AND namespace = ? AND name = ?
			AND creation_timestamp IS ? AND deletion_timestamp IS ? AND extracted_hash IS ?`
	// A new row is named_owner when references to it were written before it
	// (see sqlNameOwner). A row already there keeps its own.
	sqlUpsert = `INSERT INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version,
			creation_timestamp, deletion_timestamp, deletion_grace_period_seconds, finalizers, sync_epoch,
			extracted_hash, owners_hash, named_owner)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, EXISTS (SELECT 1 FROM owner_refs WHERE owner_uid = ?1))
		ON CONFLICT (uid) DO UPDATE SET resource_id = excluded.resource_id, api_version = excluded.api_version,
			kind = excluded.kind, namespace = excluded.namespace, name = excluded.name,
			resource_version = excluded.resource_version, creation_timestamp = excluded.creation_timestamp,
			deletion_timestamp = excluded.deletion_timestamp,
			deletion_grace_period_seconds = excluded.deletion_grace_period_seconds,
			finalizers = excluded.finalizers, sync_epoch = excluded.sync_epoch,
			extracted_hash = excluded.extracted_hash, owners_hash = excluded.owners_hash`
	// sqlInsertNew writes the row of an object new to the mirror, as
	// sqlUpsert does, and nothing when its UID is there already. It runs
	// without foreign keys, so OR FAIL spares it a statement journal (see
	// addRefs).
	sqlInsertNew = `INSERT OR FAIL INTO objects (uid, resource_id, api_version, kind, namespace, name, resource_version,
			creation_timestamp, deletion_timestamp, deletion_grace_period_seconds, finalizers, sync_epoch,
			extracted_hash, owners_hash, named_owner)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, EXISTS (SELECT 1 FROM owner_refs WHERE owner_uid = ?1))
		ON CONFLICT (uid) DO NOTHING`
	sqlDeleteObject = `DELETE FROM objects WHERE uid = ?`
	sqlDeleteRefs   = `DELETE FROM owner_refs WHERE dependent_uid = ?`
	sqlInsertRef    = `INSERT INTO owner_refs (dependent_uid, position, api_version, kind, name, owner_uid,
			controller, block_owner_deletion, sole)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// sqlNameOwner marks the object a reference just written names. A walk
	// down the graph looks for the dependents of such objects only.
	sqlNameOwner = `UPDATE objects SET named_owner = 1 WHERE uid = ? AND named_owner = 0`
	// The typed rows are upserted, not replaced: a REPLACE deletes the row
	// and inserts it again, and checks its foreign key each time.
	sqlUpsertPod = `INSERT INTO pods (uid, phase, reason, node_name, generation) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET phase = excluded.phase, reason = excluded.reason,
			node_name = excluded.node_name, generation = excluded.generation`
	// A node's row is rewritten only when it changes, which its status
	// updates seldom do; the count of rows written tells whether it did.
	sqlUpsertNode = `INSERT INTO nodes (uid, ready, taints, ttl_annotation) VALUES (?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET ready = excluded.ready, taints = excluded.taints,
			ttl_annotation = excluded.ttl_annotation
		WHERE ready IS NOT excluded.ready OR taints IS NOT excluded.taints
			OR ttl_annotation IS NOT excluded.ttl_annotation`
	sqlUpsertLease = `INSERT INTO leases (uid, holder_identity, lease_duration_seconds, acquire_time, renew_time,
			lease_transitions, identity_label, strategy, preferred_holder)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET holder_identity = excluded.holder_identity,
			lease_duration_seconds = excluded.lease_duration_seconds, acquire_time = excluded.acquire_time,
			renew_time = excluded.renew_time, lease_transitions = excluded.lease_transitions,
			identity_label = excluded.identity_label, strategy = excluded.strategy,
			preferred_holder = excluded.preferred_holder`
	sqlUpsertCandidate = `INSERT INTO lease_candidates (uid, lease_name, binary_version, emulation_version,
			strategy, ping_time, renew_time)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET lease_name = excluded.lease_name,
			binary_version = excluded.binary_version, emulation_version = excluded.emulation_version,
			strategy = excluded.strategy, ping_time = excluded.ping_time, renew_time = excluded.renew_time`
	sqlUpsertSV = `INSERT INTO storage_versions (uid, common_encoding_version) VALUES (?, ?)
		ON CONFLICT (uid) DO UPDATE SET common_encoding_version = excluded.common_encoding_version`
	sqlDeleteSVEntries = `DELETE FROM storage_version_entries WHERE uid = ?`
	sqlInsertSVEntry   = `INSERT OR REPLACE INTO storage_version_entries (uid, api_server_id, encoding_version,
			decodable_versions, served_versions)
		VALUES (?, ?, ?, ?, ?)`
	sqlUpsertNamespace = `INSERT OR REPLACE INTO namespaces (uid, phase, spec_finalizers, conditions)
		VALUES (?, ?, ?, ?)`
)

// writeQueries are prepared at Open.
var writeQueries = append([]string{
	sqlTouch, sqlUpdate, sqlUpsert, sqlInsertNew, sqlDeleteObject, sqlDeleteRefs, sqlInsertRef, sqlNameOwner, sqlUpsertPod,
	sqlUpsertNode, sqlUpsertLease, sqlUpsertCandidate, sqlUpsertSV, sqlDeleteSVEntries, sqlInsertSVEntry,
	sqlUpsertNamespace, sqlInsertAudit, sqlDeletePending, sqlDeleteOtherPending,
	sqlInsertIntent, sqlDeleteIntent, sqlHasDependents, sqlIsDeleting,
	"SAVEPOINT w", "ROLLBACK TO w", "RELEASE w", "SAVEPOINT a", "ROLLBACK TO a", "RELEASE a",
}, append(historyWriteQueries, extractedQueries[:]...)...)

// prepare binds the write statements of the ingest path to tx.
func (d *core) prepare(ctx context.Context, tx *sql.Tx) (*statements, error) {
	s := &statements{}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.touch, sqlTouch}, {&s.update, sqlUpdate}, {&s.upsert, sqlUpsert}, {&s.insertNew, sqlInsertNew},
		{&s.deleteObj, sqlDeleteObject},
		{&s.deleteRefs, sqlDeleteRefs}, {&s.insertRef, sqlInsertRef}, {&s.nameOwner, sqlNameOwner},
		{&s.upsertPod, sqlUpsertPod}, {&s.upsertNode, sqlUpsertNode}, {&s.upsertLease, sqlUpsertLease},
		{&s.upsertSV, sqlUpsertSV}, {&s.delSVEs, sqlDeleteSVEntries}, {&s.insertSVE, sqlInsertSVEntry},
		{&s.upsertNamespace, sqlUpsertNamespace}, {&s.upsertCandidate, sqlUpsertCandidate},
	} {
		st, err := d.txStmt(ctx, tx, p.sql)
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		*p.dst = st
	}
	var err error
	if s.history, err = d.prepareHistory(ctx, tx); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	s.extracted = extractedStatements{d: d, tx: tx}
	return s, nil
}

// upsertObject writes o and everything hanging off it. It reports whether a
// fact the owner GC decides on changed (see Change.OwnershipChanged), and
// whether it wrote o's typed row (Change.TypedChanged). When
// epoch is not zero and the stored row already has o's resourceVersion, it
// only bumps the epoch, so a relist of an unchanged object costs one
// UPDATE. The extracted rows (references, kept labels and annotations,
// the rules' typed fields) are written only when their hash changed.
func (s *statements) upsertObject(ctx context.Context, resourceID, epoch int64, o *Object) (
	ownershipChanged, typedChanged bool, err error) {
	hash := o.extractedHash()
	if epoch != 0 {
		res, err := s.touch.ExecContext(ctx, epoch, o.UID, resourceID, o.ResourceVersion, hash)
		if err != nil {
			return false, false, err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return false, false, nil
		}
	}
	refs, finalizers := jsonOrNull(o.OwnerReferences), jsonOrNull(o.Finalizers)
	owners := ownersHash(refs)
	ownershipChanged, ownersChanged, err := s.history.record(ctx, o, refs, owners, finalizers, epoch == 0)
	if err != nil {
		return false, false, err
	}
	updated := false
	if !ownersChanged {
		// The row was there, with the same owners, as the history saw. Most
		// often only its version moved.
		res, err := s.update.ExecContext(ctx, o.ResourceVersion, ptrOrNull(o.DeletionGracePeriodSeconds),
			finalizers, epoch, owners, o.UID, resourceID, o.APIVersion, o.Kind, o.Namespace, o.Name,
			formatTime(o.CreationTimestamp), formatTime(o.DeletionTimestamp), hash)
		if err != nil {
			return false, false, err
		}
		n, _ := res.RowsAffected()
		updated = n == 1
	}
	extractedChanged, fresh := false, false
	if !updated {
		stored, err := s.extracted.storedHash(ctx, o.UID)
		if err != nil {
			return false, false, err
		}
		extractedChanged, fresh = !sameHash(stored, hash), !stored.Valid
		if _, err := s.upsert.ExecContext(ctx, o.UID, resourceID, o.APIVersion, o.Kind, o.Namespace, o.Name,
			o.ResourceVersion, formatTime(o.CreationTimestamp), formatTime(o.DeletionTimestamp),
			ptrOrNull(o.DeletionGracePeriodSeconds), finalizers, epoch, hash, owners); err != nil {
			return false, false, err
		}
	}
	if ownersChanged {
		if err := s.writeRefs(ctx, o); err != nil {
			return false, false, err
		}
	}
	if extractedChanged {
		if err := s.extracted.write(ctx, o, fresh); err != nil {
			return false, false, err
		}
	}
	typedChanged, err = s.upsertTyped(ctx, o)
	return ownershipChanged, typedChanged, err
}

// upsertTyped writes the typed columns of o, when its resource has them,
// and reports whether it wrote them (see Change.TypedChanged).
func (s *statements) upsertTyped(ctx context.Context, o *Object) (bool, error) {
	var err error
	switch {
	case o.Pod != nil:
		p := o.Pod
		_, err = s.upsertPod.ExecContext(ctx, o.UID, p.Phase, p.Reason, p.NodeName, p.Generation)
	case o.Node != nil:
		n := o.Node
		res, err := s.upsertNode.ExecContext(ctx, o.UID, n.Ready, jsonOrNull(n.Taints), ptrOrNull(n.TTLAnnotation))
		if err != nil {
			return false, err
		}
		written, err := res.RowsAffected()
		return written > 0, err
	case o.Lease != nil:
		l := o.Lease
		_, err = s.upsertLease.ExecContext(ctx, o.UID, ptrOrNull(l.HolderIdentity),
			ptrOrNull(l.LeaseDurationSeconds), formatTime(l.AcquireTime), formatTime(l.RenewTime),
			ptrOrNull(l.LeaseTransitions), ptrOrNull(l.IdentityLabel), ptrOrNull(l.Strategy),
			ptrOrNull(l.PreferredHolder))
	case o.LeaseCandidate != nil:
		c := o.LeaseCandidate
		_, err = s.upsertCandidate.ExecContext(ctx, o.UID, c.LeaseName, c.BinaryVersion, c.EmulationVersion,
			c.Strategy, formatTime(c.PingTime), formatTime(c.RenewTime))
	case o.StorageVersion != nil:
		err = s.upsertStorageVersion(ctx, o.UID, o.StorageVersion)
	case o.NamespaceStatus != nil:
		ns := o.NamespaceStatus
		_, err = s.upsertNamespace.ExecContext(ctx, o.UID, ns.Phase, jsonOrNull(ns.SpecFinalizers),
			jsonOrNull(ns.Conditions))
	}
	return true, err
}

// writeRefs replaces the references of o. It writes them together, so that
// each row records whether it is o's only reference (sole). The cascade's
// walk reads sole from the owner index. writeRefs also marks each owner
// mirrored as named_owner.
func (s *statements) writeRefs(ctx context.Context, o *Object) error {
	if _, err := s.deleteRefs.ExecContext(ctx, o.UID); err != nil {
		return err
	}
	return s.addRefs(ctx, o)
}

// addRefs writes the references of o, which has none in owner_refs.
func (s *statements) addRefs(ctx context.Context, o *Object) error {
	sole := len(o.OwnerReferences) == 1
	for i, r := range o.OwnerReferences {
		if _, err := s.insertRef.ExecContext(ctx, o.UID, i, r.APIVersion, r.Kind, r.Name, r.UID,
			boolOrNull(r.Controller), boolOrNull(r.BlockOwnerDeletion), sole); err != nil {
			return err
		}
		if _, err := s.nameOwner.ExecContext(ctx, r.UID); err != nil {
			return err
		}
	}
	return nil
}

func (s *statements) upsertStorageVersion(ctx context.Context, uid string, sv *StorageVersion) error {
	if _, err := s.upsertSV.ExecContext(ctx, uid, ptrOrNull(sv.CommonEncodingVersion)); err != nil {
		return err
	}
	if _, err := s.delSVEs.ExecContext(ctx, uid); err != nil {
		return err
	}
	for _, e := range sv.Entries {
		if _, err := s.insertSVE.ExecContext(ctx, uid, e.APIServerID, e.EncodingVersion,
			jsonOrNull(e.DecodableVersions), jsonOrNull(e.ServedVersions)); err != nil {
			return err
		}
	}
	return nil
}

// ApplyEvents writes a batch of watch events in one transaction and returns
// what changed.
func (d Mirror) ApplyEvents(ctx context.Context, events []Event) ([]Change, error) {
	return d.ApplyWatchEvents(ctx, 0, "", events)
}

// ApplyWatchEvents is ApplyEvents for a batch of one resource's watch. In
// the same transaction it records resourceVersion, the watch's position
// after the batch, as the point up to which the resource's mirror is
// complete (see ResumeVersion). A crash keeps both or neither.
func (d Mirror) ApplyWatchEvents(ctx context.Context, resourceID int64, resourceVersion string, events []Event) (
	[]Change, error) {
	changes := make([]Change, 0, len(events))
	err := d.inWriteTx(ctx, opEvents, func(tx *sql.Tx) error {
		changes = changes[:0]
		if resourceID != 0 {
			if err := setResumeVersion(ctx, tx, resourceID, resourceVersion); err != nil {
				return err
			}
		}
		// A batch of deletions needs one statement. The others are bound
		// only when an upsert comes.
		var s *statements
		deleteObj, err := d.txStmt(ctx, tx, sqlDeleteObject)
		if err != nil {
			return err
		}
		historyDeleted, err := d.txStmt(ctx, tx, sqlHistoryDeletedUID)
		if err != nil {
			return err
		}
		now := formatTime(ptr(d.Now()))
		for _, ev := range events {
			if ev.Deleted {
				if _, err := historyDeleted.ExecContext(ctx, now, ev.Object.UID); err != nil {
					return err
				}
				res, err := deleteObj.ExecContext(ctx, ev.Object.UID)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n > 0 {
					c, err := d.examineDeletion(ctx, tx, ev)
					if err != nil {
						return err
					}
					changes = append(changes, c)
				}
				continue
			}
			if s == nil {
				if s, err = d.prepare(ctx, tx); err != nil {
					return err
				}
			}
			c := Change{Type: ChangeUpserted, ResourceID: ev.ResourceID, UID: ev.Object.UID}
			if c.OwnershipChanged, c.TypedChanged, err = s.upsertObject(ctx, ev.ResourceID, 0, ev.Object); err != nil {
				return err
			}
			changes = append(changes, c)
		}
		if s != nil {
			return s.finish(ctx)
		}
		return nil
	})
	return changes, err
}

// examineDeletion describes the watch deletion ev, which tx has just
// written. It reads what the collectors would otherwise each read again
// after the commit: whether anything names the object as an owner, and
// which of its owners are being deleted. Two index probes in the writer's
// transaction cost less than a read each on another connection. Most
// deleted objects have no dependents and no owner waiting for them.
func (d *core) examineDeletion(ctx context.Context, tx *sql.Tx, ev Event) (Change, error) {
	c := Change{Type: ChangeDeleted, ResourceID: ev.ResourceID, UID: ev.Object.UID, Examined: true}
	st, err := d.txStmt(ctx, tx, sqlHasDependents)
	if err != nil {
		return c, err
	}
	if err := st.QueryRowContext(ctx, ev.Object.UID).Scan(&c.HasDependents); err != nil {
		return c, err
	}
	if len(ev.Object.OwnerReferences) == 0 {
		return c, nil
	}
	if st, err = d.txStmt(ctx, tx, sqlIsDeleting); err != nil {
		return c, err
	}
	for _, r := range ev.Object.OwnerReferences {
		c.Owners = append(c.Owners, r.UID)
		var deleting bool
		if err := st.QueryRowContext(ctx, r.UID).Scan(&deleting); err != nil {
			return c, err
		}
		if deleting {
			c.DeletingOwners = append(c.DeletingOwners, r.UID)
		}
	}
	return c, nil
}

const (
	sqlHasDependents = `SELECT EXISTS (SELECT 1 FROM owner_refs WHERE owner_uid = ?)`
	sqlIsDeleting    = `SELECT EXISTS (SELECT 1 FROM objects WHERE uid = ? AND deletion_timestamp IS NOT NULL)`
)

// EnsureResource records a watched resource and returns its id. It starts
// out unsynced. When the resource's objects were extracted another way
// (Extraction or KeptKeys changed), its resume point is dropped, so that
// it is listed again; when Extraction changed, its first_synced_at too.
func (d Mirror) EnsureResource(ctx context.Context, r Resource) (int64, error) {
	var id int64
	err := d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		// Every SET reads the row as it was before the update.
		return tx.QueryRowContext(ctx, `INSERT INTO resources
				(api_group, version, resource, kind, namespaced, short_names, synced, extraction, kept_keys)
			VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)
			ON CONFLICT (api_group, version, resource) DO UPDATE SET kind = excluded.kind,
				namespaced = excluded.namespaced, short_names = excluded.short_names, synced = 0,
				resume_resource_version = CASE WHEN extraction = excluded.extraction
					AND kept_keys = excluded.kept_keys THEN resume_resource_version ELSE '' END,
				first_synced_at = CASE WHEN extraction = excluded.extraction THEN first_synced_at END,
				extraction = excluded.extraction, kept_keys = excluded.kept_keys
			RETURNING id`,
			r.Group, r.Version, r.Resource, r.Kind, r.Namespaced, jsonOrNull(r.ShortNames), r.Extraction,
			r.KeptKeys).Scan(&id)
	})
	return id, err
}

// SetSynced records whether a resource's mirror is live.
func (d Mirror) SetSynced(ctx context.Context, resourceID int64, synced bool) error {
	return d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE resources SET synced = ? WHERE id = ?`, synced, resourceID)
		return err
	})
}

// MarkAllUnsynced marks every resource unsynced. It runs at start: nothing
// in the mirror is live until its resource has been listed again.
func (d Mirror) MarkAllUnsynced(ctx context.Context) error {
	return d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE resources SET synced = 0`)
		return err
	})
}

// BeginList starts a full list of a resource and returns its epoch.
// FinishList keeps every object written with that epoch and removes every
// other one. Until FinishList the resource has no resume point, so a start
// meanwhile lists it again. A resource with no object when its list
// begins is filled by the first-fill path (see firstFill).
func (d Mirror) BeginList(ctx context.Context, resourceID int64) (int64, error) {
	var epoch int64
	err := d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE resources
			SET sync_epoch = sync_epoch + 1, resume_resource_version = ''
			WHERE id = ? RETURNING sync_epoch`, resourceID).Scan(&epoch)
		if err != nil {
			return err
		}
		var empty bool
		if err := tx.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT 1 FROM objects WHERE resource_id = ?)`,
			resourceID).Scan(&empty); err != nil {
			return err
		}
		d.lists.begin(resourceID, epoch, empty)
		return nil
	})
	return epoch, err
}

// SetResumeVersion records that the mirror of a resource holds every
// change up to resourceVersion, as a watch bookmark with no events tells.
func (d Mirror) SetResumeVersion(ctx context.Context, resourceID int64, resourceVersion string) error {
	return d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		return setResumeVersion(ctx, tx, resourceID, resourceVersion)
	})
}

// setResumeVersion records in tx what SetResumeVersion does.
func setResumeVersion(ctx context.Context, tx *sql.Tx, resourceID int64, resourceVersion string) error {
	_, err := tx.ExecContext(ctx, `UPDATE resources SET resume_resource_version = ? WHERE id = ?`,
		resourceVersion, resourceID)
	return err
}

// ForgetResumePoints clears every resource's resume point, so the next
// start lists each resource. The mirror may be another cluster's, so what
// it says of when references were seen says nothing of this one:
// first_synced_at starts over too.
func (d Mirror) ForgetResumePoints(ctx context.Context) error {
	return d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE resources SET resume_resource_version = '', first_synced_at = NULL`)
		return err
	})
}

// NamespaceUID returns the UID of the mirrored namespace name, "" when the
// mirror has none.
func (d Mirror) NamespaceUID(ctx context.Context, name string) (string, error) {
	var uid string
	err := d.queryRow(ctx, `SELECT uid FROM objects WHERE kind = 'Namespace' AND namespace = '' AND name = ?`,
		name).Scan(&uid)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return uid, err
}

// ResumeVersion returns the resourceVersion up to which the mirror of a
// resource holds every change. A watch may resume from it. It is "" when
// only a list will do.
func (d Mirror) ResumeVersion(ctx context.Context, resourceID int64) (string, error) {
	var rv string
	err := d.read.QueryRowContext(ctx, `SELECT resume_resource_version FROM resources WHERE id = ?`,
		resourceID).Scan(&rv)
	return rv, err
}

// WriteListPage writes one page of a list, or several (ingest writes
// 5,000 objects at a time). The writer keeps a large page cache from the
// first page of a list until the last list under way ends (see
// growCache).
func (d Mirror) WriteListPage(ctx context.Context, resourceID, epoch int64, objs []*Object) error {
	// The page's caller waits for it, so the list it belongs to is still
	// the one under way when it runs.
	fresh, op := d.lists.isFresh(resourceID, epoch), opList
	if fresh {
		op = opFirstFill
	}
	return d.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		if err := d.growCache(ctx, tx); err != nil {
			return err
		}
		s, err := d.prepare(ctx, tx)
		if err != nil {
			return err
		}
		if fresh {
			s.extracted.reserve(objs)
		}
		for _, o := range objs {
			if fresh {
				if err := s.firstFill(ctx, resourceID, epoch, o); err != nil {
					return err
				}
				d.lists.filled++
				continue
			}
			if _, _, err := s.upsertObject(ctx, resourceID, epoch, o); err != nil {
				return err
			}
		}
		return s.finish(ctx)
	})
}

// FinishList removes the objects of a resource that the list at epoch did
// not return, marks the resource synced, and returns the removed objects.
// The first list to finish sets first_synced_at; later ones keep it.
func (d Mirror) FinishList(ctx context.Context, resourceID, epoch int64, resourceVersion string) ([]Change, error) {
	var changes []Change
	err := d.inWriteTx(ctx, opList, func(tx *sql.Tx) error {
		var err error
		changes, err = d.deleteObjects(ctx, tx, resourceID,
			`DELETE FROM objects WHERE resource_id = ? AND sync_epoch <> ?`, resourceID, epoch)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE resources SET synced = 1, synced_at = ?1, list_resource_version = ?2,
			resume_resource_version = ?2, first_synced_at = coalesce(first_synced_at, ?1) WHERE id = ?3`,
			formatTime(ptr(d.Now())), resourceVersion, resourceID)
		if err != nil {
			return err
		}
		if d.lists.end(resourceID) {
			return d.shrinkCache(ctx, tx)
		}
		return nil
	})
	changes = append(changes, Change{Type: ChangeRelisted, ResourceID: resourceID})
	return changes, err
}

// DeleteResource forgets a resource that is no longer served, with all its
// objects, and returns the removed objects.
func (d Mirror) DeleteResource(ctx context.Context, resourceID int64) ([]Change, error) {
	var changes []Change
	err := d.inWriteTx(ctx, opResource, func(tx *sql.Tx) error {
		var err error
		changes, err = d.deleteObjects(ctx, tx, resourceID, `DELETE FROM objects WHERE resource_id = ?`,
			resourceID)
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `DELETE FROM resources WHERE id = ?`, resourceID); err != nil {
			return err
		}
		if d.lists.end(resourceID) {
			return d.shrinkCache(ctx, tx)
		}
		return nil
	})
	return changes, err
}

// deleteObjects runs a DELETE of objects, records their deletion in the
// history, and reports each removed object of the resource as a deletion.
// The history rows come from what the DELETE returns, so a relist that
// removes nothing reads nothing more.
func (d *core) deleteObjects(ctx context.Context, tx *sql.Tx, resourceID int64, query string, args ...any) (
	[]Change, error) {
	rows, err := tx.QueryContext(ctx, query+` RETURNING `+goneColumns, args...)
	if err != nil {
		return nil, err
	}
	gone, err := scanGone(rows)
	if err != nil {
		return nil, err
	}
	if err := d.recordGone(ctx, tx, gone); err != nil {
		return nil, err
	}
	changes := make([]Change, 0, len(gone))
	for _, g := range gone {
		changes = append(changes, Change{Type: ChangeDeleted, ResourceID: resourceID, UID: g.uid})
	}
	return changes, nil
}

// Resources lists every recorded resource.
func (d Mirror) Resources(ctx context.Context) ([]Resource, error) {
	rows, err := d.query(ctx, `SELECT id, api_group, version, resource, kind, namespaced FROM resources`)
	if err != nil {
		return nil, fmt.Errorf("resources: %w", err)
	}
	defer rows.Close()
	var out []Resource
	for rows.Next() {
		var r Resource
		if err := rows.Scan(&r.ID, &r.Group, &r.Version, &r.Resource, &r.Kind, &r.Namespaced); err != nil {
			return nil, fmt.Errorf("resources: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
