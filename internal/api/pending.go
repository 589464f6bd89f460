package api

import "time"

// Pending is a decision a controller holds and has not (yet) applied, as
// GET /pending lists it.
type Pending struct {
	// Controller is the controller that holds the decision.
	Controller string `json:"controller"`
	// Rule names the rule that decided.
	Rule string `json:"rule"`
	// Action is one of the Action* names.
	Action string `json:"action"`
	// Reason says, in one sentence, why.
	Reason string `json:"reason"`
	// Since is when the controller first made the decision.
	Since time.Time `json:"since"`
	// NotBefore, when set, is the earliest time the decision may be acted
	// on: the end of a quarantine or of a back-off.
	NotBefore *time.Time `json:"notBefore,omitempty"`
	// Target is the object decided on.
	Target Target `json:"target"`
	// TimeLeft is how long from the answer to NotBefore, as a Go
	// duration ("1h0m0s"); absent without NotBefore.
	TimeLeft string `json:"timeLeft,omitempty"`
}

// PendingList is the answer of GET /pending.
type PendingList struct {
	// Items are the decisions of this page, oldest first unless
	// ?order=newest.
	Items []Pending `json:"items"`
	// Next is the cursor of the following page, in the same order, for
	// ?cursor=: opaque, and refused with the other order. Empty at the end.
	Next string `json:"next,omitempty"`
}

// Orders of GET /pending.
const (
	PendingOldest = "oldest"
	PendingNewest = "newest"
)
