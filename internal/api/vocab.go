package api

// Controller names a controller, as --controllers, audit and pending rows
// name it.
type Controller string

// The controllers.
const (
	ControllerOwnerGC Controller = "ownergc"
	ControllerPodGC   Controller = "podgc"
	ControllerTTL     Controller = "ttl"
	ControllerSVGC    Controller = "svgc"
	ControllerLCGC    Controller = "lcgc"
	// ControllerRules is the cleanup rules' controller. It is not in
	// Controllers: --controllers does not take it, since every instance
	// runs the rules (DecidingControllers lists it).
	ControllerRules Controller = "rules"
)

// Controllers lists every controller --controllers takes, in the order
// they are documented.
var Controllers = []Controller{ControllerOwnerGC, ControllerPodGC, ControllerTTL, ControllerSVGC, ControllerLCGC}

// Audit rows about enforcement itself rather than about an object name one
// of these in place of a controller: the daemon's own (a manual hold of the
// blast-radius cap, the audit store writable again) and an operator's (a
// release, a restore). They are not the controllers' writes: they never
// count against the blast-radius cap. Only a restore names a target.
const (
	ControllerKubegcd  Controller = "kubegcd"
	ControllerOperator Controller = "operator"
)

// Action is what a decision does to its object.
type Action string

// Actions, as audit and pending rows record them.
const (
	ActionDelete          Action = "delete"
	ActionRemoveOwnerRefs Action = "remove-owner-refs"
	ActionUnblockRefs     Action = "unblock-owner-refs"
	ActionRemoveFinalizer Action = "remove-finalizer"
	ActionKeep            Action = "keep"
	// ActionOrphanDependents and ActionDeleteDependents are an owner being
	// deleted with the orphan or foregroundDeletion finalizer: the work
	// is on its dependents, then its finalizer goes.
	ActionOrphanDependents Action = "orphan-dependents"
	ActionDeleteDependents Action = "delete-dependents"
	// ActionAnnotate is ttl's patch of a node's TTL annotation.
	ActionAnnotate Action = "annotate"
	// ActionRemoveEntries is svgc's removal of a StorageVersion's entries
	// of API servers without an identity Lease.
	ActionRemoveEntries Action = "remove-entries"
	// The actions of the pseudo-controllers kubegcd and operator.
	ActionPause   Action = "pause"
	ActionResume  Action = "resume"
	ActionRelease Action = "release"
	// ActionRestore is an operator's restore of a deleted object from its
	// copy; its target is the object re-created, with its new UID.
	ActionRestore Action = "restore"
)

// Outcome is how a decision ended.
type Outcome string

// Outcomes of a decision, as audit rows record them.
const (
	OutcomeApplied  Outcome = "applied"
	OutcomeDryRun   Outcome = "dry-run"
	OutcomeFailed   Outcome = "failed"
	OutcomeConflict Outcome = "conflict"
	OutcomeNotFound Outcome = "not-found"
	OutcomeSkipped  Outcome = "skipped"
	// OutcomeUnknown is the outcome of a write sent before a crash whose
	// result was never recorded, when its object is still there at start:
	// the write may or may not have reached the API server, and the
	// decision stays pending for its controller to make again.
	OutcomeUnknown Outcome = "unknown"
)

// Outcomes lists every outcome, as /audit?outcome= accepts them.
var Outcomes = []Outcome{OutcomeApplied, OutcomeDryRun, OutcomeFailed, OutcomeConflict, OutcomeNotFound,
	OutcomeSkipped, OutcomeUnknown}

// Strings gives a list of the vocabulary as plain strings, for flags and
// parameters that take any of them.
func Strings[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
