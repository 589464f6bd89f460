package api

import "time"

// Events of an object's history (HistoryItem.Event).
const (
	// HistoryCreated: first seen by kubegcd. On a fresh database's first
	// list, that is every object.
	HistoryCreated           = "created"
	HistoryOwnersChanged     = "owners-changed"
	HistoryFinalizersChanged = "finalizers-changed"
	HistoryDeletionRequested = "deletion-requested"
	HistoryDeleted           = "deleted"
	// HistoryHolderChanged: a Lease's holder changed, or its holder
	// renewed it after it ran out.
	HistoryHolderChanged = "holder-changed"
	// HistoryPreferredHolderChanged: a Lease's preferred holder, the one
	// the election controller of coordinated leader election wants next,
	// changed.
	HistoryPreferredHolderChanged = "preferred-holder-changed"
)

// HistoryItem is one change kubegcd saw in an object's lifecycle, with the
// object's ownership after it.
type HistoryItem struct {
	// Time is when kubegcd saw the change.
	Time time.Time `json:"time"`
	// Event is what changed: created (first seen by kubegcd),
	// owners-changed, finalizers-changed, deletion-requested, deleted, or
	// for a Lease holder-changed and preferred-holder-changed.
	Event string `json:"event"`
	// OwnerReferences are the object's after the change (on deleted, its
	// last); an empty list when it has none.
	OwnerReferences []ObjectOwnerRef `json:"ownerReferences"`
	// Finalizers are the object's after the change; an empty list when it
	// has none.
	Finalizers []string `json:"finalizers"`
	// DeletionTimestamp is the object's after the change; null while it
	// is not being deleted.
	DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	// Holder is a Lease's holderIdentity after the change ("" when none);
	// absent for other kinds.
	Holder *string `json:"holder,omitempty"`
	// HolderSince is, on a Lease's created and holder-changed items, since
	// when its holder held it (acquireTime, or renewTime when it renewed a
	// lapsed lease).
	HolderSince *time.Time `json:"holderSince,omitempty"`
	// LapsedAt is, on a Lease's holder-changed item, when the lease had
	// run out before (its previous renewTime plus leaseDurationSeconds), if
	// a watch saw it run out.
	LapsedAt *time.Time `json:"lapsedAt,omitempty"`
	// PreferredHolder is a Lease's spec.preferredHolder after the change
	// ("" when none), under coordinated leader election; absent for other
	// kinds and on items recorded before kubegcd kept it.
	PreferredHolder *string `json:"preferredHolder,omitempty"`
}

// ObjectHistory is the answer of /objects/{uid}/history: an object's
// lifecycle and the decisions about it, also after it is gone.
type ObjectHistory struct {
	// Target is the object as its latest history item names it; null when
	// only audit rows know it.
	Target *Target `json:"target"`
	// Items are the changes kubegcd saw, oldest first, each with the
	// object's state after it.
	Items []HistoryItem `json:"items"`
	// Audit holds the newest 100 decisions about the object, newest first,
	// as /audit shows them.
	Audit []AuditEntry `json:"audit"`
	// AuditTruncated: there are more audit rows; /audit?uid= pages
	// through them. Absent when not.
	AuditTruncated bool `json:"auditTruncated,omitempty"`
}
