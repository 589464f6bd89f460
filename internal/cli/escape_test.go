package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kubegcd/kubegcd/internal/api"
)

// hostile is what a cluster user (or a hostile server) chose to put in
// the answers: an object's name and kind, a Lease's holder, a message.
type hostile struct{ name, kind, holder, msg string }

// hostileServer answers every API the client commands read with h's
// strings in every text field. Its paths under /fail answer 500 with h's
// message as the API's error, /enforcement/release a 409 with it.
func hostileServer(t testing.TB, h *atomic.Pointer[hostile]) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Each command makes its own client: no idle connection outlives it.
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Type", "application/json")
		hs := *h.Load()
		if err := json.NewEncoder(w).Encode(hostileAnswer(w, r, hs)); err != nil {
			t.Error(err)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hostileAnswer is the answer to r, with h's strings in its text.
func hostileAnswer(w http.ResponseWriter, r *http.Request, h hostile) any {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	blocker := api.BlockerType(h.kind)
	target := api.Target{APIVersion: h.kind, Kind: h.kind, Namespace: h.name, Name: h.name, UID: h.name}
	audit := api.AuditEntry{ID: 1, Time: at, Instance: h.holder, Controller: api.Controller(h.kind), Rule: h.msg, Action: api.Action(h.kind), Target: target,
		Reason: h.msg, Outcome: api.Outcome(h.kind), Error: h.msg}
	pending := api.Pending{Controller: api.Controller(h.kind), Rule: h.msg, Action: api.Action(h.kind), Reason: h.msg, Since: at, Target: target, TimeLeft: h.msg}
	stuck := api.StuckItem{Target: target, DeletionRequested: at, State: api.StuckState(h.kind), Explanation: h.msg, Blockers: []api.Blocker{
		{Type: blocker, Finalizer: h.holder, Reason: h.msg, Blockers: []api.Blocker{{Type: blocker, Target: &target, Reason: h.msg}}},
		{Type: blocker, Counts: map[string]int{h.kind: 2}, Reason: h.msg}}}
	lint := api.LintFinding{Rule: h.msg, Name: h.msg, Severity: api.Severity(h.kind), Target: target,
		OwnerReference: api.OwnerRef{APIVersion: h.kind, Kind: h.kind, Name: h.name, UID: h.holder}, Message: h.msg}
	holder := h.holder
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/fail/"):
		w.WriteHeader(http.StatusInternalServerError)
		return api.Error{Error: h.msg}
	case p == "/enforcement/release":
		w.WriteHeader(http.StatusConflict)
		return api.Error{Error: h.msg}
	case p == "/objects" && r.URL.Query().Get("name") == "absent":
		return api.Lookup{Items: []api.Object{}}
	case p == "/objects":
		return api.Lookup{Items: []api.Object{{UID: "uid-x", APIVersion: "v1", Kind: h.kind, Namespace: h.name, Name: h.name,
			Finalizers: []string{}, OwnerReferences: []api.ObjectOwnerRef{}}}}
	case p == "/objects/uid-x":
		return api.ObjectDetail{
			Object: api.Object{UID: h.name, APIVersion: h.kind, Kind: h.kind, Namespace: h.name, Name: h.name,
				CreationTimestamp: &at, DeletionTimestamp: &at, Finalizers: []string{h.holder}},
			Owners:      []api.Owner{{OwnerStatus: api.OwnerStatus{Kind: h.kind, Namespace: h.name, Name: h.holder, State: api.OwnerState(h.msg)}}},
			Dependents:  []api.Dependent{{Kind: h.kind, Namespace: h.name, Name: h.name, BlockOwnerDeletion: true}},
			Pending:     []api.Pending{pending},
			RecentAudit: []api.AuditEntry{audit},
			Why:         h.msg,
			Stuck:       &stuck,
			Lint:        []api.LintFinding{lint},
		}
	case p == "/objects/uid-x/cascade":
		return api.Cascade{Items: []api.CascadeItem{{Target: target, Action: api.CascadeAction(h.kind), Rule: h.msg, Propagation: h.kind, Reason: h.msg, Depth: 1}},
			Total: 1, ByKind: map[string]map[api.CascadeAction]int{h.kind: {api.CascadeAction(h.msg): 1}},
			BlockedBy: []api.CascadeBlocker{{Target: target, Owner: target, Finalizers: []string{h.holder}, Reason: h.msg}}}
	case p == "/graph":
		// An owner above the object, a dependent below: four lines with the header.
		return api.Graph{Nodes: []api.GraphNode{
			{UID: "uid-o", APIVersion: h.kind, Kind: h.kind, Namespace: h.name, Name: h.holder},
			{UID: "uid-x", APIVersion: h.kind, Kind: h.kind, Namespace: h.name, Name: h.name},
			{UID: "uid-d", APIVersion: h.kind, Kind: h.msg, Namespace: h.name, Name: h.msg, BeingDeleted: true}},
			Edges: []api.GraphEdge{{Dependent: "uid-x", Owner: "uid-o", Controller: true}, {Dependent: "uid-d", Owner: "uid-x"}}}
	case p == "/lint":
		return api.LintReport{Items: []api.LintFinding{lint}}
	case p == "/audit":
		return api.AuditList{Items: []api.AuditEntry{audit}}
	case p == "/pending":
		return api.PendingList{Items: []api.Pending{pending}}
	case p == "/stuck":
		return api.StuckList{Items: []api.StuckItem{stuck}}
	case p == "/leases":
		return api.LeaseList{
			Items: []api.LeaseItem{{Lease: api.Lease{Namespace: h.name, Name: h.name, UID: h.name, HolderIdentity: &holder,
				Role: api.LeaseRole(h.kind), RenewTime: &at, Strategy: &holder, PreferredHolder: &holder},
				Candidates: []api.LeaseCandidate{{Namespace: h.name, Name: h.holder, LeaseName: h.name}}}},
			CandidatesWithoutLease: []api.LeaseCandidate{{Namespace: h.name, Name: h.holder, LeaseName: h.holder}},
			Findings:               []api.LeaseFinding{{Kind: api.LeaseFindingKind(h.msg), Namespace: h.name, Lease: h.name, Message: h.msg}},
		}
	case p == "/status":
		return api.Status{Version: h.msg, StartedAt: at, Synced: true,
			Enforcement: &api.EnforcementStatus{Paused: true, PausedBy: []string{h.holder}, PausedSince: &at, PausedReason: h.msg},
			LeaderElection: &api.LeaderStatus{Enabled: true, Identity: h.holder, Holder: h.holder, HolderSince: &at, Coordinated: true,
				Strategy: h.kind, PreferredHolder: h.holder, Candidates: []api.ElectionCandidate{{Name: h.holder, EmulationVersion: h.msg}}},
			Resources: []api.ResourceStatus{{Group: h.kind, Version: h.msg, Resource: h.name, Kind: h.kind, Objects: 1},
				{Group: h.msg, Version: h.msg, Resource: h.name, Kind: h.holder, Objects: 1}},
			Controllers: []api.ControllerStatus{{Name: api.Controller(h.kind), Skipping: true, SkipReason: h.msg}}}
	}
	w.WriteHeader(http.StatusNotFound)
	return api.Error{Error: h.msg}
}

// humanCommand is a command line whose output is for people, and what it
// exits with on the hostile server.
type humanCommand struct {
	args []string
	code int
}

// humanCommands print every text field of the hostile answers in
// tables, trees, prose, error lines and completions. SERVER stands for
// the server's URL.
var humanCommands = []humanCommand{
	{[]string{"tree", "cm/x"}, 0},
	{[]string{"why", "cm/x"}, 0},
	{[]string{"why", "cm/absent"}, 1},
	{[]string{"cascade", "cm/x", "-o", "wide"}, 0},
	{[]string{"get", "lint"}, 0},
	{[]string{"get", "lint", "-o", "wide"}, 0},
	{[]string{"get", "leases"}, 0},
	{[]string{"get", "leases", "-o", "wide"}, 0},
	{[]string{"get", "audit", "-o", "wide"}, 0},
	{[]string{"get", "pending", "-o", "wide"}, 0},
	{[]string{"get", "stuck", "-o", "wide"}, 0},
	{[]string{"status", "-o", "wide"}, 0},
	{[]string{"status", "--server", "SERVER/fail"}, 1},
	{[]string{"release"}, 1},
	{[]string{"__complete", "why", ""}, 0},
	{[]string{"__complete", "why", "cm/"}, 0},
	{[]string{"__complete", "why", "cm", ""}, 0},
	{[]string{"__complete", "why", "-n", ""}, 0},
	{[]string{"__complete", "get", "audit", "--rule", ""}, 0},
}

// runHuman runs c against srv and returns what it printed.
func runHuman(srv *httptest.Server, c humanCommand) (code int, stdout, stderr string) {
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = strings.ReplaceAll(a, "SERVER", srv.URL)
	}
	var out, errb bytes.Buffer
	e := &env{prog: "kubegcd", stdout: &out, stderr: &errb, lookupEnv: envOf(map[string]string{envServer: srv.URL}),
		now: func() time.Time { return time.Date(2026, 1, 2, 5, 4, 5, 0, time.UTC) }}
	code = e.main(context.Background(), args)
	return code, out.String(), errb.String()
}

// unprintable says where s holds a rune a terminal would act on or not
// show: anything unicode.IsPrint refuses, or a byte that is not UTF-8,
// but for the newline that ends a line. A completion's line may hold one
// tab: cobra's own, between a word and its description.
func unprintable(s string, completion bool) string {
	for n, line := range strings.Split(s, "\n") {
		if completion && strings.Count(line, "\t") == 1 {
			line = strings.Replace(line, "\t", " ", 1)
		}
		for i, r := range line {
			if r == utf8.RuneError {
				if _, size := utf8.DecodeRuneInString(line[i:]); size == 1 {
					return fmt.Sprintf("line %d: byte %#x is not UTF-8", n+1, line[i])
				}
			}
			if !unicode.IsPrint(r) {
				return fmt.Sprintf("line %d: %U %q", n+1, r, r)
			}
		}
	}
	return ""
}

// checkHuman runs c on srv and fails t when it prints an unprintable
// rune, or when the tree's layout breaks.
func checkHuman(t *testing.T, srv *httptest.Server, c humanCommand) {
	t.Helper()
	_, stdout, stderr := runHuman(srv, c)
	complete := c.args[0] == "__complete"
	for stream, s := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if where := unprintable(s, complete); where != "" {
			t.Errorf("%s: %s has %s: %q", strings.Join(c.args, " "), stream, where, s)
		}
	}
	if c.args[0] == "tree" && strings.Count(stdout, "\n") != 4 {
		t.Errorf("tree: %d lines, want the header and three objects: %q", strings.Count(stdout, "\n"), stdout)
	}
}

// TestHumanOutputEscapes: names, kinds, holders and messages that hold
// escape sequences, a bidi override or a newline reach every human
// output spelled out (\x1b), not as the bytes a terminal would act on,
// and do not break a table's rows or a tree's lines.
func TestHumanOutputEscapes(t *testing.T) {
	var h atomic.Pointer[hostile]
	h.Store(&hostile{
		name:   "web\x1b[1A\x1b[2K\nfake-row",
		kind:   "Kind\x1b]0;pwned\x07\u202e",
		holder: "holder\x1b[31m\u009b2J",
		msg:    "boom\r\x1b[2Jgone\u2028next",
	})
	srv := hostileServer(t, &h)
	for _, c := range humanCommands {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := runHuman(srv, c)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", code, c.code, stderr)
			}
			complete := c.args[0] == "__complete"
			for stream, s := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if where := unprintable(s, complete); where != "" {
					t.Errorf("%s has %s: %q", stream, where, s)
				}
			}
			// The hostile text is shown, spelled out.
			if !strings.Contains(stdout+stderr, `\x1b`) {
				t.Errorf("no \\x1b shown: %q", stdout+stderr)
			}
			if c.args[0] == "tree" && strings.Count(stdout, "\n") != 4 {
				t.Errorf("%d lines, want the header and three objects: %q", strings.Count(stdout, "\n"), stdout)
			}
		})
	}
	// What scripts read stays the API's own bytes.
	for _, args := range [][]string{{"get", "leases", "-o", "json"}, {"why", "cm/x", "-o", "json"}} {
		code, stdout, stderr := runHuman(srv, humanCommand{args: args})
		req := httptest.NewRequest(http.MethodGet, "/leases", nil)
		if args[0] == "why" {
			req = httptest.NewRequest(http.MethodGet, "/objects/uid-x", nil)
		}
		body, err := json.MarshalIndent(hostileAnswer(httptest.NewRecorder(), req, *h.Load()), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if want := string(body) + "\n"; code != 0 || stdout != want {
			t.Errorf("%s: exit %d, stderr %q, stdout\n%s\nwant the answer as sent:\n%s", strings.Join(args, " "), code, stderr, stdout, want)
		}
	}
}
