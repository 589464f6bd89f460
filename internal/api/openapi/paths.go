package openapi

import (
	"reflect"
	"slices"

	"github.com/kubegcd/kubegcd/internal/api"
)

// param is a query or path parameter of an operation.
type param struct {
	name, in, doc string
	// typ is "string", "integer", "boolean" or "string" with format
	// ("date-time").
	typ, format string
	enum        []string
	min, max    int
	// def is the default, when the server applies one.
	def      any
	pattern  string
	required bool
	// repeated: the parameter may be given more than once.
	repeated bool
}

// operation is one method on one path.
type operation struct {
	method, path, summary, doc string
	params                     []param
	// body is the request body's type, for POST.
	body reflect.Type
	// answer is the 200 answer's type; nil for the routes that answer a
	// schema of their own (health, the document itself).
	answer reflect.Type
	// errors are the status codes of the api.Error answers beside those
	// of every route (400, 403, 429, 500, 503).
	errors []int
	// open: served without authentication, for probes.
	open bool
}

func limit(def, max int) param {
	return param{name: "limit", in: "query", typ: "integer", min: 1, max: max, def: def,
		doc: "At most this many items; a value out of range is a 400."}
}

func namespace(doc string) param {
	return param{name: "namespace", in: "query", typ: "string", doc: doc}
}

// kindToken is ?kind= of /pending, /audit and /stuck.
var kindToken = param{name: "kind", in: "query", typ: "string", pattern: `^[A-Za-z0-9][A-Za-z0-9.-]{0,99}$`,
	doc: "A kind in any case, or a resource's plural."}

var uidPath = param{name: "uid", in: "path", typ: "string", required: true, doc: "The object's UID."}

// auditControllers are the values /audit?controller= and
// /pending?controller= accept.
var auditControllers = append(slices.Clone(api.Controllers), api.ControllerKubegcd, api.ControllerOperator)

// operations are the routes of the API, as internal/http serves them. The
// limits are the server's (internal/http keeps its own copy; its tests
// compare).
var operations = []operation{
	{method: "get", path: "/status", summary: "What this instance mirrors and enforces",
		doc:    "The version and start time, enforcement and leader election, every watched resource with its object count, authentication, discovery failures and each running controller.",
		answer: reflect.TypeFor[api.Status]()},
	{method: "get", path: "/graph", summary: "The ownership graph",
		doc: "The whole graph (no uid nor namespace) streams as the database reads it, so memory does not grow with it. " +
			"It takes a limit up to 100,000,000. " +
			"Two such streams are served at once, at most half of --max-requests-inflight; another is a 429 with Retry-After: 5. " +
			"Each stream has a database connection of its own, for at most 10 minutes. " +
			"A stream whose client takes no data for --graph-stream-stall-timeout (30 s by default) is cut. " +
			"A filtered graph takes a limit up to 100,000. " +
			"With format=dot the answer is GraphViz (text/vnd.graphviz), as upstream's /debug/controllers/garbagecollector/graph. " +
			"With at, the graph is drawn from history: what owned this when it was deleted, what it owned when it went.",
		params: []param{
			namespace("Only the objects of this namespace."),
			{name: "uid", in: "query", typ: "string", repeated: true,
				doc: "The objects connected to these UIDs, their transitive owners and dependents; at most 1,000."},
			{name: "limit", in: "query", typ: "integer", min: 1, max: 100_000_000, def: 10000,
				doc: "At most this many nodes, the first by UID: up to 100,000,000 for the whole graph, 100,000 for a filtered one."},
			{name: "format", in: "query", typ: "string", enum: []string{"json", "dot"}, def: "json", doc: "json, or dot for GraphViz."},
			{name: "at", in: "query", typ: "string", format: "date-time",
				doc: "The graph around the uid objects as history shows it at that time (RFC 3339). A time in the future is a 400. It takes uid only, not namespace."},
		},
		answer: reflect.TypeFor[api.Graph](), errors: []int{404}},
	{method: "get", path: "/pending", summary: "The decisions the controllers hold",
		doc: "What each controller would do next, with rule, reason and since. Decisions that wait (a quarantine, a back-off) add notBefore and timeLeft. Next is the cursor of the following page, in the same order.",
		params: []param{
			{name: "controller", in: "query", typ: "string", enum: auditControllers, doc: "Only this controller's decisions."},
			namespace("Only the decisions about objects of this namespace."),
			kindToken,
			{name: "order", in: "query", typ: "string", enum: []string{api.PendingOldest, api.PendingNewest}, def: api.PendingOldest,
				doc: "oldest: the decisions waiting longest first; newest the other way."},
			limit(1000, 10000),
			{name: "cursor", in: "query", typ: "string", doc: "The next of the previous page, in the same order."},
		},
		answer: reflect.TypeFor[api.PendingList]()},
	{method: "get", path: "/audit", summary: "The audit history, newest first",
		doc: "Next is the cursor of the following, older, page.",
		params: []param{
			{name: "controller", in: "query", typ: "string", enum: auditControllers,
				doc: "Only this controller's decisions; kubegcd and operator name the rows about enforcement itself."},
			namespace("Only the decisions about objects of this namespace."),
			{name: "uid", in: "query", typ: "string", doc: "Only the decisions about this object."},
			kindToken,
			{name: "rule", in: "query", typ: "string", pattern: `^[A-Za-z0-9][A-Za-z0-9.-]{0,99}$`,
				doc: "A rule id such as BR-21-03, in any case."},
			{name: "outcome", in: "query", typ: "string", enum: api.Outcomes,
				doc: "Only the decisions of this outcome: skipped is a decision that needs no write, unknown a write whose result kubegcd did not record before it died."},
			{name: "since", in: "query", typ: "string", format: "date-time", doc: "Only the decisions at or after this time (RFC 3339)."},
			{name: "until", in: "query", typ: "string", format: "date-time", doc: "Only the decisions before this time (RFC 3339); after since."},
			limit(100, 1000),
			{name: "cursor", in: "query", typ: "string", doc: "The next of the previous page."},
		},
		answer: reflect.TypeFor[api.AuditList]()},
	{method: "get", path: "/objects", summary: "Objects by kind, namespace and name",
		doc: "Without name it lists the kind, up to limit, then truncated is true. An unknown kind or name answers an empty items list.",
		params: []param{
			{name: "kind", in: "query", typ: "string", required: true,
				pattern: `^[A-Za-z0-9][A-Za-z0-9-]{0,99}(\.[A-Za-z0-9][A-Za-z0-9.-]{0,252})?$`,
				doc:     "As kubectl takes it, in any case: a kind, or the resource's plural or singular, each alone or with its group (deployments.apps), or a short name discovery lists (deploy)."},
			{name: "apiVersion", in: "query", typ: "string",
				doc: "group/version, or v1 for the core group; anything else is a 400. It picks the group. Its version is not compared, as the mirror keeps each resource at one version."},
			namespace("Only the objects of this namespace; it does not filter cluster-scoped kinds."),
			{name: "name", in: "query", typ: "string", doc: "Only the objects of this name."},
			limit(500, 10000),
		},
		answer: reflect.TypeFor[api.Lookup]()},
	{method: "get", path: "/objects/{uid}", summary: "One object and what kubegcd knows around it",
		doc:    "Its metadata, owners and their state, dependents, pending decisions, recent audit rows, deletion, lint findings and recent history. Why says in words why it is or is not pending or gone. An unknown uid is a 404.",
		params: []param{uidPath}, answer: reflect.TypeFor[api.ObjectDetail](), errors: []int{404}},
	{method: "get", path: "/objects/{uid}/cascade", summary: "What the garbage collector would do if the object were deleted now",
		doc: "Decided by the same rules as the collector, from the mirror alone; nothing is deleted. An unknown uid is a 404.",
		params: []param{uidPath,
			{name: "propagation", in: "query", typ: "string", enum: []string{"background", "foreground", "orphan"}, def: "background",
				doc: "The deletion's propagation policy."},
			{name: "limit", in: "query", typ: "integer", min: 1, max: 100000, def: 10000, doc: "At most this many objects walked."},
		},
		answer: reflect.TypeFor[api.Cascade](), errors: []int{404}},
	{method: "get", path: "/objects/{uid}/history", summary: "An object's lifecycle and the decisions about it",
		doc:    "The object's lifecycle, also after it is gone, and the newest 100 audit rows about it. A 404 when neither history nor audit knows the UID.",
		params: []param{uidPath}, answer: reflect.TypeFor[api.ObjectHistory](), errors: []int{404}},
	{method: "get", path: "/stuck", summary: "Deletions that do not finish, oldest first",
		doc: "Each with its state, what blocks it, a namespace's conditions and an explanation in words. MinAge says the threshold applied. See docs/rules.md.",
		params: []param{
			namespace("The objects of this namespace, and the Namespace itself."),
			kindToken,
			{name: "minAge", in: "query", typ: "string",
				doc: "A Go duration such as 30s, 5m or 1h, or 0 for every deletion; --stuck-after by default."},
			limit(500, 10000),
		},
		answer: reflect.TypeFor[api.StuckList]()},
	{method: "get", path: "/lint", summary: "The ownerReference lint findings",
		doc: "The rules are in docs/rules.md. Items stop at limit, and truncated says there are more, so an unfiltered lint costs what limit findings do. A rule or severity that few findings match may read every candidate. Counts cover every rule, for the namespace asked, whatever rule, severity and limit kept in items.",
		params: []param{
			{name: "rule", in: "query", typ: "string", doc: "Only this rule's findings: its id (KG-LINT-01…) or name (dangling-owner…)."},
			namespace("Only the findings in this namespace."),
			{name: "severity", in: "query", typ: "string", enum: []string{api.SeverityError, api.SeverityWarning, api.SeverityInfo},
				doc: "Only the findings of this severity."},
			limit(1000, 100000),
		},
		answer: reflect.TypeFor[api.LintReport]()},
	{method: "get", path: "/leases", summary: "Every Lease with its role, holders, gaps, candidates and findings",
		doc: "Each Lease with its role, holder, renew time and age, duration, whether it is expired, and transitions. HolderChanges list its holders and gaps the times without a live holder. Under coordinated leader election a Lease also has its strategy, preferred holder and LeaseCandidates. Findings say what an operator should look at: a holder that is not the preferred one, expired candidates, a coordinated Lease without a live candidate, and candidates for a Lease that does not exist.",
		params: []param{
			namespace("Only the Leases of this namespace."),
			{name: "expired", in: "query", typ: "string", enum: []string{"true", "false"}, doc: "Only the expired Leases, or only the live ones."},
		},
		answer: reflect.TypeFor[api.LeaseList]()},
	{method: "get", path: "/overview", summary: "The counts of the UI's overview",
		doc:    "Pending decisions by controller, and the controllers' deletions over the last hour and day. It takes no parameters.",
		answer: reflect.TypeFor[api.Overview]()},
	{method: "post", path: "/enforcement/release", summary: "End a manual hold of the blast-radius cap",
		doc: "The body is one JSON object, sent with Content-Type: application/json. " +
			"Anything after it but white space is a 400. Another content type is a 415, so that no web page can post it across origins. " +
			"A 409 when nothing is held. " +
			"The release is recorded in /audit as controller operator, action release, with who asked: the address, the caller's name and User-Agent, each cut to 256 bytes.",
		body: reflect.TypeFor[api.ReleaseRequest](), answer: reflect.TypeFor[api.ReleaseResult](), errors: []int{404, 409, 415}},
	{method: "get", path: "/healthz", summary: "200 while the process serves", open: true},
	{method: "get", path: "/readyz", summary: "200 when the mirror is live and the audit history can be written", open: true,
		doc: "Ready needs three things. The audit history can be written; else a 503 says \"enforcement paused: audit history cannot be written:\" and the cause. " +
			"When bearer tokens are the only authentication, --auth-token-file holds a valid token; else a 503 says \"all bearer tokens revoked:\" and why. " +
			"Every watched resource is listed, or after a restart caught up from the resourceVersion the last run stored. " +
			"Its watch is live, and its writes to the mirror commit; else a 503 says \"mirror not synced\" and names the resources it waits for. " +
			"A watch that has not resumed within 3 s counts as down, and so does one that expired (410) until its relist is committed."},
	{method: "get", path: "/openapi/v3", summary: "This document",
		doc: "The API's OpenAPI 3.1 document, at the path where Kubernetes serves its own. " +
			"It has every path, its parameters with their types, limits and enums, and each answer's schema with the meaning of every field. " +
			"It also has the error form and the ways to authenticate. docs/openapi.json is a copy, written by make docs."},
}
