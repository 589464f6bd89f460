package api

import (
	"reflect"
	"slices"
)

// Operation is one method on one path of the HTTP API. The server routes it
// to the handler its ID names and reads its parameters' defaults and limits
// from here. hack/gendocs builds the OpenAPI document and docs/api.md from
// it at make docs.
type Operation struct {
	// The name of the handler that serves the operation.
	ID string
	// The HTTP method, upper case.
	Method string
	// The route; {name} is a path parameter.
	Path string
	// What the operation does, in a line.
	Summary string
	// The rest of what a client should know, in sentences.
	Description string
	// The parameters the operation takes. The server refuses a query parameter
	// that is not among them.
	Params []Param
	// The type of the request's JSON body; nil when it takes none.
	Body reflect.Type
	// The media types the body may be sent as besides application/json, with
	// the same schema, such as application/yaml.
	BodyMediaTypes []string
	// The type of the 200 answer's JSON body.
	Answer reflect.Type
	// The JSON Schema of a 200 answer that is no type of this package: a
	// probe's status, the OpenAPI document.
	AnswerSchema map[string]any
	// A text media type of the 200 answer: the one it takes instead of JSON
	// when the request asks for it, or the only one of an operation without
	// a JSON answer.
	AnswerText string
	// The status code of its success when not 200, such as 201 Created.
	Success int
	// The status codes of its Error answers beside CommonErrors.
	Errors []int
	// True when the operation is served without authentication, for probes.
	Open bool
	// True when the OpenAPI document leaves the operation out, as its answer is
	// not JSON.
	Unlisted bool
}

// Param is a query or path parameter of an operation.
type Param struct {
	// The parameter's name.
	Name string
	// Where the parameter is: "query" or "path".
	In string
	// The JSON Schema type of one value: "string" or "integer".
	Type string
	// The format of a string: "date-time" is an RFC 3339 time.
	Format string
	// The values the parameter takes; nil when any.
	Enum []string
	// The least value of an integer.
	Min int
	// The greatest value of an integer.
	Max int
	// The value the server takes when the parameter is absent. It is nil when
	// an absent parameter filters nothing.
	Default any
	// A regular expression every value matches.
	Pattern string
	// True when the parameter must be given.
	Required bool
	// True when the parameter may be given more than once.
	Repeated bool
	// What the parameter means, in sentences.
	Description string
}

// CommonErrors are the status codes of the Error answers every operation
// has.
var CommonErrors = []int{400, 403, 429, 500, 503}

// SuccessStatus is the status code of the operation's success: Success,
// or 200.
func (o *Operation) SuccessStatus() int {
	if o.Success != 0 {
		return o.Success
	}
	return 200
}

// Statuses are the status codes the operation answers, sorted: its
// success, the common errors, its own, and 401 unless it is open.
func (o *Operation) Statuses() []int {
	codes := append(append([]int{o.SuccessStatus()}, CommonErrors...), o.Errors...)
	if !o.Open {
		codes = append(codes, 401)
	}
	slices.Sort(codes)
	return codes
}

// Param is the operation's parameter of that name; nil when it has none.
func (o *Operation) Param(name string) *Param {
	for i := range o.Params {
		if o.Params[i].Name == name {
			return &o.Params[i]
		}
	}
	return nil
}

// TokenPattern matches a kind or a rule id: letters, digits, '-' and '.',
// at most 100 characters.
const TokenPattern = `^[A-Za-z0-9][A-Za-z0-9.-]{0,99}$`

// ResourceRefPattern matches a kind as kubectl takes it: a kind, a resource
// or a short name, alone or followed by "." and its group. A group is a DNS
// subdomain of up to 253 characters.
const ResourceRefPattern = `^[A-Za-z0-9][A-Za-z0-9-]{0,99}(\.[A-Za-z0-9][A-Za-z0-9.-]{0,252})?$`

// Limits of GET /graph besides those of its parameters.
const (
	// GraphFilteredMaxLimit bounds ?limit= of a graph filtered by uid or
	// namespace, which is built in memory. The whole graph streams, so its
	// bound is the parameter's Max.
	GraphFilteredMaxLimit = 100_000
	// GraphMaxUIDs bounds the uid parameters of one request: each is a
	// recursive walk.
	GraphMaxUIDs = 1000
)

// DecidingControllers are the controllers that decide about objects and
// hold decisions pending: those --controllers takes, and the cleanup
// rules.
var DecidingControllers = append(slices.Clone(Controllers), ControllerRules)

// AuditControllers are the values ?controller= of /audit and /pending
// takes: the deciding controllers, and the names of the rows about
// enforcement.
var AuditControllers = append(slices.Clone(DecidingControllers), ControllerKubegcd, ControllerOperator)

// Severities lists the lint findings' severities, most severe first.
var Severities = []Severity{SeverityError, SeverityWarning, SeverityInfo}

func limitParam(def, max int) Param {
	return Param{Name: "limit", In: "query", Type: "integer", Min: 1, Max: max, Default: def,
		Description: "At most this many items; a value out of range is a 400."}
}

func namespaceParam(description string) Param {
	return Param{Name: "namespace", In: "query", Type: "string", Description: description}
}

// kindParam is ?kind= of /pending, /audit and /stuck.
var kindParam = Param{Name: "kind", In: "query", Type: "string", Pattern: TokenPattern,
	Description: "A kind in any case, or a resource's plural."}

var uidParam = Param{Name: "uid", In: "path", Type: "string", Required: true, Description: "The object's UID."}

// RuleIDPattern matches a cleanup rule's id: a lowercase RFC 1123 label.
const RuleIDPattern = `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`

// MaxRulesBody bounds the body of POST /rules/evaluate, in bytes.
const MaxRulesBody = 64 << 10

// RulesMediaTypes are the content types POST /rules/evaluate takes: YAML,
// or JSON, which is YAML too.
var RulesMediaTypes = []string{"application/yaml", "application/x-yaml", "text/yaml", "application/json"}

// Operations are the routes of the API, in the order docs/api.md lists them.
var Operations = []Operation{
	{ID: "status", Method: "GET", Path: "/status", Summary: "What this instance mirrors and enforces",
		Description: "The version and start time, enforcement and leader election, " +
			"every watched resource with its object count, authentication, discovery failures " +
			"and each running controller.",
		Answer: reflect.TypeFor[Status]()},
	{ID: "graph", Method: "GET", Path: "/graph", Summary: "The ownership graph",
		Description: "The whole graph (no uid nor namespace) streams as the database reads it, " +
			"so memory does not grow with it. " +
			"It takes a limit up to 100,000,000. " +
			"Two such streams are served at once, at most half of --max-requests-inflight; " +
			"another is a 429 with Retry-After: 5. " +
			"Each stream has a database connection of its own, for at most 10 minutes. " +
			"A stream whose client takes no data for --graph-stream-stall-timeout (30 s by default) is cut. " +
			"A filtered graph takes a limit up to 100,000. " +
			"With format=dot the answer is GraphViz (text/vnd.graphviz), " +
			"as upstream's /debug/controllers/garbagecollector/graph. " +
			"With at, the graph is drawn from history: " +
			"what owned this when it was deleted, what it owned when it went.",
		Params: []Param{
			namespaceParam("Only the objects of this namespace."),
			{Name: "uid", In: "query", Type: "string", Repeated: true,
				Description: "The objects connected to these UIDs, their transitive owners and dependents; " +
					"at most 1,000."},
			{Name: "limit", In: "query", Type: "integer", Min: 1, Max: 100_000_000, Default: 10000,
				Description: "At most this many nodes, the first by UID: " +
					"up to 100,000,000 for the whole graph, 100,000 for a filtered one."},
			{Name: "format", In: "query", Type: "string", Enum: []string{"json", "dot"}, Default: "json",
				Description: "The answer's format: json, or dot for GraphViz."},
			{Name: "isolated", In: "query", Type: "string", Enum: []string{"true", "false"}, Default: "false",
				Description: "With namespace, true adds the objects of the namespace that have neither owners nor dependents, " +
					"as nodes without edges. They count against limit. Without namespace, true is a 400."},
			{Name: "at", In: "query", Type: "string", Format: "date-time",
				Description: "The graph around the uid objects as history shows it at that time (RFC 3339). " +
					"A time in the future is a 400. It takes uid only, not namespace."},
		},
		Answer: reflect.TypeFor[Graph](), AnswerText: "text/vnd.graphviz", Errors: []int{404}},
	{ID: "pending", Method: "GET", Path: "/pending", Summary: "The decisions the controllers hold",
		Description: "What each controller would do next, with rule, reason and since. " +
			"Decisions that wait (a quarantine, a back-off) add notBefore and timeLeft. " +
			"Next is the cursor of the following page, in the same order.",
		Params: []Param{
			{Name: "controller", In: "query", Type: "string", Enum: Strings(AuditControllers),
				Description: "Only this controller's decisions."},
			namespaceParam("Only the decisions about objects of this namespace."),
			kindParam,
			{Name: "order", In: "query", Type: "string", Enum: []string{PendingOldest, PendingNewest},
				Default: PendingOldest,
				Description: "The order of the decisions: " +
					"oldest lists those waiting longest first, newest the other way."},
			limitParam(1000, 10000),
			{Name: "cursor", In: "query", Type: "string",
				Description: "The next of the previous page, in the same order."},
		},
		Answer: reflect.TypeFor[PendingList]()},
	{ID: "audit", Method: "GET", Path: "/audit", Summary: "The audit history, newest first",
		Description: "Next is the cursor of the following, older, page.",
		Params: []Param{
			{Name: "controller", In: "query", Type: "string", Enum: Strings(AuditControllers),
				Description: "Only this controller's decisions; " +
					"kubegcd and operator name the rows about enforcement itself."},
			namespaceParam("Only the decisions about objects of this namespace."),
			{Name: "uid", In: "query", Type: "string", Description: "Only the decisions about this object."},
			kindParam,
			{Name: "rule", In: "query", Type: "string", Pattern: TokenPattern,
				Description: "A rule id such as BR-21-03, in any case."},
			{Name: "outcome", In: "query", Type: "string", Enum: Strings(Outcomes),
				Description: "Only the decisions of this outcome: skipped is a decision that needs no write, " +
					"unknown a write whose result kubegcd did not record before it died."},
			{Name: "since", In: "query", Type: "string", Format: "date-time",
				Description: "Only the decisions at or after this time (RFC 3339)."},
			{Name: "until", In: "query", Type: "string", Format: "date-time",
				Description: "Only the decisions before this time (RFC 3339); after since."},
			limitParam(100, 1000),
			{Name: "cursor", In: "query", Type: "string", Description: "The next of the previous page."},
		},
		Answer: reflect.TypeFor[AuditList]()},
	{ID: "auditReplicate", Method: "GET", Path: "/audit/replicate",
		Summary: "Audit rows for a peer, oldest first, by cursor",
		Description: "The rows whose local id is greater than after, in id order, " +
			"with their writer's identity and origin id. " +
			"Rows this instance merged from its own peers are included, so any copy spreads. " +
			"A peer keeps after by store, the database's id.",
		Params: []Param{
			{Name: "after", In: "query", Type: "integer", Min: 0, Max: 1 << 53, Default: 0,
				Description: "The local id of the last row already taken; 0 reads from the first."},
			limitParam(500, 1000),
		},
		Answer: reflect.TypeFor[AuditReplicaPage]()},
	{ID: "lookup", Method: "GET", Path: "/objects", Summary: "Objects by kind, namespace and name",
		Description: "Without name it lists the kind, up to limit, then truncated is true. " +
			"An unknown kind or name answers an empty items list.",
		Params: []Param{
			{Name: "kind", In: "query", Type: "string", Required: true, Pattern: ResourceRefPattern,
				Description: "As kubectl takes it, in any case: a kind, or the resource's plural or singular, " +
					"each alone or with its group (deployments.apps), or a short name discovery lists (deploy)."},
			{Name: "apiVersion", In: "query", Type: "string",
				Description: "The objects' apiVersion: group/version, or v1 for the core group; " +
					"anything else is a 400. " +
					"It picks the group. " +
					"Its version is not compared, as the mirror keeps each resource at one version."},
			namespaceParam("Only the objects of this namespace; it does not filter cluster-scoped kinds."),
			{Name: "name", In: "query", Type: "string", Description: "Only the objects of this name."},
			limitParam(500, 10000),
		},
		Answer: reflect.TypeFor[Lookup]()},
	{ID: "object", Method: "GET", Path: "/objects/{uid}", Summary: "One object and what kubegcd knows around it",
		Description: "Its metadata, owners and their state, dependents, pending decisions, recent audit rows, " +
			"deletion, lint findings, references both ways, the cleanup rules that match it, and recent history. " +
			"Why says in words why it is or is not pending or gone. An unknown uid is a 404.",
		Params: []Param{uidParam}, Answer: reflect.TypeFor[ObjectDetail](), Errors: []int{404}},
	{ID: "cascade", Method: "GET", Path: "/objects/{uid}/cascade",
		Summary: "What the garbage collector would do if the object were deleted now",
		Description: "Decided by the same rules as the collector, from the mirror alone; nothing is deleted. " +
			"An unknown uid is a 404.",
		Params: []Param{uidParam,
			{Name: "propagation", In: "query", Type: "string", Enum: []string{"background", "foreground", "orphan"},
				Default: "background", Description: "The deletion's propagation policy."},
			{Name: "limit", In: "query", Type: "integer", Min: 1, Max: 100000, Default: 10000,
				Description: "At most this many objects walked."},
		},
		Answer: reflect.TypeFor[Cascade](), Errors: []int{404}},
	{ID: "objectHistory", Method: "GET", Path: "/objects/{uid}/history",
		Summary: "An object's lifecycle and the decisions about it",
		Description: "The object's lifecycle, also after it is gone, and the newest 100 audit rows about it. " +
			"A 404 when neither history nor audit knows the UID.",
		Params: []Param{uidParam}, Answer: reflect.TypeFor[ObjectHistory](), Errors: []int{404}},
	{ID: "restore", Method: "POST", Path: "/objects/{uid}/restore",
		Summary: "Re-create a deleted object from its copy",
		Description: "The uid is that of the deleted object. " +
			"The object is created as its copy holds it, without its uid, resourceVersion, creationTimestamp, " +
			"deletion fields, generation, managedFields, selfLink and status. " +
			"An ownerReference is kept only when its owner exists live with that UID. " +
			"The body is one JSON object, sent with Content-Type: application/json; another content type is a 415. " +
			"A 404 when this instance keeps no copy of that uid: only the instance that deleted an object has its copy. " +
			"A 409 says why the restore is refused: an object of that name exists (its UID is named), " +
			"the copy was restored already, the copy is corrupt, the API server no longer serves its kind, " +
			"its namespace is gone, or it is a Secret kept without its data and allowEmptySecret is not set. " +
			"A restore is made in dry-run too: an operator asks for it. " +
			"It is recorded in /audit as controller operator, action restore, target the new object, " +
			"with who asked: the address, the caller's name and User-Agent, each cut to 256 bytes. " +
			"It needs the API's authentication: " +
			"a server without --auth-token-file or --client-ca-file that does not listen on loopback answers 403.",
		Params: []Param{{Name: "uid", In: "path", Type: "string", Required: true, Description: "The deleted object's UID."}},
		Body:   reflect.TypeFor[RestoreRequest](), Answer: reflect.TypeFor[RestoreResult](), Success: 201,
		Errors: []int{404, 409, 415}},
	{ID: "deletedCopies", Method: "GET", Path: "/deleted-copies", Summary: "The copies of deleted objects, newest first",
		Description: "The copies kept for undo: those of every deletion by a cleanup rule, " +
			"and of the collectors --deleted-copies-for names. " +
			"They are kept for --deleted-copies-retention, and within --deleted-copies-max-bytes. " +
			"Items carry no object: GET /deleted-copies/{uid} has it. " +
			"Next is the cursor of the following, older, page.",
		Params: []Param{
			{Name: "kind", In: "query", Type: "string", Pattern: ResourceRefPattern,
				Description: "As kubectl takes it, in any case: a kind, the resource's plural or a short name, " +
					"alone or with its group."},
			namespaceParam("Only the copies of objects of this namespace."),
			{Name: "name", In: "query", Type: "string", Description: "Only the copies of objects of this name."},
			limitParam(100, 1000),
			{Name: "cursor", In: "query", Type: "string", Description: "The next of the previous page."},
		},
		Answer: reflect.TypeFor[DeletedCopyList]()},
	{ID: "deletedCopy", Method: "GET", Path: "/deleted-copies/{uid}", Summary: "One copy of a deleted object, with the object",
		Description: "The object as it was read just before its deletion. " +
			"A Secret's copy has no data and stringData unless --keep-deleted-secrets was on when it was taken. " +
			"A 404 when no copy of that uid is kept here.",
		Params: []Param{{Name: "uid", In: "path", Type: "string", Required: true, Description: "The deleted object's UID."}},
		Answer: reflect.TypeFor[DeletedCopyDetail](), Errors: []int{404}},
	{ID: "stuck", Method: "GET", Path: "/stuck", Summary: "Deletions that do not finish, oldest first",
		Description: "Each with its state, what blocks it, a namespace's conditions and an explanation in words. " +
			"MinAge says the threshold applied. See docs/rules.md.",
		Params: []Param{
			namespaceParam("The objects of this namespace, and the Namespace itself."),
			kindParam,
			{Name: "minAge", In: "query", Type: "string",
				Description: "A Go duration such as 30s, 5m or 1h, or 0 for every deletion; --stuck-after by default."},
			limitParam(500, 10000),
		},
		Answer: reflect.TypeFor[StuckList]()},
	{ID: "lint", Method: "GET", Path: "/lint", Summary: "The ownerReference lint findings",
		Description: "The rules are in docs/rules.md. " +
			"Items stop at limit, and truncated says there are more, " +
			"so an unfiltered lint costs what limit findings do. " +
			"A rule or severity that few findings match may read every candidate. " +
			"Counts cover every rule, for the namespace asked, whatever rule, severity and limit kept in items.",
		Params: []Param{
			{Name: "rule", In: "query", Type: "string",
				Description: "Only this rule's findings: its id (KG-LINT-01…) or name (dangling-owner…)."},
			namespaceParam("Only the findings in this namespace."),
			{Name: "severity", In: "query", Type: "string", Enum: Strings(Severities),
				Description: "Only the findings of this severity."},
			limitParam(1000, 100000),
		},
		Answer: reflect.TypeFor[LintReport]()},
	{ID: "leases", Method: "GET", Path: "/leases",
		Summary: "Every Lease with its role, holders, gaps, candidates and findings",
		Description: "Each Lease with its role, holder, renew time and age, duration, whether it is expired, " +
			"and transitions. HolderChanges list its holders and gaps the times without a live holder. " +
			"Under coordinated leader election a Lease also has its strategy, preferred holder and LeaseCandidates. " +
			"Findings say what an operator should look at: a holder that is not the preferred one, " +
			"expired candidates, a coordinated Lease without a live candidate, " +
			"and candidates for a Lease that does not exist.",
		Params: []Param{
			namespaceParam("Only the Leases of this namespace."),
			{Name: "expired", In: "query", Type: "string", Enum: []string{"true", "false"},
				Description: "Only the expired Leases, or only the live ones."},
		},
		Answer: reflect.TypeFor[LeaseList]()},
	{ID: "rules", Method: "GET", Path: "/rules", Summary: "The cleanup rules, their last passes and refusals",
		Description: "Each rule that runs: the built-ins first, then the files' rules of --rules-dir, " +
			"each with its source, its text's hash, its last pass and what it matches now. " +
			"Errors say why each refused file or rule is refused, with its file and line: " +
			"a refused rule does not run, the others do. " +
			"It takes no parameters.",
		Answer: reflect.TypeFor[RuleList](), Errors: []int{404}},
	{ID: "ruleMatches", Method: "GET", Path: "/rules/{id}/matches", Summary: "What one cleanup rule matches now",
		Description: "The objects the rule's last pass that succeeded stored, by UID, each with the reason and " +
			"since when it has matched without a break. " +
			"Next is the cursor of the following page. " +
			"A rule that is not loaded is a 404 that names those that are.",
		Params: []Param{
			{Name: "id", In: "path", Type: "string", Required: true, Pattern: RuleIDPattern,
				Description: "The rule's id, as GET /rules lists it."},
			namespaceParam("Only the matches in this namespace."),
			kindParam,
			limitParam(100, 1000),
			{Name: "cursor", In: "query", Type: "string", Description: "The next of the previous page."},
		},
		Answer: reflect.TypeFor[RuleMatchList](), Errors: []int{404}},
	{ID: "evaluateRules", Method: "POST", Path: "/rules/evaluate",
		Summary: "Evaluate a rules file once against the mirror, storing nothing",
		Description: "The body is a rules file, at most 64 KiB, sent as application/yaml (or application/x-yaml, " +
			"text/yaml) or application/json; another content type is a 415, a larger body a 413. " +
			"Each rule is parsed and checked as --rules-dir loads it, then evaluated once against the mirror as it is. " +
			"Nothing is stored and the rules loaded do not change: this is what the rules would match. " +
			"A file or rule that is refused is in errors, with its line, and the answer is still a 200. " +
			"Errors name the file body. " +
			"It needs the API's authentication: " +
			"a server without --auth-token-file or --client-ca-file that does not listen on loopback answers 403.",
		Body: reflect.TypeFor[RuleFile](), BodyMediaTypes: RulesMediaTypes[:3], Answer: reflect.TypeFor[RuleEvaluation](),
		Errors: []int{404, 413, 415}},
	{ID: "overview", Method: "GET", Path: "/overview", Summary: "The counts of the UI's overview",
		Description: "Pending decisions by controller, and the controllers' deletions over the last hour and day. " +
			"It takes no parameters.",
		Answer: reflect.TypeFor[Overview]()},
	{ID: "release", Method: "POST", Path: "/enforcement/release", Summary: "End a manual hold of the blast-radius cap",
		Description: "The body is one JSON object, sent with Content-Type: application/json. " +
			"Anything after it but white space is a 400, and so is any query parameter. " +
			"Another content type is a 415, so that no web page can post it across origins. " +
			"A 409 when nothing is held. " +
			"The release is recorded in /audit as controller operator, action release, with who asked: " +
			"the address, the caller's name and User-Agent, each cut to 256 bytes.",
		Body: reflect.TypeFor[ReleaseRequest](), Answer: reflect.TypeFor[ReleaseResult](),
		Errors: []int{404, 409, 415}},
	{ID: "healthz", Method: "GET", Path: "/healthz", Summary: "200 while the process serves", Open: true,
		AnswerSchema: statusSchema("ok")},
	{ID: "readyz", Method: "GET", Path: "/readyz",
		Summary: "200 when the mirror is live and the audit history can be written", Open: true,
		Description: "Ready needs three things. The audit history can be written; " +
			"else a 503 says \"enforcement paused: audit history cannot be written:\" and the cause. " +
			"When bearer tokens are the only authentication, --auth-token-file holds a valid token; " +
			"else a 503 says \"all bearer tokens revoked:\" and why. " +
			"Every watched resource is listed, " +
			"or after a restart caught up from the resourceVersion the last run stored. " +
			"Its watch is live, and its writes to the mirror commit; " +
			"else a 503 says \"mirror not synced\" and names the resources it waits for. " +
			"A watch that has not resumed within 3 s counts as down, " +
			"and so does one that expired (410) until its relist is committed.",
		AnswerSchema: statusSchema("ready")},
	{ID: "metrics", Method: "GET", Path: "/metrics", Summary: "The metrics, for Prometheus",
		Description: "Prometheus's text format, or OpenMetrics when the scraper asks for it. " +
			"The answer is not JSON, so the OpenAPI document leaves this route out. " +
			"docs/metrics.md describes each metric, its labels, and the alert rules that deploy/ ships.",
		AnswerText: "text/plain", Unlisted: true},
	{ID: "openAPI", Method: "GET", Path: "/openapi/v3", Summary: "This document",
		Description: "The API's OpenAPI 3.1 document, at the path where Kubernetes serves its own. " +
			"It has every path, its parameters with their types, limits and enums, " +
			"and each answer's schema with the meaning of every field. " +
			"It also has the error form and the ways to authenticate. " +
			"It is docs/openapi.json as committed: make docs writes that file, and the binary embeds it.",
		AnswerSchema: map[string]any{"type": "object", "description": "An OpenAPI 3.1 document."}},
}

// statusSchema is the schema of a probe's answer, {"status": word}.
func statusSchema(word string) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"status"},
		"properties": map[string]any{"status": map[string]any{"const": word}}}
}
