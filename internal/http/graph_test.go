package http

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

type fakeIngest struct{}

func (fakeIngest) Synced() bool                { return true }
func (fakeIngest) Resources() []ResourceStatus { return nil }

func boolp(b bool) *bool { return &b }

// testServer serves a database holding, in namespace a, A ← B (controller,
// blocking), G → a Deployment that was never mirrored, D (being deleted in
// the foreground) ← E, and L with no owners.
func testServer(t testing.TB) (*httptest.Server, *db.DB) {
	t.Helper()
	ctx := context.Background()
	store := dbtest.Open(t)
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cm := func(name string, refs ...api.OwnerRef) *db.Object {
		return &db.Object{UID: "uid-" + name, APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: name,
			ResourceVersion: "7", CreationTimestamp: &created, OwnerReferences: refs}
	}
	ref := func(name string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: "uid-" + name}
	}
	b := cm("B", api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "A", UID: "uid-A", Controller: boolp(true), BlockOwnerDeletion: boolp(true)})
	d := cm("D")
	d.DeletionTimestamp, d.Finalizers = &created, []string{"foregroundDeletion", "example.com/hold"}
	var evs []db.Event
	for _, o := range []*db.Object{cm("A"), b, cm("G", api.OwnerRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-ghost"}),
		d, cm("E", ref("D")), cm("L")} {
		evs = append(evs, db.Event{ResourceID: rid, Object: o})
	}
	if _, err := store.Mirror().ApplyEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(),
		Rules: sandboxRules{list: testRuleList()}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, store
}

// reply is what a test needs of a response, whose body get has read and
// closed.
type reply struct {
	StatusCode int
	Header     http.Header
}

func get(t *testing.T, srv *httptest.Server, path string) (reply, []byte) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{StatusCode: resp.StatusCode, Header: resp.Header}, body
}

func getJSON(t *testing.T, srv *httptest.Server, path string, want int, v any) {
	t.Helper()
	resp, body := get(t, srv, path)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d: %s", path, resp.StatusCode, want, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
}

func TestGraphJSON(t *testing.T) {
	srv, _ := testServer(t)
	var g struct {
		Nodes     []map[string]any `json:"nodes"`
		Edges     []map[string]any `json:"edges"`
		Truncated *bool            `json:"truncated"`
	}
	getJSON(t, srv, "/graph?namespace=a", 200, &g)
	var uids []string
	for _, n := range g.Nodes {
		uids = append(uids, n["uid"].(string))
		if len(n) != 9 {
			t.Errorf("node %v has %d fields, want 9", n, len(n))
		}
	}
	if got := strings.Join(uids, ","); got != "uid-A,uid-B,uid-D,uid-E,uid-G,uid-ghost" {
		t.Fatalf("nodes = %s", got)
	}
	ghost := g.Nodes[5]
	if ghost["missing"] != true || ghost["virtual"] != true || ghost["namespace"] != "a" || ghost["kind"] != "Deployment" ||
		ghost["apiVersion"] != "apps/v1" || ghost["name"] != "web" {
		t.Errorf("missing owner node = %v", ghost)
	}
	if dn := g.Nodes[2]; dn["beingDeleted"] != true || dn["deletingDependents"] != true || dn["missing"] != false {
		t.Errorf("node D = %v", dn)
	}
	if len(g.Edges) != 3 || g.Truncated == nil || *g.Truncated {
		t.Fatalf("edges = %v, truncated %v", g.Edges, g.Truncated)
	}
	want := map[string]any{"dependent": "uid-B", "owner": "uid-A", "controller": true, "blockOwnerDeletion": true}
	for k, v := range want {
		if g.Edges[0][k] != v {
			t.Errorf("edge B→A = %v, want %v", g.Edges[0], want)
		}
	}

	getJSON(t, srv, "/graph?uid=uid-B&format=json", 200, &g)
	if len(g.Nodes) != 2 || len(g.Edges) != 1 {
		t.Fatalf("?uid=uid-B: %+v", g)
	}
	getJSON(t, srv, "/graph?limit=2", 200, &g)
	if len(g.Nodes) != 2 || !*g.Truncated || len(g.Edges) != 1 {
		t.Fatalf("?limit=2: %+v", g)
	}
	// isolated=true adds L, which has neither owners nor dependents, as a
	// node without edges; the edges stay those of the namespace.
	getJSON(t, srv, "/graph?namespace=a&isolated=true", 200, &g)
	uids = uids[:0]
	for _, n := range g.Nodes {
		uids = append(uids, n["uid"].(string))
	}
	if got := strings.Join(uids, ","); got != "uid-A,uid-B,uid-D,uid-E,uid-G,uid-L,uid-ghost" || len(g.Edges) != 3 {
		t.Fatalf("?namespace=a&isolated=true: nodes %s, %d edges; want L added, 3 edges", got, len(g.Edges))
	}
	// A namespace with nothing in it is an empty graph, with arrays.
	resp, body := get(t, srv, "/graph?namespace=empty")
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"nodes":[]`) || !strings.Contains(string(body), `"edges":[]`) {
		t.Fatalf("empty graph: %d %s", resp.StatusCode, body)
	}
}

func TestGraphDOT(t *testing.T) {
	srv, _ := testServer(t)
	resp, body := get(t, srv, "/graph?format=dot&uid=uid-G&uid=uid-E&uid=uid-G")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/vnd.graphviz; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	// Upstream's layout (pkg/controller/garbagecollector/dump.go and its
	// testdata/*.dot), vertex for vertex.
	want := `strict digraph full {
  // Node definitions.
  "uid-D" [
    label="uid=uid-D\nnamespace=a\nConfigMap.v1/D\nbeingDeleted,deletingDependents\n"
    group=""
    version="v1"
    kind="ConfigMap"
    namespace="a"
    name="D"
    uid="uid-D"
    missing="false"
    beingDeleted="true"
    deletingDependents="true"
    virtual="false"
  ];
  "uid-E" [
    label="uid=uid-E\nnamespace=a\nConfigMap.v1/E\n"
    group=""
    version="v1"
    kind="ConfigMap"
    namespace="a"
    name="E"
    uid="uid-E"
    missing="false"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "uid-G" [
    label="uid=uid-G\nnamespace=a\nConfigMap.v1/G\n"
    group=""
    version="v1"
    kind="ConfigMap"
    namespace="a"
    name="G"
    uid="uid-G"
    missing="false"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "uid-ghost" [
    label="uid=uid-ghost\nnamespace=a\nDeployment.v1.apps/web\nvirtual,missingFromGraph\n"
    group="apps"
    version="v1"
    kind="Deployment"
    namespace="a"
    name="web"
    uid="uid-ghost"
    missing="true"
    beingDeleted="false"
    deletingDependents="false"
    virtual="true"
  ];
  // Edge definitions.
  "uid-E" -> "uid-D";
  "uid-G" -> "uid-ghost";
}
`
	if string(body) != want {
		t.Fatalf("DOT:\n%s\nwant:\n%s", body, want)
	}

	resp, body = get(t, srv, "/graph?format=dot&namespace=empty")
	if resp.StatusCode != 200 || string(body) != "strict digraph full {\n}\n" {
		t.Fatalf("empty DOT: %d %q", resp.StatusCode, body)
	}
	_, body = get(t, srv, "/graph?format=dot&limit=1")
	if !strings.HasPrefix(string(body), "strict digraph full {\n  // Truncated to the first 1 vertices") {
		t.Fatalf("truncated DOT does not say so:\n%s", body)
	}
}

func TestDOTQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:             `"plain"`,
		"a\"b\\c\nd":        `"a\"b\\c\nd"`,
		"ünï🐹":              `"ünï🐹"`,
		"tab\there\x00\xff": "\"tab here \uFFFD\"",
	} {
		if got := dotQuote(in); got != want {
			t.Errorf("dotQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestGraphBadRequests(t *testing.T) {
	srv, _ := testServer(t)
	for path, want := range map[string]int{
		"/graph?format=xml":               400,
		"/graph?format=dot&format=json":   400,
		"/graph?limit=0":                  400,
		"/graph?limit=100001&namespace=a": 400,
		"/graph?limit=100000001":          400,
		"/graph?limit=ten":                400,
		"/graph?colour=red":               400,
		"/graph?uid=":                     400,
		"/graph?namespace=a&namespace=b":  400,
		"/graph?isolated=true":            400,
		"/graph?namespace=a&isolated=yes": 400,
		"/graph?uid=nope":                 404,
		"/graph?uid=uid-A&uid=nope":       404,
		"/graph?uid=nope&format=dot":      404,
		"/objects/nope":                   404,
		"/objects/uid-A?verbose=1":        400,
	} {
		var e map[string]any
		getJSON(t, srv, path, want, &e)
		if msg, ok := e["error"].(string); !ok || msg == "" || len(e) != 1 {
			t.Errorf("GET %s: body %v, want {\"error\": ...}", path, e)
		}
	}
	var ok map[string]any
	getJSON(t, srv, "/graph?limit=100000&uid=uid-ghost", 200, &ok)
}

type objectResponse struct {
	Object struct {
		UID               string     `json:"uid"`
		ResourceVersion   string     `json:"resourceVersion"`
		CreationTimestamp *time.Time `json:"creationTimestamp"`
		DeletionTimestamp *time.Time `json:"deletionTimestamp"`
		Finalizers        []string   `json:"finalizers"`
		OwnerReferences   []map[string]any
	} `json:"object"`
	Owners      []api.Owner     `json:"owners"`
	Dependents  []api.Dependent `json:"dependents"`
	Pending     []db.Pending    `json:"pending"`
	RecentAudit []db.AuditEntry `json:"recentAudit"`
	Why         string          `json:"why"`
}

func TestObject(t *testing.T) {
	srv, store := testServer(t)
	ctx := context.Background()

	var b objectResponse
	getJSON(t, srv, "/objects/uid-B", 200, &b)
	if b.Object.UID != "uid-B" || b.Object.ResourceVersion != "7" || b.Object.CreationTimestamp == nil ||
		b.Object.DeletionTimestamp != nil || b.Object.Finalizers == nil || len(b.Object.OwnerReferences) != 1 {
		t.Fatalf("object = %+v", b.Object)
	}
	if r := b.Object.OwnerReferences[0]; len(r) != 6 || r["controller"] != true || r["blockOwnerDeletion"] != true || r["uid"] != "uid-A" {
		t.Errorf("ownerReference = %v, want all six fields", r)
	}
	if len(b.Owners) != 1 || b.Owners[0].State != api.OwnerPresent || b.Dependents == nil || len(b.Dependents) != 0 ||
		b.Pending == nil || b.RecentAudit == nil {
		t.Fatalf("B: %+v", b)
	}
	if b.Why != "It is not pending: at least one owner exists (ConfigMap/A)." {
		t.Errorf("why = %q", b.Why)
	}

	var a objectResponse
	getJSON(t, srv, "/objects/uid-A", 200, &a)
	if len(a.Dependents) != 1 || a.Dependents[0].UID != "uid-B" || !a.Dependents[0].BlockOwnerDeletion || a.Why != "It is not pending: it has no owner references." {
		t.Fatalf("A: %+v", a)
	}

	var d objectResponse
	getJSON(t, srv, "/objects/uid-D", 200, &d)
	if !strings.Contains(d.Why, "being deleted and waits for finalizers foregroundDeletion, example.com/hold") {
		t.Errorf("why of D = %q", d.Why)
	}

	var g objectResponse
	getJSON(t, srv, "/objects/uid-G", 200, &g)
	if g.Owners[0].State != api.OwnerMissing || g.Owners[0].Namespace != "a" || !strings.Contains(g.Why, "live GET") {
		t.Fatalf("G before a decision: %+v", g)
	}

	// Once ownergc records a decision, the object is pending, with its reason
	// and its history.
	target := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "G", UID: "uid-G"}
	p := &db.Pending{Controller: "ownergc", Rule: "BR-21-01", Action: "delete", Target: target, ResourceVersion: "7",
		Reason: "no owner exists (1 gone, 0 being deleted in the foreground): deleting with propagation Background"}
	if _, err := store.Ledger().UpsertPending(ctx, p); err != nil {
		t.Fatal(err)
	}
	for range 25 {
		if err := store.Ledger().InsertAudit(ctx, &db.AuditEntry{Instance: "test", Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
			Target: target, DryRun: true, Outcome: api.OutcomeDryRun, Reason: p.Reason}); err != nil {
			t.Fatal(err)
		}
	}
	getJSON(t, srv, "/objects/uid-G", 200, &g)
	if len(g.Pending) != 1 || g.Pending[0].Action != "delete" || len(g.RecentAudit) != 20 || g.RecentAudit[0].ID <= g.RecentAudit[19].ID {
		t.Fatalf("G after a decision: pending %+v, %d audit rows", g.Pending, len(g.RecentAudit))
	}
	if want := "It is pending: ownergc would delete it (rule BR-21-01): " + p.Reason + "."; g.Why != want {
		t.Errorf("why = %q, want %q", g.Why, want)
	}
}

func TestWhy(t *testing.T) {
	now := time.Now()
	obj := &db.Object{OwnerReferences: []api.OwnerRef{{}}}
	owner := func(kind, name string, state api.OwnerState) api.OwnerStatus {
		return api.OwnerStatus{Kind: kind, Name: name, State: state}
	}
	decided := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dryRemove := &db.AuditEntry{Time: decided, Controller: "ownergc", Rule: "BR-21-01", Action: "remove-owner-refs",
		Reason: "1 owner(s) still exist; removing 1 reference(s)", DryRun: true, Outcome: api.OutcomeDryRun}
	dryDelete := &db.AuditEntry{Time: decided, Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
		Reason: "no owner exists.", DryRun: true, Outcome: api.OutcomeDryRun}
	for _, tc := range []struct {
		name   string
		det    objectFacts
		dry    *db.AuditEntry
		wanted string
	}{
		{"being deleted, no finalizers", objectFacts{Object: &db.Object{DeletionTimestamp: &now}}, nil,
			"It is not pending: it is being deleted and no finalizer holds it, so the API server removes it."},
		{"owner being deleted still holds", objectFacts{Object: obj, Owners: []api.OwnerStatus{
			owner("Deployment", "gone", api.OwnerMissing), owner("ReplicaSet", "rs", api.OwnerBeingDeleted)}}, nil,
			"It is not pending: at least one owner exists (ReplicaSet/rs, itself being deleted); its other references " +
				"(Deployment/gone: missing) would be removed, but ownergc has not decided about them yet."},
		{"references removed in dry-run", objectFacts{Object: obj, Owners: []api.OwnerStatus{
			owner("ConfigMap", "owner", api.OwnerPresent), owner("ConfigMap", "lint-me", api.OwnerMissing)}}, dryRemove,
			"It is not pending: at least one owner exists (ConfigMap/owner); its other references (ConfigMap/lint-me: missing) " +
				"would be removed: ownergc decided in dry-run at 2026-01-02T03:04:05Z to remove owner references from it " +
				"(rule BR-21-01): 1 owner(s) still exist; removing 1 reference(s); dry-run sends nothing to the cluster."},
		{"deleted in dry-run", objectFacts{Object: obj, Owners: []api.OwnerStatus{owner("ConfigMap", "gone", api.OwnerMissing)}}, dryDelete,
			"It is not pending yet, though no owner holds it in the mirror (ConfigMap/gone: missing): ownergc decided in dry-run " +
				"at 2026-01-02T03:04:05Z to delete it (rule BR-21-01): no owner exists; dry-run sends nothing to the cluster."},
		{"owners deleting dependents", objectFacts{Object: obj, Owners: []api.OwnerStatus{
			owner("Job", "j", api.OwnerDeletingDependents), owner("ConfigMap", "c", api.OwnerOtherNamespace)}}, nil,
			"It is not pending yet, though no owner holds it in the mirror (Job/j: deleting-dependents; ConfigMap/c: " +
				"other-namespace): ownergc has not recorded a decision yet."},
		{"two decisions", objectFacts{Object: obj, Pending: []db.Pending{
			{Controller: "ownergc", Action: "unblock-owner-refs", Rule: "BR-21-03", Reason: "cycle"},
			{Controller: "ownergc", Action: "delete", Rule: "BR-21-03", Reason: "foreground"}}}, dryDelete,
			"It is pending: ownergc would make its owner references non-blocking (rule BR-21-03): cycle; and " +
				"ownergc would delete it (rule BR-21-03): foreground."},
	} {
		if got := why(tc.det, tc.dry); got != tc.wanted {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.wanted)
		}
	}
}

// Only ownergc's newest row about the object counts, and only when it is a
// dry-run decision made since the object's ownership last changed.
func TestDryRunDecision(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	row := func(controller api.Controller, outcome api.Outcome, at time.Time) db.AuditEntry {
		return db.AuditEntry{Time: at, Controller: controller, Outcome: outcome, DryRun: outcome == api.OutcomeDryRun}
	}
	for _, tc := range []struct {
		name    string
		audit   []db.AuditEntry
		changed time.Time
		want    int // index of the row, -1 for none
	}{
		{"none", nil, t0, -1},
		{"dry-run since the change", []db.AuditEntry{row("ownergc", api.OutcomeDryRun, t0)}, t0, 0},
		{"dry-run before the change", []db.AuditEntry{row("ownergc", api.OutcomeDryRun, t0)}, t0.Add(time.Second), -1},
		{"another controller's first", []db.AuditEntry{row("podgc", api.OutcomeDryRun, t0), row("ownergc", api.OutcomeDryRun, t0)}, t0, 1},
		{"newest is kept, not dry-run", []db.AuditEntry{row("ownergc", api.OutcomeSkipped, t0), row("ownergc", api.OutcomeDryRun, t0)}, t0, -1},
		{"newest applied", []db.AuditEntry{row("ownergc", api.OutcomeApplied, t0)}, time.Time{}, -1},
	} {
		got := dryRunDecision(tc.audit, tc.changed)
		if tc.want < 0 && got != nil || tc.want >= 0 && got != &tc.audit[tc.want] {
			t.Errorf("%s: got %+v, want row %d", tc.name, got, tc.want)
		}
	}
}

// The whole graph streams; what it streams is, at every limit, what the
// in-memory graph renders: the same JSON document, the same DOT.
func TestGraphWholeStreams(t *testing.T) {
	srv, store := testServer(t)
	for limit := 1; limit <= 8; limit++ {
		want, err := store.Objects().Graph(context.Background(), db.GraphFilter{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var got api.Graph
		getJSON(t, srv, fmt.Sprintf("/graph?limit=%d", limit), 200, &got)
		if diff := cmp.Diff(*apiGraph(want), got); diff != "" {
			t.Errorf("limit %d: JSON (-in memory +streamed):\n%s", limit, diff)
		}
		resp, body := get(t, srv, fmt.Sprintf("/graph?format=dot&limit=%d", limit))
		var dot strings.Builder
		writeDOT(&dot, want, limit)
		wantDOT := strings.Replace(dot.String(), fmt.Sprintf("(at most %d)", api.GraphFilteredMaxLimit),
			fmt.Sprintf("(at most %d)", graphStreamMaxLimit), 1)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/vnd.graphviz; charset=utf-8" {
			t.Errorf("limit %d: DOT answer %d %q", limit, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if diff := cmp.Diff(wantDOT, string(body)); diff != "" {
			t.Errorf("limit %d: DOT (-in memory +streamed):\n%s", limit, diff)
		}
	}
}

// An owner missing from the mirror is marked neverSeen only when neither
// history nor audit knows its UID: its page would know nothing of it.
func TestObjectOwnerNeverSeen(t *testing.T) {
	srv, store := testServer(t)
	ctx := context.Background()
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	// X is mirrored, then deleted: Y's owner was seen.
	x := &db.Object{UID: "uid-X", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "X", ResourceVersion: "1"}
	y := &db.Object{UID: "uid-Y", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "Y", ResourceVersion: "1",
		OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "X", UID: "uid-X"}}}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Object: x}, {ResourceID: rid, Object: y}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Deleted: true, Object: x}}); err != nil {
		t.Fatal(err)
	}
	owner := func(uid string) (state api.OwnerState, neverSeen bool) {
		var out struct {
			Owners []struct {
				State     api.OwnerState `json:"state"`
				NeverSeen bool           `json:"neverSeen"`
			} `json:"owners"`
		}
		getJSON(t, srv, "/objects/"+uid, 200, &out)
		if len(out.Owners) != 1 {
			t.Fatalf("%s has owners %+v, want one", uid, out.Owners)
		}
		return out.Owners[0].State, out.Owners[0].NeverSeen
	}
	for _, tt := range []struct {
		name      string
		setup     func()
		dependent string
		state     api.OwnerState
		neverSeen bool
	}{
		{name: "present", dependent: "uid-B", state: api.OwnerPresent},
		{name: "never mirrored", dependent: "uid-G", state: api.OwnerMissing, neverSeen: true},
		{name: "mirrored, then deleted", dependent: "uid-Y", state: api.OwnerMissing},
		{name: "known to audit only", dependent: "uid-G", state: api.OwnerMissing, setup: func() {
			if err := store.Ledger().InsertAudit(ctx, &db.AuditEntry{Instance: "test", Controller: "ownergc", Rule: "BR-21-01", Action: "delete",
				Target:  api.Target{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "a", Name: "web", UID: "uid-ghost"},
				Outcome: api.OutcomeApplied, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			if state, neverSeen := owner(tt.dependent); state != tt.state || neverSeen != tt.neverSeen {
				t.Errorf("owner of %s: state %s, neverSeen %v; want %s, %v", tt.dependent, state, neverSeen, tt.state, tt.neverSeen)
			}
		})
	}
}
