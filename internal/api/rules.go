package api

import "time"

// RuleList is the answer of GET /rules: the cleanup rules loaded, and why
// each refused file or rule is refused.
type RuleList struct {
	// The rules that run: the built-ins first, each as a file overrides it,
	// then the files' rules, by file name and in each file's order.
	Items []RuleInfo `json:"items"`
	// Why each refused file or rule is refused; [] when none is. A refused
	// rule does not run; the others do.
	Errors []RuleError `json:"errors"`
	// The directory the rule files are read from (--rules-dir).
	Dir string `json:"dir"`
	// The rule files read, by name; [] when the directory holds none.
	Files []string `json:"files"`
	// When the rule files were last read; absent before the first read.
	LoadedAt *time.Time `json:"loadedAt,omitempty"`
}

// RuleInfo is one cleanup rule as loaded, with its last pass.
type RuleInfo struct {
	// The rule's id: a lowercase RFC 1123 label.
	ID string `json:"id"`
	// What the rule matches, in words.
	Description string `json:"description"`
	// True for a built-in rule, overridden by a file or not.
	BuiltIn bool `json:"builtIn"`
	// The file of the entry that defines the rule or overrides a built-in;
	// absent for a built-in as shipped.
	File string `json:"file,omitempty"`
	// The line of that entry in its file; absent for a built-in as shipped.
	Line int `json:"line,omitempty"`
	// The SHA-256 of the rule's canonical form, in hex: it changes whenever
	// anything that decides what the rule does changes.
	Hash string `json:"hash"`
	// What the rule does with a match: report, or delete. The global
	// --dry-run wins: a rule that deletes then records what it would do.
	Action string `json:"action"`
	// How many passes in a row must match an object before it is acted on.
	Occurrences int `json:"occurrences"`
	// The caps of one pass, as the rule file writes them: above either, the
	// pass deletes nothing. {} when there are none.
	Limits RuleLimits `json:"limits"`
	// How long before the delete a notice Event goes to the object, as a Go
	// duration; absent when none does.
	NotifyBefore string `json:"notifyBefore,omitempty"`
	// The deletion's propagation: Background, Foreground or Orphan.
	Propagation string `json:"propagation"`
	// When the rule's next pass is due; absent while none is (before the
	// mirror first syncs).
	NextPassAt *time.Time `json:"nextPassAt,omitempty"`
	// The time between two passes, as a Go duration such as 5m0s; absent
	// when the rule has a schedule.
	Interval string `json:"interval,omitempty"`
	// The cron expression whose times start the rule's passes, instead of
	// an interval; absent when it has none.
	Schedule string `json:"schedule,omitempty"`
	// The rule's SQL: one SELECT over the rules' views (docs/rules.md).
	Select string `json:"select"`
	// The parameters bound by name (:grace), as the file wrote them; {} when
	// none.
	Params map[string]any `json:"params"`
	// What the rule leaves out, whatever its SELECT says.
	Exclude RuleExclude `json:"exclude"`
	// The rule's last pass; null before its first.
	LastPass *RulePass `json:"lastPass"`
	// When the stored matches were matched: the start of the rule's last pass
	// that succeeded. Absent before one has, in this run of kubegcd.
	MatchedAt *time.Time `json:"matchedAt,omitempty"`
	// How many objects the rule matches now, findings left out: those its
	// last pass that succeeded stored.
	Matches int `json:"matches"`
	// How many findings the rule holds now: rows shown with the matches and
	// never acted on, such as a TTL that does not parse.
	Findings int `json:"findings"`
}

// RuleExclude is what a rule leaves out of its result.
type RuleExclude struct {
	// Globs of namespaces; an excluded namespace's own Namespace object is
	// left out too. [] when none.
	Namespaces []string `json:"namespaces"`
	// Label selectors: an object any of them selects is left out. They see
	// only the labels the mirror keeps. [] when none.
	Labels []string `json:"labels"`
	// Globs of object names. [] when none.
	Names []string `json:"names"`
}

// RulePass is one pass of a rule.
type RulePass struct {
	// When the pass started.
	StartedAt time.Time `json:"startedAt"`
	// How long the pass took, its query and the store of its matches.
	DurationSeconds float64 `json:"durationSeconds"`
	// The objects the pass matched, findings left out; 0 when it failed.
	Matches int `json:"matches"`
	// The findings the pass returned; 0 when it failed.
	Findings int `json:"findings"`
	// Why the pass failed, such as over the time limit or over the row cap;
	// absent when it succeeded. A failed pass keeps the matches stored
	// before it.
	Error string `json:"error,omitempty"`
	// What a pass of a rule that deletes did; absent for a rule that
	// reports, and for a pass that failed.
	Acted *RuleActed `json:"acted,omitempty"`
}

// RuleActed is what one pass of a rule that deletes did with its matches.
type RuleActed struct {
	// Why the pass deleted nothing, over its cap; absent when it was not.
	Capped string `json:"capped,omitempty"`
	// Matches that have held for the rule's occurrences: due to be acted on.
	Due int `json:"due"`
	// Objects deleted.
	Deleted int `json:"deleted"`
	// In dry-run, deletions recorded as what would be.
	DryRun int `json:"dryRun"`
	// Notice Events sent this pass.
	Notified int `json:"notified"`
	// Matches waiting out their notice.
	Waiting int `json:"waiting"`
	// Matches left alone, by reason: changed (another resourceVersion
	// live), referenced (a reference appeared), excluded (the live object
	// is excluded), spared (restored from a copy this rule deleted) and
	// gone (no longer there).
	Skipped map[string]int `json:"skipped"`
	// Deletions that failed or were held back, pending for the next pass.
	Failed int `json:"failed"`
}

// RuleError is why a rule file, or one rule of it, is refused.
type RuleError struct {
	// The file, as read from the rules directory; "body" for the body of POST
	// /rules/evaluate.
	File string `json:"file"`
	// The line of the file the error is at; absent when it is about the
	// whole file and has none.
	Line int `json:"line,omitempty"`
	// The refused rule's id; absent when the error is about the whole file
	// or the rule has no valid id.
	Rule string `json:"rule,omitempty"`
	// The field's path, as Kubernetes validation names it (rules[2].interval);
	// absent for an error of the whole file.
	Field string `json:"field,omitempty"`
	// What is wrong, as Kubernetes validation says it.
	Detail string `json:"detail"`
	// The whole error on one line: file:line: field: detail.
	Message string `json:"message"`
}

// RuleMatch is an object a rule matches.
type RuleMatch struct {
	// The object's UID.
	UID string `json:"uid"`
	// The object's group/version, or version alone for the core group.
	APIVersion string `json:"apiVersion"`
	// The object's kind.
	Kind string `json:"kind"`
	// The object's namespace; absent for a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	// The object's name.
	Name string `json:"name"`
	// Why the rule matched it, as its SELECT says; empty when it says
	// nothing.
	Reason string `json:"reason"`
	// True for a finding: a row shown with the matches and never acted on,
	// such as a TTL that does not parse.
	Finding bool `json:"finding"`
	// The start of the pass from which the rule has matched it, pass after
	// pass without a break; absent in an evaluation.
	Since *time.Time `json:"since,omitempty"`
	// When the rule last matched it: the start of its last pass that
	// succeeded; absent in an evaluation, and before the rule's first pass in
	// this run of kubegcd.
	LastMatched *time.Time `json:"lastMatched,omitempty"`
}

// RuleMatchList is the answer of GET /rules/{id}/matches: by UID.
type RuleMatchList struct {
	// The matches of this page; [] when none.
	Items []RuleMatch `json:"items"`
	// The cursor of the following page, for ?cursor=; absent at the end.
	Next string `json:"next,omitempty"`
}

// RuleFile is a rules file: what each file of --rules-dir holds, and the
// body of POST /rules/evaluate, in YAML or JSON. docs/rules.md says what
// each field takes.
type RuleFile struct {
	// The rules of the file.
	Rules []RuleSpec `json:"rules"`
}

// RuleSpec is one rule as a rules file writes it. An entry with a
// built-in's id overrides its params, exclude and interval.
type RuleSpec struct {
	// The rule's id: a lowercase RFC 1123 label, unique.
	ID string `json:"id"`
	// What the rule matches, in words.
	Description string `json:"description,omitempty"`
	// One read-only SELECT over the rules' views, returning uid and,
	// optionally, reason and finding.
	Select string `json:"select,omitempty"`
	// Values bound by name in the SELECT (:grace): text, numbers, booleans or
	// null. :now is the pass's time.
	Params map[string]any `json:"params,omitempty"`
	// What the rule leaves out, whatever its SELECT says.
	Exclude *RuleExclude `json:"exclude,omitempty"`
	// The time between two passes, such as 5m (default) or 1h.
	Interval string `json:"interval,omitempty"`
	// What the rule does with a match: report (default) or delete.
	Action string `json:"action,omitempty"`
	// How many passes in a row must match an object before it is acted on
	// (default 2).
	Occurrences int `json:"occurrences,omitempty"`
	// Caps on what one pass may act on.
	Limits *RuleLimits `json:"limits,omitempty"`
	// How long before acting an Event on the object says so, such as 1h.
	NotifyBefore string `json:"notify_before,omitempty"`
	// The deletion's propagation: Background (default), Foreground or Orphan.
	Propagation string `json:"propagation,omitempty"`
}

// RuleLimits cap what one pass of a rule may act on.
type RuleLimits struct {
	// At most this many objects a pass.
	MaxCount int `json:"max_count,omitempty"`
	// At most this share, in percent, of the objects the rule looked at.
	MaxPercent float64 `json:"max_percent,omitempty"`
}

// RuleEvaluation is the answer of POST /rules/evaluate: each rule of the
// body evaluated once against the mirror, and nothing stored.
type RuleEvaluation struct {
	// Each rule that parsed and passed its checks, in the body's order.
	Rules []RuleEvaluated `json:"rules"`
	// Why each refused rule, or the whole body, is refused; [] when none is.
	Errors []RuleError `json:"errors"`
}

// RuleEvaluated is one rule of POST /rules/evaluate and what it matched.
type RuleEvaluated struct {
	// The rule's id.
	ID string `json:"id"`
	// The SHA-256 of the rule's canonical form, as GET /rules shows it for
	// the same text.
	Hash string `json:"hash"`
	// When the evaluation started: the rule's :now.
	EvaluatedAt time.Time `json:"evaluatedAt"`
	// How long the evaluation took.
	DurationSeconds float64 `json:"durationSeconds"`
	// What the rule matched, findings among them, by namespace, kind and
	// name; [] when nothing or when it failed.
	Matches []RuleMatch `json:"matches"`
	// Why the evaluation failed, such as over the time limit; absent when it
	// succeeded.
	Error string `json:"error,omitempty"`
}

// ObjectReference is a reference an object makes to another by name.
type ObjectReference struct {
	// The target's API group; absent for the core group.
	Group string `json:"group,omitempty"`
	// The target's kind.
	Kind string `json:"kind"`
	// The target's namespace; absent for a cluster-scoped target.
	Namespace string `json:"namespace,omitempty"`
	// The target's name, or with prefix the start of the names an ordinal
	// completes.
	Name string `json:"name"`
	// The field the reference comes from, such as
	// spec.template.spec.volumes[].configMap.
	Via string `json:"via"`
	// True when the referrer works without the target (optional: true).
	Optional bool `json:"optional,omitempty"`
	// True when name is a prefix: the claims of a StatefulSet's
	// volumeClaimTemplates, name followed by an ordinal.
	Prefix bool `json:"prefix,omitempty"`
	// True when the mirror holds the target (with prefix: one of its names).
	Exists bool `json:"exists"`
	// The target's UID when the mirror holds it; absent otherwise, and for a
	// prefix.
	UID string `json:"uid,omitempty"`
}

// ObjectReferrer is an object that references a given one by name.
type ObjectReferrer struct {
	// The referrer's UID.
	UID string `json:"uid"`
	// The referrer's group/version, or version alone for the core group.
	APIVersion string `json:"apiVersion"`
	// The referrer's kind.
	Kind string `json:"kind"`
	// The referrer's namespace; absent for a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	// The referrer's name.
	Name string `json:"name"`
	// The field of the referrer the reference comes from.
	Via string `json:"via"`
}

// ObjectRuleMatch is a cleanup rule that matches an object now.
type ObjectRuleMatch struct {
	// The rule's id, as GET /rules lists it.
	Rule string `json:"rule"`
	// Why the rule matched it.
	Reason string `json:"reason"`
	// True for a finding, shown with the matches and never acted on.
	Finding bool `json:"finding"`
	// The start of the pass from which the rule has matched it, pass after
	// pass without a break.
	Since time.Time `json:"since"`
}
