package e2eui

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// awaitPromise makes chromedp.Evaluate wait for the promise the script
// returns.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// objectUID waits until the mirror holds a ConfigMap and returns its UID.
func objectUID(t *testing.T, d *e2eutil.Daemon, ns, name string) string {
	t.Helper()
	var uid string
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var out struct {
			Items []struct {
				UID string `json:"uid"`
			} `json:"items"`
		}
		d.GetJSON(t, "/objects?kind=ConfigMap&namespace="+ns+"&name="+name, 200, &out)
		if len(out.Items) != 1 {
			return fmt.Errorf("%s/%s not mirrored yet", ns, name)
		}
		uid = out.Items[0].UID
		return nil
	})
	return uid
}

// graphSize waits until /graph?uid= around uid has nodes nodes and returns
// its edge count: the mirror has caught up with what the test created.
func graphSize(t *testing.T, d *e2eutil.Daemon, uid string, nodes int) int {
	t.Helper()
	var edges int
	e2eutil.Eventually(t, 60*time.Second, func() error {
		var g struct {
			Nodes []struct{} `json:"nodes"`
			Edges []struct{} `json:"edges"`
		}
		d.GetJSON(t, "/graph?uid="+url.QueryEscape(uid), 200, &g)
		if len(g.Nodes) != nodes {
			return fmt.Errorf("graph has %d nodes, want %d", len(g.Nodes), nodes)
		}
		edges = len(g.Edges)
		return nil
	})
	return edges
}

func TestSearchFindsObjectByName(t *testing.T) {
	ns := namespaces.New(t, "ui-search")
	configMap(t, ns, "checkout-web")
	configMap(t, ns, "checkout-db")
	d := daemons.Start(t, "")
	objectUID(t, d, ns, "checkout-web")
	p := openPage(t, d)
	p.shot("overview")

	for _, tt := range []struct {
		typed string
		down  int    // ArrowDown presses before Enter
		want  string // the suggestion's text
	}{
		{typed: "checkout-web", want: "ui-search/checkout-web"},                    // a name, in any kind
		{typed: "ui-search/configmaps/checkout-w", want: "ui-search/checkout-web"}, // namespace/kind/fragment
		{typed: "ConfigMap/out-d", want: "ui-search/checkout-db"},                  // kind/fragment
		// Two match, checkout-db first: ArrowDown selects checkout-web.
		{typed: "ui-search/configmap/checkout", down: 1, want: "ui-search/checkout-web"},
	} {
		t.Run(tt.typed, func(t *testing.T) {
			p.t = t
			p.goTo("/")
			p.eval(`(() => { const s = document.getElementById('search'); s.value = ''; s.focus(); return true; })()`, nil)
			p.run(chromedpSendKeys("#search", tt.typed))
			// Suggestions for the whole text, not for a part typed before.
			p.waitJS(fmt.Sprintf(`(() => { const l = document.getElementById('suggestions'); return !l.hidden && l.dataset.for === %q &&
				[...l.querySelectorAll('li[role=option]')].some((li) => li.textContent.includes(%q)); })()`, tt.typed, tt.want))
			if tt.typed == "checkout-web" {
				p.shot("search-suggestions")
			}
			// The first suggestion is selected, ArrowDown the next: Enter
			// opens the selected one.
			for range tt.down {
				p.run(chromedpSendKeys("#search", kb.ArrowDown))
			}
			selected := p.text(`#suggestions li[aria-selected="true"]`)
			if !strings.Contains(selected, tt.want) {
				t.Fatalf("selected suggestion %q, want %q", selected, tt.want)
			}
			p.run(chromedpSendKeys("#search", kb.Enter))
			p.waitJS(fmt.Sprintf(`(document.getElementById('object-title') || {}).textContent === %q`, "ConfigMap "+tt.want))
		})
	}

	// A fragment of a namespace completes to it; the kind and a fragment
	// of the name then find the object.
	t.Run("complete a namespace", func(t *testing.T) {
		p.t = t
		p.goTo("/")
		p.eval(`(() => { const s = document.getElementById('search'); s.value = ''; s.focus(); return true; })()`, nil)
		p.run(chromedpSendKeys("#search", "i-sear"))
		p.waitJS(`(() => { const l = document.getElementById('suggestions'); return !l.hidden && l.dataset.for === 'i-sear' &&
			(l.querySelector('li[aria-selected="true"]') || {}).textContent === 'namespaceui-search/'; })()`)
		p.run(chromedpSendKeys("#search", kb.Enter))
		p.waitJS(`document.getElementById('search').value === 'ui-search/'`)
		p.run(chromedpSendKeys("#search", "configmap/web"))
		p.waitJS(`(() => { const l = document.getElementById('suggestions'); return !l.hidden && l.dataset.for === 'ui-search/configmap/web'; })()`)
		p.run(chromedpSendKeys("#search", kb.Enter))
		p.waitJS(`(document.getElementById('object-title') || {}).textContent === 'ConfigMap ui-search/checkout-web'`)
	})
}

func TestObjectPageDrawsTheGraph(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-graph")
	root := configMap(t, ns, "root")
	a := configMap(t, ns, "a", ownerRef(root, true, true), danglingRef("gone-owner"))
	configMap(t, ns, "a-child", ownerRef(a, true, false))
	// a-held blocks a's deletion: a foreground delete of a waits for it.
	held := newOwned(ns, "a-held", ownerRef(a, false, true))
	held.Finalizers = []string{"example.com/hold"}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// a-held is being deleted, held by its finalizer; root is deleted in
	// the foreground and waits for a (nothing collects in this cluster:
	// kubegcd runs in dry-run and no kube-controller-manager runs).
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "a-held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "root", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		for _, name := range []string{"a-held", "root"} {
			if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Errorf("dropping the finalizers of %s: %v", name, err)
			}
		}
	})
	d := daemons.Start(t, "")
	aUID := objectUID(t, d, ns, "a")
	// Around a: its owners root and the dangling gone-owner, its
	// dependents a-child and a-held.
	if edges := graphSize(t, d, aUID, 5); edges != 4 {
		t.Fatalf("API graph around a has %d edges, want 4", edges)
	}
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var det struct {
			Owners []struct{ State string } `json:"owners"`
		}
		d.GetJSON(t, "/objects/"+aUID, 200, &det)
		for _, o := range det.Owners {
			if o.State == "deleting-dependents" {
				return nil
			}
		}
		return fmt.Errorf("root's foreground deletion not mirrored yet: %+v", det.Owners)
	})
	p := openPage(t, d)

	p.goTo("/objects/" + aUID)
	p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
	var got struct{ Nodes, Edges int }
	p.eval(`({nodes: window.kubegcdGraph.cy.nodes().length, edges: window.kubegcdGraph.cy.edges().length})`, &got)
	if got.Nodes != 5 || got.Edges != 4 {
		t.Fatalf("drawn graph: %d nodes and %d edges, want 5 and 4", got.Nodes, got.Edges)
	}
	// Colours and edge flags, read from the library's state in the page.
	var classes map[string]string
	p.eval(`Object.fromEntries(window.kubegcdGraph.cy.elements().map((e) => {
		const name = (n) => n.data('label').split('\n')[1];
		return [e.isNode() ? name(e) : name(e.source()) + '->' + name(e.target()), e.classes().join(' ')];
	}))`, &classes)
	want := map[string]string{
		"a": "solid self", "root": "waiting", "gone-owner": "dangling", "a-child": "solid", "a-held": "deleting",
		"root->a": "controller block", "gone-owner->a": "ref", "a->a-child": "controller", "a->a-held": "ref block",
	}
	if diff := cmp.Diff(want, classes); diff != "" {
		t.Errorf("graph classes (-want +got):\n%s", diff)
	}
	p.shot("object")

	// The cascade preview of a background delete lists what the API's
	// preview lists.
	var preview struct{ Items []struct{} }
	d.GetJSON(t, "/objects/"+aUID+"/cascade?propagation=background", 200, &preview)
	p.run(chromedpClick(`button[data-propagation=background]`))
	p.waitJS(fmt.Sprintf(`document.querySelectorAll('#cascade-items tbody tr').length === %d`, len(preview.Items)))
	checkCascadeMarks(t, p, d, aUID, "background")
	// A foreground delete of a waits for a-held, which its finalizer holds:
	// marked apart from what it would take.
	p.run(chromedpClick(`button[data-propagation=foreground]`))
	marks := checkCascadeMarks(t, p, d, aUID, "foreground")
	if marks["a-held"] != "cascade-wait" {
		t.Errorf("a-held under a foreground delete of a: marks %q, want cascade-wait", marks["a-held"])
	}
	if n := p.count(`.legend .cascade-key:not([hidden])`); n != 2 {
		t.Errorf("%d legend entries of the preview shown, want 2", n)
	}
	p.shot("object-cascade")
	// Clearing the preview clears the marks and their legend.
	p.run(chromedpClick(`#cascade-clear`))
	p.waitJS(`window.kubegcdGraph.cy.nodes('.cascade-delete, .cascade-wait').length === 0`)
	if n := p.count(`.legend .cascade-key:not([hidden])`); n != 0 || p.count(`#cascade-items`) != 0 {
		t.Errorf("after Clear: %d legend entries of the preview, %d preview tables, want none", n, p.count(`#cascade-items`))
	}

	// Clicking a node opens that object.
	p.eval(`(() => { document.querySelector('.view').dataset.loaded = ''; return true; })()`, nil)
	p.eval(fmt.Sprintf(`(() => { window.kubegcdGraph.cy.getElementById(%q).emit('tap'); return true; })()`, string(root.UID)), nil)
	p.waitLoaded()
	p.waitJS(fmt.Sprintf(`(document.getElementById('object-title') || {}).textContent === %q`, "ConfigMap "+ns+"/root"))
	if why := p.text("#why"); !strings.Contains(why, "being deleted") {
		t.Errorf("why of root = %q, want it said to be being deleted", why)
	}

	// A gone object's page shows its history, and its graph as it was
	// just before it went: a-child, its owner a and a's owners root and
	// gone-owner.
	childUID := objectUID(t, d, ns, "a-child")
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "a-child", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eutil.Eventually(t, 30*time.Second, func() error {
		if code, _, err := d.Get("/objects/" + childUID); err != nil || code != 404 {
			return fmt.Errorf("a-child still mirrored: %d %v", code, err)
		}
		return nil
	})
	// The mirror no longer holds it: /objects/{uid} and the graph read
	// beside it answer 404, then the page asks the history.
	p.expectNotFound("/objects/" + childUID)
	p.expectNotFound("/graph?uid=" + childUID)
	p.goTo("/objects/" + childUID)
	p.waitJS(`document.getElementById('graph').dataset.ready === 'true'`)
	if title := p.text("#object-title"); title != "ConfigMap "+ns+"/a-child" {
		t.Errorf("gone object's title %q", title)
	}
	if hist := p.text("#history"); !strings.Contains(hist, "deleted") {
		t.Errorf("gone object's history %q lacks its deletion", hist)
	}
	p.eval(`({nodes: window.kubegcdGraph.cy.nodes().length, edges: window.kubegcdGraph.cy.edges().length})`, &got)
	if got.Nodes != 4 || got.Edges != 3 {
		t.Errorf("gone object's graph: %d nodes and %d edges, want 4 and 3", got.Nodes, got.Edges)
	}
	p.shot("object-gone")
}

// checkCascadeMarks waits for the preview of a delete of uid with
// propagation to be marked on the graph, checks the marks against the
// API's preview (the object and what it deletes marked cascade-delete,
// what it waits for cascade-wait, nothing else) and returns them by name.
func checkCascadeMarks(t *testing.T, p *page, d *e2eutil.Daemon, uid, propagation string) map[string]string {
	t.Helper()
	var c struct {
		Items []struct {
			Action string
			Target struct{ UID, Name string }
		}
		BlockedBy []struct {
			Target struct{ UID, Name string }
		}
	}
	d.GetJSON(t, "/objects/"+uid+"/cascade?propagation="+propagation, 200, &c)
	want := map[string]string{}
	for _, i := range c.Items {
		if i.Action == "delete" {
			want[i.Target.UID] = "cascade-delete"
		}
	}
	for _, b := range c.BlockedBy {
		want[b.Target.UID] = strings.TrimPrefix(want[b.Target.UID]+" cascade-wait", " ")
	}
	want[uid] = "cascade-delete"
	p.waitJS(fmt.Sprintf(`document.querySelector('button.primary[data-propagation=%s]') && !document.querySelector('#cascade p.muted') &&
		window.kubegcdGraph.cy.nodes('.cascade-delete').length > 0`, propagation))
	var got map[string]string
	p.eval(`Object.fromEntries(window.kubegcdGraph.cy.nodes().filter((n) => n.hasClass('cascade-delete') || n.hasClass('cascade-wait'))
		.map((n) => [n.id(), ['cascade-delete', 'cascade-wait'].filter((k) => n.hasClass(k)).join(' ')]))`, &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s delete: marks on the graph (-want +got):\n%s", propagation, diff)
	}
	byName := map[string]string{}
	var names map[string]string
	p.eval(`Object.fromEntries(window.kubegcdGraph.cy.nodes().map((n) => [n.id(), (n.data('label') || '').split('\n')[1] || '']))`, &names)
	for id, m := range got {
		byName[names[id]] = m
	}
	return byName
}

// The acceptance figure: the graph of an object with 500 dependents is
// drawn in under 2 s, from the route change to the laid-out graph, and it
// reads: the 500 are one node "ConfigMap × 500" that says which of them are
// being deleted, opened into a grid by a click and folded again.
func TestGraphOf500DependentsUnder2s(t *testing.T) {
	ns := namespaces.New(t, "ui-big")
	owner := configMap(t, ns, "owner")
	ctx := context.Background()
	for i := range 500 {
		dep := newOwned(ns, fmt.Sprintf("dep-%03d", i), ownerRef(owner, true, true))
		if i < 3 {
			dep.Finalizers = []string{"example.com/hold"}
		}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Three are being deleted, held by their finalizer.
	held := []string{"dep-000", "dep-001", "dep-002"}
	for _, name := range held {
		if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dropFinalizers(t, ns, held...)
	d := daemons.Start(t, "")
	uid := string(owner.UID)
	graphSize(t, d, uid, 501)
	waitItems(t, d, 30*time.Second, "/stuck?minAge=0&namespace="+ns, 3)
	p := openPage(t, d)
	// Best of five: the machine is shared (two cores, other test packages
	// running beside this one), and the least disturbed run is what the
	// page costs; every run is logged.
	best := time.Duration(1<<63 - 1)
	for run := range 5 {
		p.goTo("/")
		var took float64
		start := time.Now()
		// In the page: from the route change to the first frame after the
		// graph is laid out and drawn.
		p.eval(fmt.Sprintf(`new Promise((resolve) => {
			window.kubegcdGraph = null;
			const t0 = performance.now();
			window.t0 = t0;
			location.hash = %q;
			const poll = () => window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'
				? requestAnimationFrame(() => resolve(performance.now() - t0)) : setTimeout(poll, 5);
			poll();
		})`, "#/objects/"+uid), &took, awaitPromise)
		wall := time.Since(start)
		best = min(best, wall)
		var lib struct{ Ms, BuildMs, LayoutMs, StartedAt, T0 float64 }
		p.eval(`({ms: window.kubegcdGraph.ms, buildMs: window.kubegcdGraph.buildMs, layoutMs: window.kubegcdGraph.layoutMs, startedAt: window.kubegcdGraph.startedAt, t0: window.t0})`, &lib)
		t.Logf("run %d: graph of 1 owner + 500 dependents drawn in %s measured by the test, %.0f ms in the page (graph started after %.0f ms; dagre's layout %.0f ms, cytoscape %.0f ms)",
			run+1, wall.Round(time.Millisecond), took, lib.StartedAt-lib.T0, lib.LayoutMs, lib.BuildMs)
		p.waitLoaded()
	}
	t.Logf("graph of 500 dependents: best of five %s", best.Round(time.Millisecond))
	if best >= 2*time.Second {
		t.Errorf("graph of 500 dependents took %s at best, want under 2s", best)
	}

	// Folded: the owner and one group, whose label counts the members and
	// those being deleted, in the colour of being deleted, at a size that
	// reads.
	type drawn struct {
		Nodes, Edges int
		Label        string
		Classes      []string
		FontPx       float64
	}
	look := func() drawn {
		t.Helper()
		var got drawn
		p.eval(`(() => { const cy = window.kubegcdGraph.cy; const g = cy.nodes('.group, .box').first();
			return { nodes: cy.nodes().length, edges: cy.edges().length, label: g.data('label') || '', classes: g.classes(),
				fontPx: 10 * cy.zoom() }; })()`, &got)
		return got
	}
	got := look()
	if got.Nodes != 2 || got.Edges != 1 || got.Label != "ConfigMap × 500\n3 deleting" ||
		!slices.Contains(got.Classes, "group") || !slices.Contains(got.Classes, "deleting") {
		t.Errorf("folded graph: %+v, want the owner and a group \"ConfigMap × 500\" of 3 deleting, coloured as being deleted", got)
	}
	if got.FontPx < 9 {
		t.Errorf("folded graph: labels drawn at %.1f px, want 9 or more", got.FontPx)
	}
	if !strings.Contains(p.text(".graphbar"), "1 group of 21 or more") {
		t.Errorf("graph note %q does not say that a group is folded", p.text(".graphbar"))
	}
	p.shot("object-500-dependents")

	// A click opens the group: its 500 members in a box, in a grid of
	// about twice as many columns as rows, not a row of 500.
	p.eval(`(() => { document.getElementById('graph').dataset.ready = 'false';
		window.kubegcdGraph.cy.nodes('.group').first().emit('tap'); return true; })()`, nil)
	p.waitJS(`document.getElementById('graph').dataset.ready === 'true' && window.kubegcdGraph.nodes === 502`)
	var box struct{ W, H float64 }
	p.eval(`(() => { const bb = window.kubegcdGraph.cy.nodes('.box').first().boundingBox(); return { w: bb.w, h: bb.h }; })()`, &box)
	if box.H <= 0 || box.W/box.H > 6 {
		t.Errorf("open group is %.0f × %.0f px: want a grid, not a row", box.W, box.H)
	}
	if got := look(); got.Edges != 1 || got.Label != "ConfigMap × 500: click here to fold" {
		t.Errorf("open group: %+v, want the box's label and one edge, owner to box", got)
	}
	p.shot("object-500-dependents-open")
	p.eval(`(() => { document.getElementById('graph').dataset.ready = 'false';
		window.kubegcdGraph.cy.nodes('.box').first().emit('tap'); return true; })()`, nil)
	p.waitJS(`document.getElementById('graph').dataset.ready === 'true' && window.kubegcdGraph.nodes === 2`)

	// A previewed delete marks the group with how many it would take: all
	// but the three already being deleted.
	var preview struct{ Items []struct{ Action string } }
	d.GetJSON(t, "/objects/"+uid+"/cascade?propagation=background", 200, &preview)
	deleted := 0
	for _, i := range preview.Items {
		if i.Action == "delete" {
			deleted++
		}
	}
	p.run(chromedpClick(`button[data-propagation=background]`))
	p.waitJS(`(window.kubegcdGraph.cy.nodes('.group').first().data('label') || '').includes('would be deleted')`)
	if got, want := look(), fmt.Sprintf("%d would be deleted", deleted); !slices.Contains(got.Classes, "cascade-delete") || !strings.Contains(got.Label, want) {
		t.Errorf("group under a previewed delete: %+v, want it marked, %s", got, want)
	}
	// A foreground delete waits for every dependent that blocks it.
	var fg struct{ BlockedBy []struct{} }
	d.GetJSON(t, "/objects/"+uid+"/cascade?propagation=foreground", 200, &fg)
	p.run(chromedpClick(`button[data-propagation=foreground]`))
	p.waitJS(`(window.kubegcdGraph.cy.nodes('.group').first().data('label') || '').includes('would be waited for')`)
	if got, want := look(), fmt.Sprintf("%d would be waited for", len(fg.BlockedBy)); !slices.Contains(got.Classes, "cascade-wait") || !strings.Contains(got.Label, want) {
		t.Errorf("group under a previewed foreground delete: %+v, want it marked, %s", got, want)
	}
	p.shotOf("#graph", "object-500-dependents-cascade")
}

func TestAuditFilterAndPaging(t *testing.T) {
	nsA := namespaces.New(t, "ui-audit-a")
	nsB := namespaces.New(t, "ui-audit-b")
	// Dangling owners: ownergc, in dry-run, decides to delete each and
	// records it.
	for i := range 25 {
		configMap(t, nsA, fmt.Sprintf("orphan-%02d", i), danglingRef(fmt.Sprintf("ghost-a-%02d", i)))
	}
	for i := range 3 {
		configMap(t, nsB, fmt.Sprintf("orphan-%02d", i), danglingRef(fmt.Sprintf("ghost-b-%02d", i)))
	}
	// A Secret among them, for the kind filter to leave out.
	if _, err := kube.CoreV1().Secrets(nsB).Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: "orphan-secret", OwnerReferences: []metav1.OwnerReference{danglingRef("ghost-b-secret")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "")
	for ns, n := range map[string]int{nsA: 25, nsB: 4} {
		waitItems(t, d, 60*time.Second, "/audit?limit=1000&namespace="+ns, n)
	}
	p := openPage(t, d)

	// The overview's chart counts the dry-run deletions of the last hour.
	var label string
	p.eval(`document.querySelector('#deletions svg').getAttribute('aria-label')`, &label)
	var deleted, dry int
	if _, err := fmt.Sscanf(label, "Last hour, per minute: %d deleted, %d decided in dry-run", &deleted, &dry); err != nil || deleted != 0 || dry < 28 {
		t.Errorf("deletion chart %q: want 0 deleted and at least 28 in dry-run (%v)", label, err)
	}
	p.shot("overview-with-deletions")

	// A filter narrows the rows: every namespace, then one, then one kind
	// in it (by its plural) and one rule.
	p.goTo("/audit")
	all := p.count("#rows tbody tr")
	if all < 29 {
		t.Fatalf("%d rows unfiltered, want at least 29", all)
	}
	p.shot("audit")
	filter := func(field, value string) {
		p.eval(fmt.Sprintf(`(() => { document.querySelector('form.filters input[name=%s]').value = %q; return true; })()`, field, value), nil)
		p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; return true; })()`, nil)
		p.run(chromedpClick(`form.filters button[type=submit]`))
		p.waitLoaded()
	}
	objects := func() []string {
		var names []string
		p.eval(`[...document.querySelectorAll('#rows tbody tr td:nth-child(5)')].map((td) => td.textContent)`, &names)
		return names
	}
	filter("namespace", nsB)
	if got := objects(); len(got) != 4 {
		t.Fatalf("rows with namespace %s: %q, want 4", nsB, got)
	}
	for _, o := range objects() {
		if !strings.Contains(o, " "+nsB+"/") {
			t.Errorf("row of another namespace in the filtered table: %q", o)
		}
	}
	filter("kind", "configmaps")
	if got := objects(); len(got) != 3 {
		t.Fatalf("rows with namespace %s and kind configmaps: %q, want its 3 ConfigMaps", nsB, got)
	}
	for _, o := range objects() {
		if !strings.HasPrefix(o, "ConfigMap "+nsB+"/") {
			t.Errorf("row of another kind or namespace in the filtered table: %q", o)
		}
	}
	p.shot("audit-filtered")
	filter("rule", "BR-21-03")
	if n := p.count("#rows tbody tr td.muted"); n != 1 || !strings.Contains(p.text("#rows tbody"), "no audit rows match") {
		t.Errorf("rule BR-21-03 (no foreground deletion here) shows %q, want no rows", p.text("#rows tbody"))
	}
	filter("rule", "br-21-01")
	if got := objects(); len(got) != 3 {
		t.Fatalf("rows with rule br-21-01: %q, want the 3 ConfigMaps", got)
	}

	// The CSV download holds the filter's rows, every page of them.
	dir := t.TempDir()
	p.run(cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(dir))
	csvRows := p.downloadCSV(dir, "kubegcd-audit-*.csv")
	if len(csvRows) != 4 || strings.Join(csvRows[0], ",") != "time,controller,rule,action,object,outcome,reason,by" {
		t.Fatalf("CSV download: %q, want a header and the 3 ConfigMap rows of %s", csvRows, nsB)
	}
	for _, r := range csvRows[1:] {
		if !strings.HasPrefix(r[4], "ConfigMap "+nsB+"/") || r[2] != "BR-21-01" {
			t.Errorf("CSV row outside the filter: %q", r)
		}
	}

	// Paging follows the cursor: 25 rows by 10 are pages of 10, 10 and 5,
	// newest first, each row once; Newer goes back.
	pages := pageThrough(t, p, "/audit?namespace="+nsA+"&limit=10")
	if c := p.text("#count"); !strings.HasPrefix(c, "page 3: 5 rows") {
		t.Errorf("count on the last page = %q, want page 3: 5 rows", c)
	}
	p.shot("audit-page-3")
	p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; return true; })()`, nil)
	p.run(chromedpClick("#newer"))
	p.waitLoaded()
	if got := objects(); strings.Join(got, ",") != strings.Join(pages[1], ",") {
		t.Errorf("Newer from page 3 shows %v, want page 2 %v", got, pages[1])
	}

	// Pending: the same decisions wait, and its filter narrows too.
	p.goTo("/pending?namespace=" + nsB)
	if n := p.count("#rows tbody tr"); n != 4 {
		t.Errorf("%d pending rows in %s, want 4", n, nsB)
	}
	filter("kind", "ConfigMap")
	if got := objects(); len(got) != 3 {
		t.Errorf("pending rows of kind ConfigMap in %s: %q, want 3", nsB, got)
	}
	// Its download holds the filter's decisions.
	csvRows = p.downloadCSV(dir, "kubegcd-pending-*.csv")
	if len(csvRows) != 4 || strings.Join(csvRows[0], ",") != "since,controller,rule,action,object,reason,waits" {
		t.Fatalf("pending CSV download: %q, want a header and the 3 ConfigMap decisions of %s", csvRows, nsB)
	}
	for _, r := range csvRows[1:] {
		if !strings.HasPrefix(r[4], "ConfigMap "+nsB+"/") {
			t.Errorf("pending CSV row outside the filter: %q", r)
		}
	}
	// Waiting longest first, as /pending, /stuck and kubegcd get pending
	// order them, paged by the cursor as Audit is: the API's order, page
	// after page.
	var want struct {
		Items []struct {
			Target struct{ Kind, Namespace, Name string }
		}
	}
	d.GetJSON(t, "/pending?namespace="+nsA, 200, &want)
	var wantNames []string
	for _, i := range want.Items {
		wantNames = append(wantNames, i.Target.Kind+" "+i.Target.Namespace+"/"+i.Target.Name)
	}
	pages = pageThrough(t, p, "/pending?namespace="+nsA+"&limit=10")
	if got := slices.Concat(pages...); strings.Join(got, ",") != strings.Join(wantNames, ",") {
		t.Errorf("pending pages %v, want the API's oldest first %v", got, wantNames)
	}
	if c := p.text("#count"); !strings.HasPrefix(c, "page 3: 5 decisions") {
		t.Errorf("count on the last pending page = %q, want page 3: 5 decisions", c)
	}
	if b := p.text("#older"); b != "Newer →" {
		t.Errorf("oldest first, the next page's button says %q, want Newer →", b)
	}
	p.shot("pending-page-3")
	// Newest first on request, and the buttons say which way they go.
	d.GetJSON(t, "/pending?order=newest&namespace="+nsA+"&limit=10", 200, &want)
	wantNames = wantNames[:0]
	for _, i := range want.Items {
		wantNames = append(wantNames, i.Target.Kind+" "+i.Target.Namespace+"/"+i.Target.Name)
	}
	p.goTo("/pending?namespace=" + nsA + "&limit=10&order=newest")
	if got := objects(); strings.Join(got, ",") != strings.Join(wantNames, ",") {
		t.Errorf("pending newest first %v, want the API's %v", got, wantNames)
	}
	if b := p.text("#older"); b != "Older →" {
		t.Errorf("newest first, the next page's button says %q, want Older →", b)
	}
	p.goTo("/pending")
	p.shot("pending")
}

// pageThrough opens route, a list of 25 rows by 10, and follows Older to
// the end: pages of 10, 10 and 5, each row once.
func pageThrough(t *testing.T, p *page, route string) [][]string {
	t.Helper()
	p.goTo(route)
	var pages [][]string
	for {
		var names []string
		p.eval(`[...document.querySelectorAll('#rows tbody tr td:nth-child(5)')].map((td) => td.textContent)`, &names)
		pages = append(pages, names)
		var older bool
		p.eval(`!document.getElementById('older').disabled`, &older)
		if !older {
			break
		}
		if len(pages) > 5 {
			t.Fatalf("%s: more than 5 pages: %v", route, pages)
		}
		p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; return true; })()`, nil)
		p.run(chromedpClick("#older"))
		p.waitLoaded()
	}
	if len(pages) != 3 || len(pages[0]) != 10 || len(pages[1]) != 10 || len(pages[2]) != 5 {
		t.Fatalf("%s: pages of %v rows, want 10, 10, 5: %v", route, lens(pages), pages)
	}
	seen := map[string]bool{}
	for _, pg := range pages {
		for _, r := range pg {
			if seen[r] {
				t.Errorf("%s: row %q on two pages", route, r)
			}
			seen[r] = true
		}
	}
	return pages
}

func lens(pages [][]string) []int {
	var out []int
	for _, p := range pages {
		out = append(out, len(p))
	}
	return out
}

func TestStuckPageShowsStuckNamespace(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-stuck")
	held := configMap(t, ns, "held")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := kube.CoreV1().ConfigMaps(ns).Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("dropping the finalizer: %v", err)
		}
	})
	nsObj, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", "--controllers=", "--stuck-after=1s")
	e2eutil.StartNamespaceController(t, cluster)
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p := openPage(t, d)
	// The namespace controller empties the namespace but for the held
	// ConfigMap: the page lists the namespace, with the chain namespace ←
	// ConfigMap ← finalizer.
	sel := fmt.Sprintf(`section[data-state="namespace-terminating"] .item[data-uid=%q]`, string(nsObj.UID))
	e2eutil.Eventually(t, 60*time.Second, func() error {
		p.goTo("/stuck?minAge=0")
		chain := p.text(sel + " ul.chain")
		if !strings.Contains(chain, "ConfigMap "+ns+"/held") || !strings.Contains(chain, "example.com/hold") {
			return fmt.Errorf("namespace %s not listed with its held ConfigMap yet: %q", ns, chain)
		}
		return nil
	})
	p.shot("stuck")

	// The held ConfigMap's page says what blocks its deletion.
	p.goTo("/objects/" + string(held.UID))
	if b := p.text("#blockers"); !strings.Contains(b, "example.com/hold") {
		t.Errorf("blockers = %q, want the finalizer example.com/hold", b)
	}
	p.shot("object-being-deleted")
}

// Every page renders without a console error, at a desktop's width and a
// phone's, and none is wider than a phone's screen.
func TestEveryPage(t *testing.T) {
	ns := namespaces.New(t, "ui-pages")
	owner := configMap(t, ns, "owner")
	configMap(t, ns, "dep", ownerRef(owner, true, true), danglingRef("lint-me"))
	d := daemons.Start(t, "")
	uid := objectUID(t, d, ns, "dep")
	wideLease(t, d, ns)
	p := openPage(t, d)
	routes := []struct{ name, route string }{
		{"overview", "/"},
		{"object", "/objects/" + uid},
		{"pending", "/pending"},
		{"audit", "/audit"},
		{"stuck", "/stuck?minAge=0"},
		{"lint", "/lint"},
		{"rules", "/rules"},
		{"leases", "/leases"},
		{"map", "/map?namespace=" + ns},
		{"namespaces", "/map"},
	}
	for _, r := range routes {
		p.goTo(r.route)
		if e := p.text(".view .error"); e != "" {
			t.Errorf("%s: error shown: %s", r.name, e)
		}
		checkPage(t, p, r.name, desktopWidth)
		var overflow int
		p.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
		if overflow > 0 {
			t.Errorf("%s at %d px: the page is %d px wider than the window", r.name, desktopWidth, overflow)
		}
	}
	// Loaded again, the page revalidates the graph library by its ETag
	// (a 304, headers only) rather than downloading its 430 KB again.
	p.run(chromedp.Reload())
	p.waitLoaded()
	// (Chrome reports the cached response's 200; the transfer tells: 0
	// from its cache unasked, the whole file downloaded, or headers only.)
	var transferred float64
	p.eval(`(() => { const e = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/vendor/cytoscape/cytoscape.min.js'));
		return e ? e.transferSize : -1; })()`, &transferred)
	if transferred <= 0 || transferred >= 10_000 {
		t.Errorf("cytoscape.min.js on a reload: %.0f bytes transferred, want the headers of a 304 only", transferred)
	}
	p.goTo("/lint")
	if n := p.count(`section[data-rule] tbody tr`); n == 0 {
		t.Errorf("lint page lists no finding; the dangling owner lint-me is one")
	}
	if at := p.text("#counts-at"); !strings.HasPrefix(at, "counts as of ") || !strings.HasSuffix(at, " ago") {
		t.Errorf("lint page: %q, want the counts' age", at)
	}
	p.shot("lint")
	p.goTo("/leases")
	if n := p.count("#rows tbody tr"); n == 0 {
		t.Errorf("leases page lists no Lease; the API server's identity Lease is one")
	}
	// The table fits the page: long names and identities wrap, and no
	// column hides behind the table's scroll.
	var excess int
	p.eval(`(() => { const w = document.querySelector('.tablewrap.leases');
		return w.querySelector('table').scrollWidth - w.clientWidth; })()`, &excess)
	if excess > 0 {
		t.Errorf("leases at %d px: the table is %d px wider than its box", desktopWidth, excess)
	}
	p.shot("leases")
	p.phone()
	for _, r := range routes {
		p.goTo(r.route)
		checkPage(t, p, r.name, phoneWidth)
		var overflow int
		p.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
		if overflow > 0 {
			t.Errorf("%s on a phone: the page is %d px wider than the screen", r.name, overflow)
		}
		p.shot("phone-" + r.name)
	}
	p.desktop()
}

// checkPage checks what one page of TestEveryPage shows at width: the
// overview's charts span their time from the left edge ("… ago") to the
// right ("now"); a filter's example placeholders read as hints, not as
// values set.
func checkPage(t *testing.T, p *page, name string, width int) {
	t.Helper()
	switch name {
	case "overview":
		type axis struct {
			Title                                    string
			ChartLeft, ChartRight, AgoLeft, NowRight float64
		}
		var axes []axis
		p.eval(`[...document.querySelectorAll('#deletions .chart')].map((c) => {
			const box = (el) => el ? el.getBoundingClientRect() : { left: NaN, right: NaN };
			const spans = [...c.querySelectorAll('span')];
			const chart = box(c.querySelector('svg'));
			return { title: c.querySelector('h3').textContent, chartLeft: chart.left, chartRight: chart.right,
				agoLeft: box(spans.find((s) => s.textContent.endsWith(' ago'))).left,
				nowRight: box(spans.find((s) => s.textContent === 'now')).right };
		})`, &axes)
		if len(axes) != 2 {
			t.Errorf("overview at %d px: %d deletion charts, want 2", width, len(axes))
		}
		for _, a := range axes {
			if math.Abs(a.AgoLeft-a.ChartLeft) > 2 || math.Abs(a.NowRight-a.ChartRight) > 2 {
				t.Errorf("overview at %d px: chart %q spans x %.0f…%.0f, its \"ago\" label starts at %.0f and its \"now\" ends at %.0f: want them at its edges",
					width, a.Title, a.ChartLeft, a.ChartRight, a.AgoLeft, a.NowRight)
			}
		}
	case "audit", "pending":
		type input struct{ Name, Placeholder, Style, Color, ValueColor string }
		var inputs []input
		p.eval(`[...document.querySelectorAll('form.filters input')].filter((i) => i.placeholder).map((i) => {
			const ph = getComputedStyle(i, '::placeholder');
			return { name: i.name, placeholder: i.placeholder, style: ph.fontStyle, color: ph.color, valueColor: getComputedStyle(i).color };
		})`, &inputs)
		if name == "audit" && !slices.ContainsFunc(inputs, func(i input) bool { return i.Name == "until" }) {
			t.Errorf("audit at %d px: the until box has no placeholder to hint what it takes", width)
		}
		for _, i := range inputs {
			if !strings.HasPrefix(i.Placeholder, "e.g. ") || i.Style != "italic" || i.Color == i.ValueColor {
				t.Errorf("%s at %d px: the %s box's placeholder %q in %s %s (a value in %s) reads as a value set: want \"e.g. …\", italic, in another colour",
					name, width, i.Name, i.Placeholder, i.Style, i.Color, i.ValueColor)
			}
		}
	}
}

// A graph larger than the page draws (1,000 objects) is not laid out, which
// would hold the browser for long: the page says so and links the DOT.
func TestGraphTooLargeIsNotDrawn(t *testing.T) {
	ns := namespaces.New(t, "ui-huge")
	owner := configMap(t, ns, "owner")
	ctx := context.Background()
	for i := range 2000 {
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, newOwned(ns, fmt.Sprintf("dep-%04d", i), ownerRef(owner, true, false)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := daemons.Start(t, "")
	graphSize(t, d, string(owner.UID), 2001)
	p := openPage(t, d)
	p.goTo("/objects/" + string(owner.UID))
	if note := p.text("#graph .note"); !strings.Contains(note, "too many to draw") {
		t.Errorf("graph box says %q, want that it is too large to draw", note)
	}
	var drawn bool
	p.eval(`!!window.kubegcdGraph`, &drawn)
	if drawn {
		t.Error("a graph of 2,001 objects was drawn")
	}
	p.shot("object-too-large")
}
