package api

// CascadeAction is what a cascade preview says the garbage collector does
// to one object.
type CascadeAction string

// What a cascade preview says the garbage collector does to each object
// (CascadeItem.Action).
const (
	CascadeDelete CascadeAction = "delete"
	// CascadeRemoveOwnerRef: the collector removes the object's
	// references to owners that go, and keeps the object.
	CascadeRemoveOwnerRef CascadeAction = "remove-owner-reference"
	// CascadeKeep: the collector does not delete the object, because it
	// is being deleted already or cannot be decided on.
	CascadeKeep CascadeAction = "keep"
)

// CascadeActions lists what a cascade preview may do to an object.
var CascadeActions = []CascadeAction{CascadeDelete, CascadeRemoveOwnerRef, CascadeKeep}

// Cascade is the answer of /objects/{uid}/cascade: what the garbage
// collector would do if the object were deleted now with ?propagation=,
// from kubegcd's mirror alone. Nothing is deleted.
type Cascade struct {
	// The objects the collector would act on, the root left out, by depth, then
	// namespace, kind, name and UID. An untouched object is not listed.
	Items []CascadeItem `json:"items"`
	// The number of items.
	Total int `json:"total"`
	// The number of items of each kind (Kind, or Kind.group) and action.
	ByKind map[string]map[CascadeAction]int `json:"byKind"`
	// The dependents that a foreground deletion waits for, by owner, then
	// dependent. The deletion is that of the root, or of an object the preview
	// deletes in the foreground.
	BlockedBy []CascadeBlocker `json:"blockedBy"`
	// True when the root has more transitive dependents than ?limit= let the
	// preview look at.
	Truncated bool `json:"truncated"`
}

// CascadeItem is what the garbage collector would do to one object.
type CascadeItem struct {
	// The object acted on.
	Target Target `json:"target"`
	// What the collector would do: delete, remove-owner-reference (it removes
	// the object's references to owners that go, and keeps the object) or keep
	// (the object is being deleted already or cannot be decided on).
	Action CascadeAction `json:"action"`
	// The garbage-collection rule that decides it (BR-21-01…); absent when
	// none does.
	Rule string `json:"rule,omitempty"`
	// How the object's own dependents go when it is deleted: Background,
	// Foreground or Orphan. Absent for other actions.
	Propagation string `json:"propagation,omitempty"`
	// Why the collector would do so, in words.
	Reason string `json:"reason"`
	// The length of the shortest chain of deleted owners from the root: 1 for
	// the root's dependents, 2 for theirs, and so on.
	Depth int `json:"depth"`
}

// CascadeBlocker is a dependent that an owner deleted in the foreground
// must wait for: it keeps blockOwnerDeletion on its reference.
type CascadeBlocker struct {
	// The dependent.
	Target Target `json:"target"`
	// The object whose foreground deletion the dependent holds.
	Owner Target `json:"owner"`
	// The dependent's own finalizers that hold it once it is deleted; an empty
	// list when none does.
	Finalizers []string `json:"finalizers"`
	// What the dependent waits for, in words.
	Reason string `json:"reason"`
}
