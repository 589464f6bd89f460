package api

import "time"

// States of a stuck deletion.
const (
	// StateNamespaceTerminating: a namespace waits for its content to go.
	StateNamespaceTerminating = "namespace-terminating"
	// StateDeletingDependents: a foreground deletion waits for dependents.
	StateDeletingDependents = "deleting-dependents"
	// StateOrphaningDependents: an orphan deletion waits for the garbage
	// collector to remove the ownerReferences to it.
	StateOrphaningDependents = "orphaning-dependents"
	// StateFinalizing: finalizers wait for their controllers.
	StateFinalizing = "finalizing"
	// StateDeleting: nothing named holds it.
	StateDeleting = "deleting"
)

// StuckItem is a deletion that has not finished, and why.
type StuckItem struct {
	// Target is the object being deleted.
	Target Target `json:"target"`
	// DeletionRequested is its deletionTimestamp less its grace period.
	DeletionRequested time.Time `json:"deletionRequested"`
	// Age is the seconds since deletion was requested.
	Age float64 `json:"age"`
	// State says what the deletion waits for: a namespace's content
	// (namespace-terminating), dependents of a foreground deletion
	// (deleting-dependents), the removal of references to an orphaning
	// owner (orphaning-dependents), finalizers (finalizing), or nothing
	// named (deleting).
	State string `json:"state"`
	// Blockers are what hold the deletion.
	Blockers []Blocker `json:"blockers"`
	// Conditions are a namespace's status conditions as mirrored: what
	// the namespace controller reports of its deletion. Absent for other
	// kinds.
	Conditions []Condition `json:"conditions,omitempty"`
	// Explanation says in sentences what holds it and what would release
	// it.
	Explanation string `json:"explanation"`
}

// Condition is a status condition as the Kubernetes API shows it.
type Condition struct {
	// Type names the condition, such as NamespaceContentRemaining.
	Type string `json:"type"`
	// Status is "True", "False" or "Unknown".
	Status string `json:"status"`
	// Reason says in a word why; it may be absent.
	Reason string `json:"reason,omitempty"`
	// Message says it in a sentence; it may be absent.
	Message string `json:"message,omitempty"`
}

// StuckList is the answer of GET /stuck, oldest deletion first.
type StuckList struct {
	// Items are the deletions at least MinAge old, oldest first.
	Items []StuckItem `json:"items"`
	// Truncated: more deletions matched than ?limit= allowed.
	Truncated bool `json:"truncated"`
	// MinAge is the age a deletion reached to be listed: ?minAge=, else
	// --stuck-after, as a Go duration ("5m0s"; "0s" lists every deletion).
	MinAge string `json:"minAge"`
}
