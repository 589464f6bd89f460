package api

import "time"

// StuckState is what a stuck deletion waits for.
type StuckState string

// States of a stuck deletion.
const (
	// StateNamespaceTerminating: a namespace waits for its content to go.
	StateNamespaceTerminating StuckState = "namespace-terminating"
	// StateDeletingDependents: a foreground deletion waits for dependents.
	StateDeletingDependents StuckState = "deleting-dependents"
	// StateOrphaningDependents: an orphan deletion waits for the garbage
	// collector to remove the ownerReferences to it.
	StateOrphaningDependents StuckState = "orphaning-dependents"
	// StateFinalizing: finalizers wait for their controllers.
	StateFinalizing StuckState = "finalizing"
	// StateDeleting: nothing named holds it.
	StateDeleting StuckState = "deleting"
)

// StuckStates lists the states of a stuck deletion.
var StuckStates = []StuckState{StateNamespaceTerminating, StateDeletingDependents, StateOrphaningDependents,
	StateFinalizing, StateDeleting}

// StuckItem is a deletion that has not finished, and why.
type StuckItem struct {
	// The object being deleted.
	Target Target `json:"target"`
	// When the deletion was requested: the deletionTimestamp less its grace
	// period.
	DeletionRequested time.Time `json:"deletionRequested"`
	// The seconds since deletion was requested.
	Age float64 `json:"age"`
	// What the deletion waits for: a namespace's content
	// (namespace-terminating), dependents of a foreground deletion
	// (deleting-dependents), the removal of references to an orphaning owner
	// (orphaning-dependents), finalizers (finalizing), or nothing named
	// (deleting).
	State StuckState `json:"state"`
	// What holds the deletion.
	Blockers []Blocker `json:"blockers"`
	// A namespace's status conditions as mirrored: what the namespace
	// controller reports of its deletion. Absent for other kinds.
	Conditions []Condition `json:"conditions,omitempty"`
	// What holds the deletion and what would release it, in sentences.
	Explanation string `json:"explanation"`
}

// Condition is a status condition as the Kubernetes API shows it.
type Condition struct {
	// The condition's name, such as NamespaceContentRemaining.
	Type string `json:"type"`
	// The condition's status: "True", "False" or "Unknown".
	Status string `json:"status"`
	// Why, in a word; it may be absent.
	Reason string `json:"reason,omitempty"`
	// Why, in a sentence; it may be absent.
	Message string `json:"message,omitempty"`
}

// StuckList is the answer of GET /stuck, oldest deletion first.
type StuckList struct {
	// The deletions at least minAge old, oldest first.
	Items []StuckItem `json:"items"`
	// True when more deletions matched than ?limit= allowed.
	Truncated bool `json:"truncated"`
	// The age a deletion reached to be listed: ?minAge=, else --stuck-after, as
	// a Go duration ("5m0s"; "0s" lists every deletion).
	MinAge string `json:"minAge"`
}
