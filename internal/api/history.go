package api

import "time"

// HistoryEvent is what changed in an object's lifecycle.
type HistoryEvent string

// Events of an object's history (HistoryItem.Event).
const (
	// HistoryCreated: first seen by kubegcd. On a fresh database's first
	// list, that is every object.
	HistoryCreated           HistoryEvent = "created"
	HistoryOwnersChanged     HistoryEvent = "owners-changed"
	HistoryFinalizersChanged HistoryEvent = "finalizers-changed"
	HistoryDeletionRequested HistoryEvent = "deletion-requested"
	HistoryDeleted           HistoryEvent = "deleted"
	// HistoryHolderChanged: a Lease's holder changed, or its holder
	// renewed it after it ran out.
	HistoryHolderChanged HistoryEvent = "holder-changed"
	// HistoryPreferredHolderChanged: a Lease's preferred holder, the one
	// the election controller of coordinated leader election wants next,
	// changed.
	HistoryPreferredHolderChanged HistoryEvent = "preferred-holder-changed"
)

// HistoryEvents lists the events of an object's history.
var HistoryEvents = []HistoryEvent{HistoryCreated, HistoryOwnersChanged, HistoryFinalizersChanged,
	HistoryDeletionRequested, HistoryDeleted, HistoryHolderChanged, HistoryPreferredHolderChanged}

// HistoryItem is one change kubegcd saw in an object's lifecycle, with the
// object's ownership after it.
type HistoryItem struct {
	// When kubegcd saw the change.
	Time time.Time `json:"time"`
	// What changed: created (first seen by kubegcd), owners-changed,
	// finalizers-changed, deletion-requested, deleted, or for a Lease
	// holder-changed and preferred-holder-changed.
	Event HistoryEvent `json:"event"`
	// The object's ownerReferences after the change, or its last ones on
	// deleted; an empty list when it has none.
	OwnerReferences []ObjectOwnerRef `json:"ownerReferences"`
	// The object's finalizers after the change; an empty list when it has none.
	Finalizers []string `json:"finalizers"`
	// The object's deletionTimestamp after the change; null while it is not
	// being deleted.
	DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	// A Lease's holderIdentity after the change ("" when none); absent for
	// other kinds.
	Holder *string `json:"holder,omitempty"`
	// Since when the holder held the Lease, on a Lease's created and
	// holder-changed items. It is the acquireTime, or the renewTime when the
	// holder renewed a lapsed lease.
	HolderSince *time.Time `json:"holderSince,omitempty"`
	// When the lease had run out before, on a Lease's holder-changed item, if a
	// watch saw it run out. It is the previous renewTime plus
	// leaseDurationSeconds.
	LapsedAt *time.Time `json:"lapsedAt,omitempty"`
	// A Lease's spec.preferredHolder after the change ("" when none), under
	// coordinated leader election. Absent for other kinds and on items recorded
	// before kubegcd kept it.
	PreferredHolder *string `json:"preferredHolder,omitempty"`
}

// ObjectHistory is the answer of /objects/{uid}/history: an object's
// lifecycle and the decisions about it, also after it is gone.
type ObjectHistory struct {
	// The object as its latest history item names it; null when only audit rows
	// know it.
	Target *Target `json:"target"`
	// The changes kubegcd saw, oldest first, each with the object's state after
	// it.
	Items []HistoryItem `json:"items"`
	// The newest 100 decisions about the object, newest first, as /audit shows
	// them.
	Audit []AuditEntry `json:"audit"`
	// True when there are more audit rows; /audit?uid= pages through them.
	// Absent when not.
	AuditTruncated bool `json:"auditTruncated,omitempty"`
	// The deleted object it was restored from (kubegcd restore); absent when a
	// restore did not make it.
	RestoredFrom *Restoration `json:"restoredFrom,omitempty"`
	// The object a restore made from the copy of this one, once it is deleted;
	// absent when none did.
	RestoredAs *Restoration `json:"restoredAs,omitempty"`
}
