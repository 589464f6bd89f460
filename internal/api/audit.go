package api

import (
	"encoding/json"
	"time"
)

// AuditEntry is one decision in the audit history, as GET /audit lists it.
type AuditEntry struct {
	// ID orders the history: a later decision has a greater id.
	ID int64 `json:"id"`
	// Time is when the decision was recorded.
	Time time.Time `json:"time"`
	// Instance is the identity of the kubegcd that decided.
	Instance string `json:"instance"`
	// Controller is one of the controllers, or kubegcd or operator
	// for the rows about enforcement itself: a hold, a release, the audit
	// store writable again.
	Controller string `json:"controller"`
	// Rule names the rule of the controller that decided; empty for the
	// pseudo-controllers kubegcd and operator.
	Rule string `json:"rule"`
	// Action is one of the Action* names.
	Action string `json:"action"`
	// Target is the object decided on; empty for kubegcd and operator.
	Target Target `json:"target"`
	// Facts are what the rule saw when it decided, as the rule records
	// them; absent when it records none.
	Facts json.RawMessage `json:"facts,omitempty"`
	// Reason says, in one sentence, why.
	Reason string `json:"reason"`
	// DryRun: the decision was only recorded, not sent to the cluster.
	DryRun bool `json:"dryRun"`
	// Outcome says what came of the decision: applied, dry-run, failed,
	// conflict or not-found; skipped for a decision that needs no write;
	// unknown for a write sent just before kubegcd died, whose object was
	// still there at the next start. An unknown write may or may not have
	// reached the API server, and the decision is pending again.
	Outcome string `json:"outcome"`
	// Error is the API server's refusal of a failed write; empty otherwise.
	Error string `json:"error"`
}

// AuditList is the answer of GET /audit: newest first.
type AuditList struct {
	// Items are the decisions of this page; [] when none matched.
	Items []AuditEntry `json:"items"`
	// Next is the cursor of the following (older) page, for ?cursor=;
	// empty at the end.
	Next string `json:"next,omitempty"`
}
