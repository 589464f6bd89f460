package e2eui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// The namespace map draws every owner tree of a namespace, its siblings
// grouped, garbage and stuck deletions marked, and filters by kind; an
// object's page links to it.
func TestNamespaceMap(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-map")
	// app owns 30 ConfigMaps, drawn as one group.
	app := configMap(t, ns, "app")
	for i := range 30 {
		configMap(t, ns, fmt.Sprintf("app-part-%02d", i), ownerRef(app, true, false))
	}
	// orphan's owner never existed: ownergc would delete it.
	configMap(t, ns, "orphan", danglingRef("ghost-map"))
	// root owns a Secret and held, whose deletion its finalizer holds.
	root := configMap(t, ns, "root")
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "root-secret",
		OwnerReferences: []metav1.OwnerReference{ownerRef(root, true, false)}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	held := newOwned(ns, "held", ownerRef(root, false, false))
	held.Finalizers = []string{"example.com/hold"}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dropFinalizers(t, ns, "held")
	d := daemons.Start(t, "", "--stuck-after=1s")
	rootUID := objectUID(t, d, ns, "root")
	e2eutil.Eventually(t, 60*time.Second, func() error {
		var pending, stuck struct{ Items []struct{} }
		d.GetJSON(t, "/pending?namespace="+ns, 200, &pending)
		d.GetJSON(t, "/stuck?namespace="+ns, 200, &stuck)
		if len(pending.Items) == 0 || len(stuck.Items) == 0 {
			return fmt.Errorf("%d pending, %d stuck in %s: want orphan pending, held stuck", len(pending.Items), len(stuck.Items), ns)
		}
		return nil
	})
	p := openPage(t, d)

	// From an object's page, its namespace's map.
	p.goTo("/objects/" + rootUID)
	p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; return true; })()`, nil)
	p.run(chromedpClick("#namespace-map"))
	p.waitLoaded()
	p.waitJS(`document.getElementById('graph') && document.getElementById('graph').dataset.ready === 'true'`)
	// app and its group, orphan and its dangling owner, root, its Secret
	// and held.
	var nodes map[string]string
	readNodes := func() {
		t.Helper()
		nodes = nil
		p.eval(`Object.fromEntries(window.kubegcdGraph.cy.nodes().map((n) => [n.data('label').replace('\n', ' '), n.classes().join(' ')]))`, &nodes)
	}
	readNodes()
	want := map[string]string{
		"ConfigMap app":       "solid",
		"ConfigMap × 30":      "group solid",
		"ConfigMap orphan":    "solid garbage",
		"ConfigMap ghost-map": "dangling",
		"ConfigMap root":      "solid",
		"Secret root-secret":  "solid",
		"ConfigMap held":      "deleting stuck",
	}
	if diff := cmp.Diff(want, nodes); diff != "" {
		t.Errorf("namespace map (-want +got):\n%s", diff)
	}
	if s := p.text("#map-summary"); !strings.Contains(s, "1 pending decision, 1 stuck") {
		t.Errorf("map summary %q, want 1 pending decision, 1 stuck", s)
	}
	if n := p.count(`#map-garbage tbody a`) + p.count(`#map-stuck tbody a`); n != 2 {
		t.Errorf("%d marked objects listed under the map, want orphan and held", n)
	}
	p.shot("namespace-map")

	// By kind: the trees that hold a Secret, root's only.
	p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; const s = document.querySelector('select[name=kind]');
		s.value = 'Secret'; s.dispatchEvent(new Event('change')); return true; })()`, nil)
	p.waitLoaded()
	p.waitJS(`document.getElementById('graph').dataset.ready === 'true'`)
	readNodes()
	var names []string
	for n := range nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"ConfigMap held", "ConfigMap root", "Secret root-secret"}; !slices.Equal(names, want) {
		t.Errorf("trees holding a Secret: %q, want %q", names, want)
	}
	p.shot("namespace-map-secret")

	// The search offers a namespace's map.
	p.eval(`(() => { const s = document.getElementById('search'); s.value = ''; s.focus(); return true; })()`, nil)
	p.run(chromedpSendKeys("#search", ns+"/"))
	p.waitJS(fmt.Sprintf(`(() => { const l = document.getElementById('suggestions'); return !l.hidden && l.dataset.for === %q &&
		(l.querySelector('li[aria-selected="true"]') || {}).textContent === 'mapevery owner tree in %s'; })()`, ns+"/", ns))
}

// Rule ids link to their entry in docs/rules.md, with a title on hover,
// wherever the UI shows them: a table's rule column, a lint group, the
// words of a why.
func TestRuleIDsLink(t *testing.T) {
	ns := namespaces.New(t, "ui-rules")
	configMap(t, ns, "orphan", danglingRef("ghost-rules"))
	d := daemons.Start(t, "")
	uid := objectUID(t, d, ns, "orphan")
	waitItems(t, d, 60*time.Second, "/pending?namespace="+ns, 1)
	p := openPage(t, d)
	const doc = "https://github.com/kubegcd/kubegcd/blob/main/docs/rules.md"
	type link struct{ Href, Title, Text string }
	links := func(sel string) []link {
		t.Helper()
		var out []link
		p.eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map((a) => ({ href: a.href, title: a.title, text: a.textContent }))`, sel), &out)
		return out
	}
	for _, tt := range []struct {
		route, sel, id, anchor, title string
	}{
		{"/pending?namespace=" + ns, "#rows a.rule", "BR-21-01", "ownergc", "BR-21-01: ownergc · delete: No owner is solid"},
		{"/audit?namespace=" + ns, "#rows a.rule", "BR-21-01", "ownergc", "BR-21-01: ownergc · delete: No owner is solid"},
		{"/lint?namespace=" + ns, "section[data-rule] h2 a.rule", "KG-LINT-01", "lint", "KG-LINT-01: Lint · dangling-owner, severity warning: "},
		{"/objects/" + uid, "#why a.rule", "BR-21-01", "ownergc", "BR-21-01: ownergc · "},
	} {
		t.Run(tt.route, func(t *testing.T) {
			p.t = t
			p.goTo(tt.route)
			got := links(tt.sel)
			if len(got) == 0 {
				t.Fatalf("no rule link %s on %s", tt.sel, tt.route)
			}
			l := got[0]
			if l.Text != tt.id || l.Href != doc+"#"+tt.anchor || !strings.HasPrefix(l.Title, tt.title) {
				t.Errorf("rule link %+v, want %s to %s#%s titled %q…", l, tt.id, doc, tt.anchor, tt.title)
			}
		})
	}
	p.t = t
	p.goTo("/objects/" + uid)
	p.shot("object-rule-links")
}

// A namespace whose objects have neither owners nor dependents, some of
// them pending deletion and some stuck: the map lists every object, grouped
// by kind, and counts the pending and stuck deletions as /pending and
// /stuck do.
func TestNamespaceMapListsOwnerlessObjects(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-map-ownerless")
	t.Cleanup(func() { e2eutil.RemovePods(t, kube, ns) })
	pod := func(name, node string, finalizers ...string) {
		t.Helper()
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// cache-0 is bound to a node that does not exist: PodGC would delete it.
	pod("cache-0", "node-gone")
	// ingest is deleted before any node took it, and a finalizer holds it:
	// PodGC would delete it, and its deletion is stuck.
	pod("ingest", "", "example.com/hold")
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "ingest", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// held's finalizer holds its deletion; plain is only there.
	held := newOwned(ns, "held")
	held.Finalizers = []string{"example.com/hold"}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dropFinalizers(t, ns, "held")
	configMap(t, ns, "plain")
	d := daemons.Start(t, "", "--stuck-after=1s")

	type list struct {
		Items []struct {
			Action string
			Target struct{ Kind, Name string }
		}
	}
	names := func(l list) []string {
		var out []string
		for _, i := range l.Items {
			out = append(out, i.Target.Kind+" "+ns+"/"+i.Target.Name)
		}
		slices.Sort(out)
		return out
	}
	var pending, stuck list
	e2eutil.Eventually(t, 90*time.Second, func() error {
		d.GetJSON(t, "/pending?namespace="+ns, 200, &pending)
		d.GetJSON(t, "/stuck?namespace="+ns, 200, &stuck)
		if len(pending.Items) < 2 || len(stuck.Items) < 2 {
			return fmt.Errorf("pending %q, stuck %q in %s: want cache-0 and ingest pending, ingest and held stuck",
				names(pending), names(stuck), ns)
		}
		return nil
	})
	p := openPage(t, d)
	listed := func(sel string) []string {
		t.Helper()
		var out []string
		p.eval(fmt.Sprintf(`[...document.querySelectorAll(%q)].map((a) => a.textContent)`, sel), &out)
		slices.Sort(out)
		return out
	}
	// The API, the page, the API again, until the API answers alike on
	// both sides of the page: a decision made meanwhile is no fault of the
	// page's.
	var summary string
	var pageGarbage, pageStuck []string
	e2eutil.Eventually(t, 60*time.Second, func() error {
		d.GetJSON(t, "/pending?namespace="+ns, 200, &pending)
		d.GetJSON(t, "/stuck?namespace="+ns, 200, &stuck)
		p.goTo("/map?namespace=" + ns)
		summary = p.text("#map-summary")
		pageGarbage = listed("#map-garbage tbody a[href^='#/objects/']")
		pageStuck = listed("#map-stuck tbody a[href^='#/objects/']")
		var pending2, stuck2 list
		d.GetJSON(t, "/pending?namespace="+ns, 200, &pending2)
		d.GetJSON(t, "/stuck?namespace="+ns, 200, &stuck2)
		if !slices.Equal(names(pending), names(pending2)) || !slices.Equal(names(stuck), names(stuck2)) {
			return fmt.Errorf("/pending or /stuck of %s changed while the page was read", ns)
		}
		return nil
	})
	if want := fmt.Sprintf("%d pending decisions, %d stuck", len(pending.Items), len(stuck.Items)); !strings.Contains(summary, want) {
		t.Errorf("map summary %q, want %q as /pending and /stuck count", summary, want)
	}
	if diff := cmp.Diff(names(pending), pageGarbage); diff != "" {
		t.Errorf("pending decisions listed under the map (-/pending +page):\n%s", diff)
	}
	if diff := cmp.Diff(names(stuck), pageStuck); diff != "" {
		t.Errorf("stuck deletions listed under the map (-/stuck +page):\n%s", diff)
	}
	// Every object of the namespace, grouped by kind: the ServiceAccount
	// the test's namespace has too.
	var groups map[string][]string
	p.eval(`Object.fromEntries([...document.querySelectorAll('#map-outside [data-kind]')].map((g) =>
		[g.dataset.kind, [...g.querySelectorAll('a[href^="#/objects/"]')].map((a) => a.textContent).sort()]))`, &groups)
	want := map[string][]string{
		"ConfigMap":      {"ConfigMap " + ns + "/held", "ConfigMap " + ns + "/plain"},
		"Pod":            {"Pod " + ns + "/cache-0", "Pod " + ns + "/ingest"},
		"ServiceAccount": {"ServiceAccount " + ns + "/default"},
	}
	if diff := cmp.Diff(want, groups); diff != "" {
		t.Errorf("objects outside any owner tree, by kind (-want +got):\n%s", diff)
	}
	if text := p.text(".view"); strings.Contains(text, "null") || strings.Contains(text, "undefined") {
		t.Errorf("the map says null or undefined: %q", text)
	}
	if !strings.Contains(summary, "5 objects") {
		t.Errorf("map summary %q, want it to count the namespace's 5 objects", summary)
	}
	p.shot("namespace-map-ownerless")
	p.phone()
	p.goTo("/map?namespace=" + ns)
	p.shot("phone-namespace-map-ownerless")
	p.desktop()
}
