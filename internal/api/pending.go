package api

import "time"

// Pending is a decision a controller holds and has not (yet) applied, as
// GET /pending lists it.
type Pending struct {
	// The controller that holds the decision.
	Controller Controller `json:"controller"`
	// The rule that decided.
	Rule string `json:"rule"`
	// What the controller would do, such as delete, remove-owner-refs or
	// remove-finalizer.
	Action Action `json:"action"`
	// Why the controller decided so, in one sentence.
	Reason string `json:"reason"`
	// When the controller first made the decision.
	Since time.Time `json:"since"`
	// The earliest time the decision may be acted on: the end of a quarantine
	// or of a back-off. Absent when it may be acted on now.
	NotBefore *time.Time `json:"notBefore,omitempty"`
	// The object decided on.
	Target Target `json:"target"`
	// How long from the answer to notBefore, as a Go duration ("1h0m0s");
	// absent without notBefore.
	TimeLeft string `json:"timeLeft,omitempty"`
}

// PendingList is the answer of GET /pending.
type PendingList struct {
	// The decisions of this page, oldest first unless ?order=newest.
	Items []Pending `json:"items"`
	// The cursor of the following page, in the same order, for ?cursor=:
	// opaque, and refused with the other order. Empty at the end.
	Next string `json:"next,omitempty"`
}

// Orders of GET /pending.
const (
	PendingOldest = "oldest"
	PendingNewest = "newest"
)
