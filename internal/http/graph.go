package http

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

var (
	// graphStreamMaxLimit bounds the whole graph, which streams: memory
	// does not grow with it.
	graphStreamMaxLimit = operation("graph").Param("limit").Max
)

const (
	// objectMaxDependents bounds /objects/{uid}'s dependents; the graph
	// shows them all.
	objectMaxDependents = 1000
	objectRecentAudit   = 20
	// objectMaxReferences bounds /objects/{uid}'s references, each way.
	objectMaxReferences = 1000
)

// graph serves GET /graph: the ownership graph as JSON, or as GraphViz DOT
// in the format of kube-controller-manager's
// /debug/controllers/garbagecollector/graph; with ?at=, as it stood then.
func (s *server) graph(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	// The whole graph streams, so it may be as large as the cluster; a
	// filtered one is built in memory, within api.GraphFilteredMaxLimit.
	whole := len(q.v["uid"]) == 0 && q.v.Get("namespace") == ""
	maxLimit := api.GraphFilteredMaxLimit
	if whole {
		maxLimit = graphStreamMaxLimit
	}
	f := db.GraphFilter{Namespace: q.str("namespace"), Limit: q.limitUpTo(maxLimit)}
	format := q.enum("format")
	// The objects that take no part in the graph: the namespace map lists
	// them beside its trees, so that it covers the whole namespace.
	f.Isolated = q.enum("isolated") == "true"
	if f.Isolated && f.Namespace == "" {
		q.fail("isolated needs namespace")
	}
	uids := q.v["uid"]
	if len(uids) > api.GraphMaxUIDs {
		q.fail("too many uid parameters: at most %d", api.GraphMaxUIDs)
	}
	seen := map[string]bool{}
	for _, u := range uids {
		if u == "" {
			q.fail("empty uid")
		}
		if !seen[u] {
			seen[u] = true
			f.UIDs = append(f.UIDs, u)
		}
	}
	at := q.time("at")
	if at.After(time.Now()) {
		// History knows only the past: the present is not a future graph.
		q.fail("invalid at %s: it is in the future", at.UTC().Format(time.RFC3339))
	}
	if !at.IsZero() && (len(f.UIDs) == 0 || f.Namespace != "") {
		// A whole namespace, or cluster, at a past time would read every
		// history row; from UIDs the walk stays bounded.
		q.fail("at needs uid, and does not combine with namespace")
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	if whole && at.IsZero() {
		s.streamGraph(w, r, f.Limit, format)
		return
	}
	var g *db.Graph
	var err error
	if at.IsZero() {
		err = s.wideRead(r.Context(), func() (err error) {
			g, err = s.DB.Graph(r.Context(), f)
			return err
		})
	} else {
		err = s.wideRead(r.Context(), func() (err error) {
			g, err = s.graphAt(r.Context(), f, at)
			return err
		})
	}
	if errors.Is(err, db.ErrNotFound) {
		writeError(w, r, http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if format != "dot" {
		s.writeGraphJSON(w, r, g)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	a := s.streamAnswer(w, r, "text/vnd.graphviz; charset=utf-8", "answer")
	writeDOT(a.bw, g, f.Limit)
	a.end("")
}

// writeDOT writes g as upstream's garbage collector dumps its graph
// (pkg/controller/garbagecollector/dump.go): a strict digraph named full,
// vertices keyed by UID with the same attributes in the same order, edges
// from dependent to owner, both sorted, so that tools reading upstream's
// dump read ours. It sorts g's nodes and edges in place, and clears each
// once written, so that they are freed as the answer is spooled.
func writeDOT(w io.Writer, g *db.Graph, limit int) {
	d := &dotWriter{w: w}
	d.start(g.Truncated, limit, api.GraphFilteredMaxLimit)
	slices.SortStableFunc(g.Nodes, func(a, b db.GraphNode) int { return cmp.Compare(a.UID, b.UID) })
	for i, n := range g.Nodes {
		d.node(n)
		g.Nodes[i] = db.GraphNode{}
	}
	slices.SortStableFunc(g.Edges, func(a, b db.GraphEdge) int {
		return cmp.Or(cmp.Compare(a.Dependent, b.Dependent), cmp.Compare(a.Owner, b.Owner))
	})
	for i, e := range g.Edges {
		d.edge(e)
		g.Edges[i] = db.GraphEdge{}
	}
	d.end()
}

// dotWriter writes a graph in DOT as its nodes, then its edges, come. w
// is a bytes.Buffer or a bufio.Writer, whose first write error sticks and
// is returned by its Flush: single writes' errors are not looked at.
type dotWriter struct {
	w            io.Writer
	nodes, edges bool
}

func (d *dotWriter) start(truncated bool, limit, maxLimit int) {
	_, _ = io.WriteString(d.w, "strict digraph full {\n")
	if truncated {
		// A comment keeps the output valid DOT and upstream-shaped.
		fmt.Fprintf(d.w, "  // Truncated to the first %d vertices by UID; raise ?limit= (at most %d) or filter.\n",
			limit, maxLimit)
	}
}

func (d *dotWriter) node(n db.GraphNode) {
	if !d.nodes {
		d.nodes = true
		_, _ = io.WriteString(d.w, "  // Node definitions.\n")
	}
	fmt.Fprintf(d.w, "  %s [\n", dotQuote(n.UID))
	for _, a := range dotAttributes(n) {
		fmt.Fprintf(d.w, "    %s=%s\n", a[0], dotQuote(a[1]))
	}
	_, _ = io.WriteString(d.w, "  ];\n")
}

func (d *dotWriter) edge(e db.GraphEdge) {
	if !d.edges {
		d.edges = true
		_, _ = io.WriteString(d.w, "  // Edge definitions.\n")
	}
	fmt.Fprintf(d.w, "  %s -> %s;\n", dotQuote(e.Dependent), dotQuote(e.Owner))
}

func (d *dotWriter) end() { _, _ = io.WriteString(d.w, "}\n") }

// dotAttributes lists a vertex's attributes as upstream does: a label of
// uid, namespace, Kind.version[.group]/name and the conditions that hold,
// then the same facts as separate attributes (which renderers ignore).
func dotAttributes(n db.GraphNode) [][2]string {
	group, version := splitAPIVersion(n.APIVersion)
	kind := n.Kind + "." + version
	if group != "" {
		kind += "." + group
	}
	label := fmt.Sprintf("uid=%s\nnamespace=%s\n%s/%s\n", n.UID, n.Namespace, kind, n.Name)
	var conditions []string
	for _, c := range []struct {
		holds bool
		name  string
	}{
		{n.BeingDeleted, "beingDeleted"}, {n.DeletingDependents, "deletingDependents"},
		{n.Virtual, "virtual"}, {n.Missing, "missingFromGraph"},
	} {
		if c.holds {
			conditions = append(conditions, c.name)
		}
	}
	if len(conditions) > 0 {
		label += strings.Join(conditions, ",") + "\n"
	}
	return [][2]string{
		{"label", label},
		{"group", group},
		{"version", version},
		{"kind", n.Kind},
		{"namespace", n.Namespace},
		{"name", n.Name},
		{"uid", n.UID},
		{"missing", fmt.Sprint(n.Missing)},
		{"beingDeleted", fmt.Sprint(n.BeingDeleted)},
		{"deletingDependents", fmt.Sprint(n.DeletingDependents)},
		{"virtual", fmt.Sprint(n.Virtual)},
	}
}

func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// dotQuote makes a DOT quoted string. A newline becomes \n, which GraphViz
// draws as a line break in a label (upstream's Go %q gives the same bytes
// for the printable text Kubernetes names are made of).
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case isTerminalControl(r):
			b.WriteByte(' ') // control characters have no DOT spelling
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// isTerminalControl reports a rune a terminal may act on rather than show:
// a C0 or C1 control character, DEL, or a bidi control that reorders the
// text around it.
func isTerminalControl(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// objectReadFailed answers a failed read of object uid — a JSON 404 when
// the mirror does not hold it, else an internal error — and reports
// whether it did.
func (s *server) objectReadFailed(w http.ResponseWriter, r *http.Request, uid string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, db.ErrNotFound):
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("no object with uid %q in the mirror", uid))
	default:
		s.internalError(w, r, err)
	}
	return true
}

// object serves GET /objects/{uid}: what the mirror knows around one object
// and why it is, or is not, pending.
func (s *server) object(w http.ResponseWriter, r *http.Request) {
	uid := chi.URLParam(r, "uid")
	det, err := s.DB.ObjectDetail(r.Context(), uid, objectMaxDependents)
	if s.objectReadFailed(w, r, uid, err) {
		return
	}
	audit, _, err := s.DB.ListAudit(r.Context(), db.AuditFilter{UID: uid, Limit: objectRecentAudit})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	o := det.Object
	owners := diagnose.OwnerStates(o, det.Owners)
	seen, err := s.ownersSeen(r.Context(), owners)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	expl, err := s.explainObject(r.Context(), o)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	var changed time.Time
	if h := expl.History.Items; len(h) > 0 {
		changed = h[len(h)-1].Time
	}
	facts := objectFacts{Object: o, Owners: owners, Pending: det.Pending}
	text := diagnose.ExplainObject(why(facts, dryRunDecision(audit, changed)), len(det.Pending) > 0,
		expl.Stuck, expl.Lint)
	out := objectDetailOf(det, seen, audit, text, expl)
	if err := s.objectReferences(r.Context(), o, &out); err != nil {
		s.internalError(w, r, err)
		return
	}
	if out.RestoredFrom, out.SparedBy, err = s.restoredAround(r.Context(), uid); err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, out)
}

// objectDetailOf is the answer of /objects/{uid}: det as the mirror holds
// it, with its owners' states and whether they were seen, the latest audit
// rows about it, why it is or is not pending, and the other diagnoses.
func objectDetailOf(det *db.ObjectDetail, owners []api.Owner, audit []db.AuditEntry, why string,
	expl objectExplanation) api.ObjectDetail {
	out := api.ObjectDetail{Object: objectOf(det.Object), Owners: owners,
		Dependents: make([]api.Dependent, len(det.Dependents)), DependentsTruncated: det.DependentsTruncated, Why: why,
		Stuck: expl.Stuck, Lint: expl.Lint, History: expl.History, Links: expl.Links}
	for i, d := range det.Dependents {
		out.Dependents[i] = api.Dependent{UID: d.UID, APIVersion: d.APIVersion, Kind: d.Kind, Namespace: d.Namespace,
			Name: d.Name, BlockOwnerDeletion: d.BlockOwnerDeletion}
	}
	if det.Pending != nil {
		out.Pending = make([]api.Pending, len(det.Pending))
	}
	for i, p := range det.Pending {
		out.Pending[i] = pendingOf(p)
	}
	out.RecentAudit = auditEntriesOf(audit)
	return out
}

// auditEntriesOf maps audit rows to the API, null for null.
func auditEntriesOf(audit []db.AuditEntry) []api.AuditEntry {
	if audit == nil {
		return nil
	}
	out := make([]api.AuditEntry, len(audit))
	for i, e := range audit {
		out[i] = e.API()
	}
	return out
}

// ownersSeen marks the missing owners that neither history nor audit
// knows, as /objects/{uid}/history answers 404 for them. An object has
// few owners, and only missing ones are looked up.
func (s *server) ownersSeen(ctx context.Context, owners []api.OwnerStatus) ([]api.Owner, error) {
	out := make([]api.Owner, len(owners))
	for i, o := range owners {
		out[i].OwnerStatus = o
		if o.State != api.OwnerMissing {
			continue
		}
		hist, _, err := s.DB.RecentHistoryOf(ctx, o.UID, 1)
		if err != nil {
			return nil, err
		}
		if len(hist) > 0 {
			continue
		}
		audit, _, err := s.DB.ListAudit(ctx, db.AuditFilter{UID: o.UID, Limit: 1})
		if err != nil {
			return nil, err
		}
		out[i].NeverSeen = len(audit) == 0
	}
	return out, nil
}

// actionPhrases say what a pending action does to the object.
var actionPhrases = map[api.Action]string{
	api.ActionDelete:          "delete it",
	api.ActionRemoveOwnerRefs: "remove owner references from it",
	api.ActionUnblockRefs:     "make its owner references non-blocking",
	api.ActionRemoveFinalizer: "remove a finalizer from it",
	api.ActionKeep:            "keep it",
}

// dryRunDecision returns ownergc's newest audit row about an object when
// it is a decision made in dry-run since the object's ownership last
// changed (changed), else nil. In dry-run ownergc remembers what it would
// already have changed, so such a decision may leave nothing pending (a
// removal of owner references leaves none) while it still holds.
func dryRunDecision(audit []db.AuditEntry, changed time.Time) *db.AuditEntry {
	for i, e := range audit { // newest first
		if e.Controller != api.ControllerOwnerGC {
			continue
		}
		if e.Outcome == api.OutcomeDryRun && !e.Time.Before(changed) {
			return &audit[i]
		}
		return nil
	}
	return nil
}

// objectFacts is what why reads.
type objectFacts struct {
	Object  *db.Object
	Owners  []api.OwnerStatus
	Pending []db.Pending
}

// why explains, from the mirror alone, why an object is or is not pending.
// It follows ownergc's order: a decision recorded wins; an object being
// deleted is left to its finalizers; then its owners decide, and dry
// (ownergc's decision in dry-run, or nil) says what it decided of them.
func why(det objectFacts, dry *db.AuditEntry) string {
	o := det.Object
	if len(det.Pending) > 0 {
		var parts []string
		for _, p := range det.Pending {
			phrase, ok := actionPhrases[p.Action]
			if !ok {
				phrase = "act on it (" + string(p.Action) + ")"
			}
			parts = append(parts, fmt.Sprintf("%s would %s (rule %s): %s", p.Controller, phrase, p.Rule, p.Reason))
		}
		return "It is pending: " + strings.Join(parts, "; and ") + "."
	}
	if o.DeletionTimestamp != nil {
		if len(o.Finalizers) == 0 {
			return "It is not pending: it is being deleted and no finalizer holds it, so the API server removes it."
		}
		return fmt.Sprintf("It is not pending: it is being deleted and waits for finalizers %s.",
			strings.Join(o.Finalizers, ", "))
	}
	if len(det.Owners) == 0 {
		return "It is not pending: it has no owner references."
	}
	var holding, other []string
	missing := false
	for _, st := range det.Owners {
		name := st.Kind + "/" + st.Name
		switch st.State {
		case api.OwnerPresent:
			holding = append(holding, name)
		case api.OwnerBeingDeleted:
			// Being deleted without foregroundDeletion still holds it.
			holding = append(holding, name+", itself being deleted")
		default:
			missing = missing || st.State == api.OwnerMissing
			other = append(other, name+": "+string(st.State))
		}
	}
	if len(holding) > 0 {
		s := fmt.Sprintf("It is not pending: at least one owner exists (%s)", holding[0])
		switch {
		case len(other) > 0 && dry != nil:
			s += fmt.Sprintf("; its other references (%s) would be removed: %s", strings.Join(other, "; "),
				dryRunWords(dry))
		case len(other) > 0:
			s += fmt.Sprintf("; its other references (%s) would be removed, but ownergc has not decided about them yet",
				strings.Join(other, "; "))
		}
		return s + "."
	}
	s := fmt.Sprintf("It is not pending yet, though no owner holds it in the mirror (%s)", strings.Join(other, "; "))
	switch {
	case dry != nil:
		return s + ": " + dryRunWords(dry) + "."
	case missing:
		return s + ": a missing owner is only suspected absent, and ownergc confirms with a live GET before it decides."
	}
	return s + ": ownergc has not recorded a decision yet."
}

// dryRunWords say what ownergc decided in dry-run, and that it stays a
// decision.
func dryRunWords(e *db.AuditEntry) string {
	phrase, ok := actionPhrases[e.Action]
	if !ok {
		phrase = "act on it (" + string(e.Action) + ")"
	}
	return fmt.Sprintf("ownergc decided in dry-run at %s to %s (rule %s): %s; dry-run sends nothing to the cluster",
		e.Time.UTC().Format(time.RFC3339), phrase, e.Rule, strings.TrimSuffix(e.Reason, "."))
}
