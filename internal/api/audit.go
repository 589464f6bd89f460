package api

import (
	"encoding/json"
	"time"
)

// AuditEntry is one decision in the audit history, as GET /audit lists it.
type AuditEntry struct {
	// The row's place in the history: a later decision has a greater id.
	ID int64 `json:"id"`
	// When the decision was recorded.
	Time time.Time `json:"time"`
	// The identity of the kubegcd instance that decided.
	Instance string `json:"instance"`
	// The controller that decided. The rows about enforcement itself (a hold, a
	// release, the audit store writable again) and an operator's restore name
	// kubegcd or operator instead.
	Controller Controller `json:"controller"`
	// The rule of the controller that decided; empty for the pseudo-controllers
	// kubegcd and operator.
	Rule string `json:"rule"`
	// What was decided, such as delete, remove-owner-refs or remove-finalizer.
	// The rows of kubegcd and operator say pause, resume, release or restore.
	Action Action `json:"action"`
	// The object decided on; empty for kubegcd and operator, but for a restore,
	// whose target is the object re-created, with its new UID.
	Target Target `json:"target"`
	// What the rule saw when it decided, as the rule records them; absent when
	// it records none.
	Facts json.RawMessage `json:"facts,omitempty"`
	// Why the controller decided so, in one sentence.
	Reason string `json:"reason"`
	// True when the decision was only recorded, not sent to the cluster.
	DryRun bool `json:"dryRun"`
	// What came of the decision: applied, dry-run, failed, conflict or
	// not-found; skipped for a decision that needs no write; unknown for a
	// write sent just before kubegcd died, whose object was still there at the
	// next start. An unknown write may or may not have reached the API server,
	// and the decision is pending again.
	Outcome Outcome `json:"outcome"`
	// The API server's refusal of a failed write; empty otherwise.
	Error string `json:"error"`
}

// AuditList is the answer of GET /audit: newest first.
type AuditList struct {
	// The decisions of this page; [] when none matched.
	Items []AuditEntry `json:"items"`
	// The cursor of the following (older) page, for ?cursor=; empty at the end.
	Next string `json:"next,omitempty"`
	// The parts of other instances' histories this history may be missing;
	// absent when none.
	Gaps []AuditGap `json:"gaps,omitempty"`
}

// AuditBatch is the body the audit webhook (--audit-webhook-config-file)
// posts: rows of the audit history, oldest first. Each item is the row as
// GET /audit lists it.
type AuditBatch struct {
	// The rows of this batch, in the order they were written; never empty.
	Items []AuditEntry `json:"items"`
}
