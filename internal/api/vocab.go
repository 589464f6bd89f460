package api

// The controllers, as --controllers, audit and pending rows name them.
const (
	ControllerOwnerGC = "ownergc"
	ControllerPodGC   = "podgc"
	ControllerTTL     = "ttl"
	ControllerSVGC    = "svgc"
	ControllerLCGC    = "lcgc"
	ControllerRules   = "rules"
)

// Controllers lists every controller, in the order they are documented.
var Controllers = []string{ControllerOwnerGC, ControllerPodGC, ControllerTTL, ControllerSVGC, ControllerLCGC}

// Audit rows about enforcement itself rather than about an object name one
// of these in place of a controller: the daemon's own (a manual hold of the
// blast-radius cap, the audit store writable again) and an operator's (a
// release). They name no target and are not writes to the cluster.
const (
	ControllerKubegcd  = "kubegcd"
	ControllerOperator = "operator"
)

// Actions, as audit and pending rows record them.
const (
	ActionDelete          = "delete"
	ActionRemoveOwnerRefs = "remove-owner-refs"
	ActionUnblockRefs     = "unblock-owner-refs"
	ActionRemoveFinalizer = "remove-finalizer"
	ActionKeep            = "keep"
	// ActionOrphanDependents and ActionDeleteDependents are an owner being
	// deleted with the orphan or foregroundDeletion finalizer: the work
	// is on its dependents, then its finalizer goes.
	ActionOrphanDependents = "orphan-dependents"
	ActionDeleteDependents = "delete-dependents"
	// The actions of the pseudo-controllers kubegcd and operator.
	ActionPause   = "pause"
	ActionResume  = "resume"
	ActionRelease = "release"
)

// Outcomes of a decision, as audit rows record them.
const (
	OutcomeApplied  = "applied"
	OutcomeDryRun   = "dry-run"
	OutcomeFailed   = "failed"
	OutcomeConflict = "conflict"
	OutcomeNotFound = "not-found"
	OutcomeSkipped  = "skipped"
	// OutcomeUnknown is the outcome of a write sent before a crash whose
	// result was never recorded, when its object is still there at start:
	// the write may or may not have reached the API server, and the
	// decision stays pending for its controller to make again.
	OutcomeUnknown = "unknown"
)

// Outcomes lists every outcome, as /audit?outcome= accepts them.
var Outcomes = []string{OutcomeApplied, OutcomeDryRun, OutcomeFailed, OutcomeConflict, OutcomeNotFound,
	OutcomeSkipped, OutcomeUnknown}
