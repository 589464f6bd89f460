package api

import (
	"encoding/json"
	"time"
)

// DeletedCopy is the copy of an object kubegcd deleted, kept so that an
// operator can restore it, as GET /deleted-copies lists it.
type DeletedCopy struct {
	// The deleted object, with its UID.
	Target Target `json:"target"`
	// The plural resource that served it, such as configmaps.
	Resource string `json:"resource"`
	// The controller that deleted it: rules, or a collector --deleted-copies-for
	// names.
	Controller Controller `json:"controller"`
	// The id of the cleanup rule that deleted it; absent for a collector.
	Rule string `json:"rule,omitempty"`
	// The hash of the rule's text when it deleted it; absent for a collector.
	RuleHash string `json:"ruleHash,omitempty"`
	// When the copy was taken, just before the delete was sent.
	TakenAt time.Time `json:"takenAt"`
	// The copy's size in the database, compressed, in bytes.
	Size int64 `json:"size"`
	// True when the object is a Secret whose data was not kept
	// (--keep-deleted-secrets was off). Absent when not.
	SecretDataDropped bool `json:"secretDataDropped,omitempty"`
	// The UID of the object a restore made from the copy; absent until then.
	RestoredUID string `json:"restoredUID,omitempty"`
	// When it was restored; absent until then.
	RestoredAt *time.Time `json:"restoredAt,omitempty"`
	// Who asked for the restore; absent until then.
	RestoredBy string `json:"restoredBy,omitempty"`
}

// DeletedCopyList is the answer of GET /deleted-copies: newest first,
// without the objects.
type DeletedCopyList struct {
	// The copies of this page; [] when none matched.
	Items []DeletedCopy `json:"items"`
	// The cursor of the following (older) page, for ?cursor=; empty at the end.
	Next string `json:"next,omitempty"`
}

// DeletedCopyDetail is the answer of GET /deleted-copies/{uid}: one copy
// and the object it holds.
type DeletedCopyDetail struct {
	// What is known of the copy, as the list shows it.
	Copy DeletedCopy `json:"copy"`
	// The object as it was read just before its deletion. A Secret's data and
	// stringData are left out unless --keep-deleted-secrets was on.
	Object json.RawMessage `json:"object"`
}

// RestoreRequest is the body of POST /objects/{uid}/restore. It is sent as
// application/json; an empty body asks for nothing more.
type RestoreRequest struct {
	// True restores a Secret whose copy holds no data, because it was deleted
	// without --keep-deleted-secrets: the Secret is created without data.
	// Without it such a restore is refused (409).
	AllowEmptySecret bool `json:"allowEmptySecret,omitempty"`
}

// RestoreResult is the answer of a restore made (201).
type RestoreResult struct {
	// The object re-created, with its new UID.
	Target Target `json:"target"`
	// The UID of the deleted object whose copy it was made from.
	DeletedUID string `json:"deletedUID"`
	// The ownerReferences left out because their owner no longer exists; absent
	// when none.
	DroppedOwnerReferences []OwnerRef `json:"droppedOwnerReferences,omitempty"`
	// True when the object is a Secret created without data, because its copy
	// held none. Absent when not.
	SecretDataEmpty bool `json:"secretDataEmpty,omitempty"`
	// Set when the object was created but recording the restore failed: what
	// failed. Absent when not.
	Warning string `json:"warning,omitempty"`
}

// Restoration links an object restored from a copy and the deleted object
// the copy was taken of.
type Restoration struct {
	// The deleted object's UID.
	DeletedUID string `json:"deletedUID"`
	// The restored object's UID.
	RestoredUID string `json:"restoredUID"`
	// The controller that deleted it: rules, or a collector.
	DeletedBy Controller `json:"deletedBy"`
	// The id of the cleanup rule that deleted it; absent for a collector.
	Rule string `json:"rule,omitempty"`
	// When the copy was taken, just before the delete.
	TakenAt time.Time `json:"takenAt"`
	// When it was restored.
	RestoredAt *time.Time `json:"restoredAt,omitempty"`
	// Who asked for the restore.
	RestoredBy string `json:"restoredBy,omitempty"`
}

// SparedBy is a cleanup rule that leaves an object alone: the object was
// restored from the copy of one the rule deleted.
type SparedBy struct {
	// The rule's id.
	Rule string `json:"rule"`
	// The hash of the rule's text when it deleted the original. The rule spares
	// the object while its text hashes to this; a changed rule may delete it
	// again.
	RuleHash string `json:"ruleHash"`
	// When the restore made it spared.
	Since time.Time `json:"since"`
}
