package api

import "time"

// Severities of lint findings.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// LintRule is an ownerReference lint rule. IDs are stable: alerts and
// scripts key on them.
type LintRule struct {
	// ID is KG-LINT-nn.
	ID string `json:"id"`
	// Name says what it finds, in words joined by '-'.
	Name string `json:"name"`
	// Severity is one of the Severity* names.
	Severity string `json:"severity"`
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
	LintClusterScopedDependent = LintRule{ID: "KG-LINT-04", Name: "cluster-scoped-dependent-namespaced-owner", Severity: SeverityError}
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
	// Rule is the rule's id, KG-LINT-nn.
	Rule string `json:"rule"`
	// Name is the rule's name, such as dangling-owner.
	Name string `json:"name"`
	// Severity is the rule's severity.
	Severity string `json:"severity"`
	// Target is the object that holds the reference.
	Target Target `json:"target"`
	// OwnerReference is the reference, as the object holds it.
	OwnerReference OwnerRef `json:"ownerReference"`
	// Message says what is wrong and what follows from it.
	Message string `json:"message"`
}

// LintReport is the answer of GET /lint.
type LintReport struct {
	// Items are the findings that ?rule=, ?severity= and ?limit= kept.
	// They are read at the request, and stop at the limit.
	Items []LintFinding `json:"items"`
	// Counts has every rule's ID, with the number of findings in the
	// namespace asked (the whole mirror when none). Rule, severity and
	// limit do not change them. They come from the latest count of the
	// whole mirror, made at countsAt, not from the read that found Items:
	// a count costs what every finding costs. The two may differ by what
	// changed since countsAt.
	Counts map[string]int `json:"counts"`
	// CountsAt is when the count was made. While a count takes under
	// 50 ms, it is made for the request. On a larger mirror it is the
	// last count made in the background. A request that finds it older
	// than --lint-counts-max-age (30 s by default) has it counted anew.
	CountsAt time.Time `json:"countsAt"`
	// Truncated: more findings matched than the limit.
	Truncated bool `json:"truncated"`
}
