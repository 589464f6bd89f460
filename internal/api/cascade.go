package api

// What a cascade preview says the garbage collector does to each object
// (CascadeItem.Action).
const (
	CascadeDelete = "delete"
	// CascadeRemoveOwnerRef: the collector removes the object's
	// references to owners that go, and keeps the object.
	CascadeRemoveOwnerRef = "remove-owner-reference"
	// CascadeKeep: the collector does not delete the object, because it
	// is being deleted already or cannot be decided on.
	CascadeKeep = "keep"
)

// Cascade is the answer of /objects/{uid}/cascade: what the garbage
// collector would do if the object were deleted now with ?propagation=,
// from kubegcd's mirror alone. Nothing is deleted.
type Cascade struct {
	// Items are the objects the collector would act on, the root left
	// out, by Depth, then namespace, kind, name and UID. An untouched
	// object is not listed.
	Items []CascadeItem `json:"items"`
	// Total is the number of items.
	Total int `json:"total"`
	// ByKind counts the items by kind (Kind, or Kind.group) and action.
	ByKind map[string]map[string]int `json:"byKind"`
	// BlockedBy are the dependents that a foreground deletion (of the
	// root, or of an object the preview deletes in the foreground) waits
	// for, by owner, then dependent.
	BlockedBy []CascadeBlocker `json:"blockedBy"`
	// Truncated: the root has more transitive dependents than ?limit=
	// let the preview look at.
	Truncated bool `json:"truncated"`
}

// CascadeItem is what the garbage collector would do to one object.
type CascadeItem struct {
	// Target is the object acted on.
	Target Target `json:"target"`
	// Action is delete, remove-owner-reference (the collector removes
	// the object's references to owners that go, and keeps it) or keep
	// (it is being deleted already or cannot be decided on).
	Action string `json:"action"`
	// Rule is the garbage-collection rule that decides it (BR-21-01…);
	// absent when none does.
	Rule string `json:"rule,omitempty"`
	// Propagation of a delete: how the object's own dependents go
	// (Background, Foreground or Orphan). Absent for other actions.
	Propagation string `json:"propagation,omitempty"`
	// Reason says in words why.
	Reason string `json:"reason"`
	// Depth is 1 for the root's dependents, 2 for theirs, and so on: the
	// shortest chain of deleted owners from the root.
	Depth int `json:"depth"`
}

// CascadeBlocker is a dependent that an owner deleted in the foreground
// must wait for: it keeps blockOwnerDeletion on its reference.
type CascadeBlocker struct {
	// Target is the dependent.
	Target Target `json:"target"`
	// Owner is the object whose foreground deletion it holds.
	Owner Target `json:"owner"`
	// Finalizers are those of its own that hold it once deleted; an empty
	// list when none does.
	Finalizers []string `json:"finalizers"`
	// Reason says in words what it waits for.
	Reason string `json:"reason"`
}
