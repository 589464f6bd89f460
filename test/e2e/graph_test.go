package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

type graphJSON struct {
	Nodes     []api.GraphNode `json:"nodes"`
	Edges     []api.GraphEdge `json:"edges"`
	Truncated bool            `json:"truncated"`
}

type graphObjectDetail struct {
	Object struct {
		UID             string `json:"uid"`
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
		OwnerReferences []struct {
			UID                string `json:"uid"`
			Controller         *bool  `json:"controller"`
			BlockOwnerDeletion *bool  `json:"blockOwnerDeletion"`
		} `json:"ownerReferences"`
	} `json:"object"`
	Owners      []api.OwnerStatus  `json:"owners"`
	Dependents  []db.DependentInfo `json:"dependents"`
	Pending     []api.Pending      `json:"pending"`
	RecentAudit []api.AuditEntry   `json:"recentAudit"`
	Why         string             `json:"why"`
}

// TestGraphAndObjects reads the ownership graph and object details of a
// namespace holding a 3-level chain top ← mid ← leaf, an unrelated pair, an
// object with no owners, and garbage: the dependent of an owner UID that
// never existed. Dry-run only (the default), so it may run beside others.
func TestGraphAndObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A fresh name each run, so that -count=N works against one cluster.
	ns := namespaces.New(t, "graph-"+string(uuid.NewUUID())[:8])
	cms := kube.CoreV1().ConfigMaps(ns)
	create := func(name string, owners ...metav1.OwnerReference) types.UID {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		return cm.UID
	}
	ref := func(name string, uid types.UID, controller bool) metav1.OwnerReference {
		r := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid, BlockOwnerDeletion: ptr.To(true)}
		if controller {
			r.Controller = ptr.To(true)
		}
		return r
	}
	top := create("top")
	mid := create("mid", ref("top", top, true))
	leaf := create("leaf", ref("mid", mid, false))
	otherOwner := create("other-owner")
	otherDep := create("other-dep", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "other-owner", UID: otherOwner})
	create("alone")
	ghost := uuid.NewUUID()
	garbage := create("garbage", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "never", UID: ghost})

	d := daemons.Start(t, "", "--resync-period=1s", "--discovery-interval=2s")
	// Ready: every resource is discovered, so the graph knows Deployments
	// are namespaced (a missing owner's namespace depends on it).
	d.WaitReady(t, 60*time.Second)

	nsPath := "/graph?namespace=" + url.QueryEscape(ns)
	var g graphJSON
	eventually(t, 60*time.Second, func() error {
		code, body, err := d.Get(nsPath)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s %w", nsPath, code, body, err)
		}
		g = graphJSON{}
		if err := json.Unmarshal(body, &g); err != nil {
			return stopError{Err: fmt.Errorf("GET %s: %v: %s", nsPath, err, body)}
		}
		if len(g.Nodes) < 7 {
			return fmt.Errorf("mirror shows %d of 7 nodes", len(g.Nodes))
		}
		return nil
	})

	t.Run("namespace", func(t *testing.T) {
		// The chain, the pair and the garbage with its missing owner; not
		// "alone", which takes no part in ownership.
		want := graphSortedUIDs(top, mid, leaf, otherOwner, otherDep, garbage, ghost)
		if got := graphNodeUIDs(g); !slices.Equal(got, want) {
			t.Fatalf("nodes %v, want %v", got, want)
		}
		if g.Truncated {
			t.Error("truncated")
		}
		for _, n := range g.Nodes {
			virtual := n.UID == string(ghost)
			if n.Missing != virtual || n.Virtual != virtual || n.BeingDeleted || n.DeletingDependents {
				t.Errorf("node %+v: flags wrong", n)
			}
			if !virtual && (n.APIVersion != "v1" || n.Kind != "ConfigMap" || n.Namespace != ns || n.Name == "") {
				t.Errorf("node %+v: identity wrong", n)
			}
		}
		want1 := api.GraphNode{UID: string(ghost), APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "never",
			Missing: true, Virtual: true}
		if n := graphFindNode(g, string(ghost)); n != want1 {
			t.Errorf("missing owner node %+v, want %+v", n, want1)
		}
		wantEdges := map[api.GraphEdge]bool{
			{Dependent: string(mid), Owner: string(top), Controller: true, BlockOwnerDeletion: true}: true,
			{Dependent: string(leaf), Owner: string(mid), BlockOwnerDeletion: true}:                  true,
			{Dependent: string(otherDep), Owner: string(otherOwner)}:                                 true,
			{Dependent: string(garbage), Owner: string(ghost)}:                                       true,
		}
		if len(g.Edges) != len(wantEdges) {
			t.Fatalf("edges %+v, want %v", g.Edges, wantEdges)
		}
		for _, e := range g.Edges {
			if !wantEdges[e] {
				t.Errorf("unexpected edge %+v", e)
			}
		}
	})

	t.Run("uid", func(t *testing.T) {
		// Transitive owners and dependents of the middle: the chain, exactly.
		var chain graphJSON
		d.GetJSON(t, "/graph?uid="+string(mid), http.StatusOK, &chain)
		if got, want := graphNodeUIDs(chain), graphSortedUIDs(top, mid, leaf); !slices.Equal(got, want) {
			t.Fatalf("?uid=mid nodes %v, want %v", got, want)
		}
		if len(chain.Edges) != 2 {
			t.Fatalf("?uid=mid edges %+v", chain.Edges)
		}
		// Intersected with another namespace, nothing is left.
		var none graphJSON
		d.GetJSON(t, "/graph?namespace=kube-system&uid="+string(mid), http.StatusOK, &none)
		if len(none.Nodes)+len(none.Edges) != 0 {
			t.Fatalf("?uid=mid in kube-system: %+v", none)
		}
		// A missing owner can be asked about too.
		var ghostGraph graphJSON
		d.GetJSON(t, "/graph?uid="+string(ghost), http.StatusOK, &ghostGraph)
		if got, want := graphNodeUIDs(ghostGraph), graphSortedUIDs(garbage, ghost); !slices.Equal(got, want) {
			t.Fatalf("?uid=ghost nodes %v, want %v", got, want)
		}
	})

	t.Run("dot", func(t *testing.T) {
		c := http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get(d.URL + "/graph?format=dot&uid=" + string(mid) + "&uid=" + string(garbage))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		dot := string(body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/vnd.graphviz; charset=utf-8" {
			t.Fatalf("DOT: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), dot)
		}
		if !strings.HasPrefix(dot, "strict digraph full {\n") || !strings.HasSuffix(dot, "}\n") {
			t.Fatalf("not a digraph:\n%s", dot)
		}
		for _, uid := range []types.UID{top, mid, leaf, garbage, ghost} {
			if !strings.Contains(dot, fmt.Sprintf("  %q [\n    label=\"uid=%s\\nnamespace=%s\\n", uid, uid, ns)) {
				t.Errorf("no vertex for %s:\n%s", uid, dot)
			}
		}
		for _, want := range []string{
			fmt.Sprintf("%q -> %q;", mid, top), fmt.Sprintf("%q -> %q;", leaf, mid), fmt.Sprintf("%q -> %q;", garbage, ghost),
			`\nConfigMap.v1/mid\n"`, `\nDeployment.v1.apps/never\nvirtual,missingFromGraph\n"`,
			`    missing="true"` + "\n", `    virtual="true"` + "\n",
		} {
			if !strings.Contains(dot, want) {
				t.Errorf("DOT lacks %s:\n%s", want, dot)
			}
		}
		if n := strings.Count(dot, " -> "); n != 3 {
			t.Errorf("%d edges, want 3:\n%s", n, dot)
		}
		for _, uid := range []types.UID{otherOwner, otherDep} {
			if strings.Contains(dot, string(uid)) {
				t.Errorf("DOT shows unrelated %s", uid)
			}
		}
	})

	t.Run("objects", func(t *testing.T) {
		// The ownership GC runs in dry-run: it confirms the owner is absent
		// with a live GET, then records a pending delete.
		var det graphObjectDetail
		path := "/objects/" + string(garbage)
		eventually(t, 60*time.Second, func() error {
			code, body, err := d.Get(path)
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("GET %s: %d %s %v", path, code, body, err)
			}
			det = graphObjectDetail{}
			if err := json.Unmarshal(body, &det); err != nil {
				return stopError{Err: err}
			}
			if len(det.Pending) == 0 {
				return fmt.Errorf("not pending yet: %s", det.Why)
			}
			return nil
		})
		if p := det.Pending[0]; len(det.Pending) != 1 || p.Controller != "ownergc" || p.Action != "delete" || p.Target.UID != string(garbage) {
			t.Fatalf("pending %+v", det.Pending)
		}
		if !strings.HasPrefix(det.Why, "It is pending: ownergc would delete it (rule ") || !strings.Contains(det.Why, det.Pending[0].Reason) {
			t.Errorf("why = %q", det.Why)
		}
		if len(det.Owners) != 1 || det.Owners[0].State != api.OwnerMissing || det.Owners[0].UID != string(ghost) || det.Owners[0].Namespace != ns {
			t.Errorf("owners %+v", det.Owners)
		}
		if det.Object.Name != "garbage" || det.Object.ResourceVersion == "" || len(det.Object.OwnerReferences) != 1 {
			t.Errorf("object %+v", det.Object)
		}
		// The dry-run decision is audited once.
		eventually(t, 10*time.Second, func() error {
			var again graphObjectDetail
			d.GetJSON(t, path, http.StatusOK, &again)
			if len(again.RecentAudit) == 0 || !again.RecentAudit[0].DryRun || again.RecentAudit[0].Action != "delete" {
				return fmt.Errorf("recentAudit %+v", again.RecentAudit)
			}
			return nil
		})

		var healthy graphObjectDetail
		d.GetJSON(t, "/objects/"+string(mid), http.StatusOK, &healthy)
		if len(healthy.Pending) != 0 || healthy.Why != "It is not pending: at least one owner exists (ConfigMap/top)." {
			t.Errorf("mid: pending %+v, why %q", healthy.Pending, healthy.Why)
		}
		if len(healthy.Owners) != 1 || healthy.Owners[0].State != api.OwnerPresent || len(healthy.Dependents) != 1 ||
			healthy.Dependents[0].UID != string(leaf) || !healthy.Dependents[0].BlockOwnerDeletion {
			t.Errorf("mid: owners %+v dependents %+v", healthy.Owners, healthy.Dependents)
		}
		if r := healthy.Object.OwnerReferences; len(r) != 1 || r[0].Controller == nil || !*r[0].Controller || r[0].BlockOwnerDeletion == nil {
			t.Errorf("mid: ownerReferences %+v", r)
		}
		d.GetJSON(t, "/objects/"+string(top), http.StatusOK, &healthy)
		if healthy.Why != "It is not pending: it has no owner references." {
			t.Errorf("top: why %q", healthy.Why)
		}
	})

	t.Run("errors", func(t *testing.T) {
		unknown := string(uuid.NewUUID())
		for path, code := range map[string]int{
			"/graph?limit=0":                      http.StatusBadRequest,
			"/graph?limit=100000001":              http.StatusBadRequest,
			"/graph?limit=100001&namespace=" + ns: http.StatusBadRequest,
			"/graph?format=svg":                   http.StatusBadRequest,
			"/graph?namespaces=" + ns:             http.StatusBadRequest,
			"/graph?uid=" + unknown:               http.StatusNotFound,
			"/graph?format=dot&uid=" + unknown:    http.StatusNotFound,
			"/objects/" + unknown:                 http.StatusNotFound,
			"/objects/" + string(mid) + "?full=1": http.StatusBadRequest,
		} {
			var e map[string]string
			d.GetJSON(t, path, code, &e)
			if e["error"] == "" || len(e) != 1 {
				t.Errorf("GET %s: %v, want {\"error\": ...}", path, e)
			}
		}
	})
}

func graphSortedUIDs(uids ...types.UID) []string {
	out := make([]string, 0, len(uids))
	for _, u := range uids {
		out = append(out, string(u))
	}
	slices.Sort(out)
	return out
}

func graphNodeUIDs(g graphJSON) []string {
	out := make([]string, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		out = append(out, n.UID)
	}
	return out
}

func graphFindNode(g graphJSON, uid string) api.GraphNode {
	for _, n := range g.Nodes {
		if n.UID == uid {
			return n
		}
	}
	return api.GraphNode{}
}

// TestWhyAfterDryRunRemoval: in dry-run, ownergc's decision to remove a
// dangling reference from an object another owner holds leaves nothing
// pending (it remembers the reference as removed); the object's why says
// what it decided rather than that it has not decided.
func TestWhyAfterDryRunRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "why-dry-run")
	owner, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep",
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID()},
		}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", "--resync-period=1s")
	d.WaitReady(t, 60*time.Second)
	var det graphObjectDetail
	eventually(t, 60*time.Second, func() error {
		det = graphObjectDetail{}
		d.GetJSON(t, "/objects/"+string(dep.UID), http.StatusOK, &det)
		if len(det.RecentAudit) == 0 || det.RecentAudit[0].Action != "remove-owner-refs" {
			return fmt.Errorf("no dry-run removal audited yet: %+v", det.RecentAudit)
		}
		// The pending row goes just after the audit row is written.
		if len(det.Pending) != 0 {
			return fmt.Errorf("still pending: %+v", det.Pending)
		}
		return nil
	})
	e := det.RecentAudit[0]
	if !e.DryRun || e.Outcome != api.OutcomeDryRun || len(det.Pending) != 0 {
		t.Fatalf("audit %+v, pending %+v: want a dry-run removal and nothing pending", e, det.Pending)
	}
	want := fmt.Sprintf("It is not pending: at least one owner exists (ConfigMap/owner); its other references (ConfigMap/ghost: missing) "+
		"would be removed: ownergc decided in dry-run at %s to remove owner references from it (rule %s): ",
		e.Time.UTC().Format(time.RFC3339), e.Rule)
	if !strings.HasPrefix(det.Why, want) || !strings.Contains(det.Why, "dry-run sends nothing to the cluster.") {
		t.Errorf("why = %q\nwant it to start %q", det.Why, want)
	}
}
