package api

import "time"

// Severity is how serious a lint finding is.
type Severity string

// Severities of lint findings.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// LintRule is an ownerReference lint rule. IDs are stable: alerts and
// scripts key on them.
type LintRule struct {
	// The rule's stable id, KG-LINT-nn.
	ID string `json:"id"`
	// What the rule finds, in words joined by '-'.
	Name string `json:"name"`
	// How serious a finding of the rule is.
	Severity Severity `json:"severity"`
}

// The lint rules.
var (
	// LintDanglingOwner: no object has the owner's UID.
	LintDanglingOwner = LintRule{ID: "KG-LINT-01", Name: "dangling-owner", Severity: SeverityWarning}
	// LintUIDMismatch: the owner's UID names another object, or the owner
	// was re-created under a new UID.
	LintUIDMismatch = LintRule{ID: "KG-LINT-02", Name: "uid-mismatch", Severity: SeverityError}
	// LintCrossNamespace: a namespaced owner in another namespace.
	LintCrossNamespace = LintRule{ID: "KG-LINT-03", Name: "cross-namespace-owner", Severity: SeverityError}
	// LintClusterScopedDependent: a cluster-scoped object owned by a
	// namespaced kind.
	LintClusterScopedDependent = LintRule{ID: "KG-LINT-04", Name: "cluster-scoped-dependent-namespaced-owner",
		Severity: SeverityError}
	// LintOwnerKindUnserved: no resource serves the owner's kind.
	LintOwnerKindUnserved = LintRule{ID: "KG-LINT-05", Name: "owner-kind-not-served", Severity: SeverityError}
	// LintMultipleControllers: more than one controller reference.
	LintMultipleControllers = LintRule{ID: "KG-LINT-06", Name: "multiple-controllers", Severity: SeverityError}
	// LintBlockLiveOwner: blockOwnerDeletion on a reference that is not the
	// controller's, to an owner not being deleted.
	LintBlockLiveOwner = LintRule{ID: "KG-LINT-07", Name: "block-owner-deletion-live-owner", Severity: SeverityInfo}
)

// LintRules lists every lint rule in ID order, as GET /lint?rule= accepts
// their IDs and names.
var LintRules = []LintRule{LintDanglingOwner, LintUIDMismatch, LintCrossNamespace, LintClusterScopedDependent,
	LintOwnerKindUnserved, LintMultipleControllers, LintBlockLiveOwner}

// LintFinding is one problem with one ownerReference.
type LintFinding struct {
	// The rule's id, KG-LINT-nn.
	Rule string `json:"rule"`
	// The rule's name, such as dangling-owner.
	Name string `json:"name"`
	// The rule's severity.
	Severity Severity `json:"severity"`
	// The object that holds the reference.
	Target Target `json:"target"`
	// The reference, as the object holds it.
	OwnerReference OwnerRef `json:"ownerReference"`
	// What is wrong and what follows from it.
	Message string `json:"message"`
}

// LintReport is the answer of GET /lint.
type LintReport struct {
	// The findings that ?rule=, ?severity= and ?limit= kept. They are read at
	// the request, and stop at the limit.
	Items []LintFinding `json:"items"`
	// The number of findings of every rule, by rule id, in the namespace asked
	// (the whole mirror when none). Rule, severity and limit do not change
	// them. They come from the latest count of the whole mirror, made at
	// countsAt, not from the read that found items: a count costs what every
	// finding costs. The two may differ by what changed since countsAt.
	Counts map[string]int `json:"counts"`
	// When the count was made. While a count takes under 50 ms, it is made for
	// the request. On a larger mirror it is the last count made in the
	// background. A request that finds it older than --lint-counts-max-age (30
	// s by default) has it counted anew.
	CountsAt time.Time `json:"countsAt"`
	// True when more findings matched than the limit.
	Truncated bool `json:"truncated"`
}
