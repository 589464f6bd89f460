package e2eui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// builtinRules are the cleanup rules kubegcd ships.
var builtinRules = []string{"unused-configmaps", "unused-secrets", "unused-pvcs", "unused-serviceaccounts",
	"finished-jobs", "dangling-references", "ttl-expired"}

// referencesFixture makes a namespace where a Deployment scaled to 0 and
// a CronJob between runs use the ConfigMap settings, nothing uses unused,
// and bad-ttl's TTL does not parse. The Deployment also names a Secret
// that does not exist. It returns the namespace.
func referencesFixture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := namespaces.New(t, "ui-references")
	configMap(t, ns, "settings")
	configMap(t, ns, "unused")
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad-ttl",
		Annotations: map[string]string{"kubegcd.io/ttl": "tomorrow"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-tls"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := corev1.PodSpec{
		ServiceAccountName: "web",
		Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
			Env: []corev1.EnvVar{{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db-password"}, Key: "password"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}},
		}},
		Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}}},
	}
	labels := map[string]string{"app": "web"}
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: new(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller-manager runs: the CronJob never starts a Job.
	job := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "report", Image: "registry.k8s.io/pause:3.10",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}}}
	if _, err := kube.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "report"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: job}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// rulesDir writes a rules directory: an override that makes
// unused-configmaps report at once, a rule of the test's own, and in the
// same file a rule that writes, refused at its line.
func rulesDir(t *testing.T, ns string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"10-override.yaml": `rules:
  - id: unused-configmaps
    interval: 1s
    params:
      grace: 0s
`,
		"20-team.yaml": `rules:
  - id: test-configmaps
    description: The ConfigMaps <b>of</b> the test's namespace, as text & never HTML.
    select: |
      SELECT uid, 'named <i>' || name || '</i>' AS reason
      FROM objects WHERE kind = 'ConfigMap' AND namespace = :ns AND name <> ''
    params:
      ns: ` + ns + `
    exclude:
      names: [keep-*]
    interval: 1s
  - id: drop-everything
    select: DELETE FROM objects
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The Rules page lists each rule as /rules does, the built-ins first, and
// the refused rule with its file and line; a chosen rule shows its text
// and its matches, filtered, each linking to its object's page. That page
// shows the rules that match it, and the references both ways, drawn on
// its graph beside the owners.
func TestRulesPageAndReferences(t *testing.T) {
	ns := referencesFixture(t)
	dir := rulesDir(t, ns)
	d := daemons.Start(t, "", "--rules-dir="+dir)
	settings := objectUID(t, d, ns, "settings")
	unused := objectUID(t, d, ns, "unused")
	matchesPath := "/rules/unused-configmaps/matches?namespace=" + ns
	matchNames := func(l api.RuleMatchList) []string {
		var out []string
		for _, m := range l.Items {
			out = append(out, m.Namespace+"/"+m.Name)
		}
		return out
	}
	// Each rule has run over the fixture: unused and bad-ttl are unused,
	// settings is used; bad-ttl's TTL is a finding; web names a Secret
	// that does not exist.
	e2eutil.Eventually(t, 60*time.Second, func() error {
		var unusedCMs, ttl, dangling api.RuleMatchList
		d.GetJSON(t, matchesPath, 200, &unusedCMs)
		d.GetJSON(t, "/rules/ttl-expired/matches?namespace="+ns, 200, &ttl)
		d.GetJSON(t, "/rules/dangling-references/matches?namespace="+ns, 200, &dangling)
		if got, want := matchNames(unusedCMs), []string{ns + "/bad-ttl", ns + "/unused"}; !slices.Equal(sorted(got), want) {
			return fmt.Errorf("unused-configmaps in %s: %q, want %q", ns, got, want)
		}
		if len(ttl.Items) != 1 || !ttl.Items[0].Finding || len(dangling.Items) != 1 {
			return fmt.Errorf("ttl-expired %+v, dangling-references %+v: want bad-ttl's finding and web", ttl.Items, dangling.Items)
		}
		return nil
	})
	var list api.RuleList
	d.GetJSON(t, "/rules", 200, &list)
	for _, id := range builtinRules {
		if !slices.ContainsFunc(list.Items, func(r api.RuleInfo) bool { return r.ID == id && r.BuiltIn }) {
			t.Errorf("/rules does not list the built-in %s", id)
		}
	}
	if len(list.Errors) == 0 {
		t.Fatalf("/rules refuses nothing, want drop-everything refused: %+v", list)
	}

	p := openPage(t, d)
	type row struct{ ID, Source, Matches string }
	readRows := func() []row {
		t.Helper()
		var out []row
		p.eval(`[...document.querySelectorAll('#rules tbody tr[data-rule]')].map((tr) => ({ id: tr.dataset.rule,
			source: tr.querySelector('td[data-label="source"]').textContent, matches: tr.querySelector('td[data-label="matches"]').textContent }))`, &out)
		return out
	}
	apiRows := func(l api.RuleList) []row {
		var out []row
		for _, r := range l.Items {
			src := "built-in"
			if r.File != "" {
				// The page names a file by its name in the directory.
				src = fmt.Sprintf("%s:%d", strings.TrimPrefix(r.File, l.Dir+"/"), r.Line)
				if r.BuiltIn {
					src = "built-in overridden at " + src
				}
			}
			out = append(out, row{r.ID, src, fmt.Sprint(r.Matches)})
		}
		return out
	}
	// The API, the page, the API again, until the API answers alike on
	// both sides of the page: a pass that ends meanwhile is no fault of the
	// page's.
	var pageRows []row
	var refused []string
	e2eutil.Eventually(t, 30*time.Second, func() error {
		d.GetJSON(t, "/rules", 200, &list)
		p.goTo("/rules")
		pageRows = readRows()
		refused = nil
		p.eval(`[...document.querySelectorAll('#rule-errors li')].map((li) => li.textContent)`, &refused)
		var again api.RuleList
		d.GetJSON(t, "/rules", 200, &again)
		if !cmp.Equal(apiRows(list), apiRows(again)) {
			return fmt.Errorf("/rules changed while the page was read")
		}
		return nil
	})
	if diff := cmp.Diff(apiRows(list), pageRows); diff != "" {
		t.Errorf("rules listed (-/rules +page):\n%s", diff)
	}
	if len(refused) != len(list.Errors) {
		t.Errorf("refused on the page: %q, want /rules's %d errors", refused, len(list.Errors))
	}
	broken := filepath.Join(dir, "20-team.yaml")
	for i, e := range list.Errors {
		at := fmt.Sprintf("%s:%d", strings.TrimPrefix(e.File, list.Dir+"/"), e.Line)
		if i < len(refused) && (!strings.HasPrefix(refused[i], at) || !strings.Contains(refused[i], e.Detail)) {
			t.Errorf("refused %q on the page, want %s and %q as /rules says", refused[i], at, e.Detail)
		}
	}
	if !slices.ContainsFunc(list.Errors, func(e api.RuleError) bool { return e.File == broken && e.Line > 0 && e.Rule == "drop-everything" }) {
		t.Errorf("/rules refuses %+v, want drop-everything at a line of %s", list.Errors, broken)
	}
	p.shot("rules-list")

	// Choose unused-configmaps from its row, then filter its matches to the
	// test's namespace.
	p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; return true; })()`, nil)
	p.run(chromedpClick(`#rules tr[data-rule="unused-configmaps"] a`))
	p.waitLoaded()
	if got := p.text("#rule-select"); got != ruleInfo(t, list, "unused-configmaps").Select {
		t.Errorf("the page's SELECT differs from /rules's: %q", got)
	}
	p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; document.querySelector('form.filters input[name=namespace]').value = `+
		fmt.Sprintf("%q", ns)+`; return true; })()`, nil)
	p.run(chromedpClick(`form.filters button[type=submit]`))
	p.waitLoaded()
	var pageMatches []string
	var apiMatches, again api.RuleMatchList
	e2eutil.Eventually(t, 30*time.Second, func() error {
		d.GetJSON(t, matchesPath, 200, &apiMatches)
		p.goTo("/rules?rule=unused-configmaps&namespace=" + ns)
		pageMatches = nil
		p.eval(`[...document.querySelectorAll('#matches tbody a[href^="#/objects/"]')].map((a) => a.textContent)`, &pageMatches)
		d.GetJSON(t, matchesPath, 200, &again)
		if !slices.Equal(matchNames(apiMatches), matchNames(again)) {
			return fmt.Errorf("the matches changed while the page was read")
		}
		return nil
	})
	if diff := cmp.Diff(matchNames(apiMatches), pageMatches); diff != "" {
		t.Errorf("unused-configmaps's matches in %s (-API +page):\n%s", ns, diff)
	}
	if !slices.Contains(pageMatches, ns+"/unused") || slices.Contains(pageMatches, ns+"/settings") {
		t.Errorf("unused-configmaps's matches on the page: %q, want %s/unused and not %s/settings, which a Deployment at 0 and a CronJob use",
			pageMatches, ns, ns)
	}
	if n := p.count(`#rules tr.chosen[data-rule="unused-configmaps"]`); n != 1 {
		t.Errorf("%d rows marked chosen, want unused-configmaps's", n)
	}
	p.shot("rules")

	// A match opens its object's page, which names the rules that match it.
	p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; return true; })()`, nil)
	p.run(chromedpClick(fmt.Sprintf(`#matches a[href="#/objects/%s"]`, unused)))
	p.waitLoaded()
	if got, want := p.text("#object-title"), "ConfigMap "+ns+"/unused"; got != want {
		t.Fatalf("a match opened %q, want %q", got, want)
	}
	if got := p.text("#last-referenced"); !strings.HasPrefix(got, "Nothing references it now") || p.count("#referenced-by, #references") != 0 {
		t.Errorf("unused's references: %q, with %d tables, want that nothing references it, and no table", got, p.count("#referenced-by, #references"))
	}
	var objRules []string
	p.eval(`[...document.querySelectorAll('#object-rules tbody a')].map((a) => a.textContent + ' ' + a.getAttribute('href'))`, &objRules)
	for _, want := range []string{"unused-configmaps #/rules?rule=unused-configmaps", "test-configmaps #/rules?rule=test-configmaps"} {
		if !slices.Contains(objRules, want) {
			t.Errorf("rules on unused's page: %q, want %q", objRules, want)
		}
	}

	// A finding is marked as one.
	var ttl api.RuleMatchList
	d.GetJSON(t, "/rules/ttl-expired/matches?namespace="+ns, 200, &ttl)
	p.goTo("/rules?rule=ttl-expired&namespace=" + ns)
	if n := p.count(`#matches tr.finding`); n != len(ttl.Items) {
		t.Errorf("%d findings marked on the page, want the %d of the API", n, len(ttl.Items))
	}
	if f := p.text(`#matches tr.finding`); !strings.Contains(f, "finding") || !strings.Contains(f, "bad-ttl") {
		t.Errorf("ttl-expired's finding reads %q, want bad-ttl marked as a finding", f)
	}

	// A file's rule: its words and its SELECT are text, never HTML.
	own := ruleInfo(t, list, "test-configmaps")
	p.goTo("/rules?rule=test-configmaps")
	if got := p.text("#rule-description"); got != own.Description || p.count("#rule b, #matches i") != 0 {
		t.Errorf("test-configmaps's description %q with %d elements from the rule's text, want %q as text", got,
			p.count("#rule b, #matches i"), own.Description)
	}
	if got := p.text("#rule-select"); got != own.Select {
		t.Errorf("test-configmaps's SELECT %q, want %q", got, own.Select)
	}
	if got := p.text("#rule-params"); !strings.Contains(got, ns) {
		t.Errorf("test-configmaps's parameters %q, want :ns %s", got, ns)
	}
	p.shot("rules-file-rule")

	// The used ConfigMap's page: what references it, as /objects/{uid}
	// says, and those references on the graph.
	referrers := func() []string {
		var det api.ObjectDetail
		d.GetJSON(t, "/objects/"+settings, 200, &det)
		var out []string
		for _, r := range det.ReferencedBy {
			out = append(out, r.Kind+" "+r.Namespace+"/"+r.Name+" "+r.Via)
		}
		return sorted(out)
	}
	want := referrers()
	if len(want) != 2 || !strings.HasPrefix(want[1], "Deployment "+ns+"/web ") {
		t.Fatalf("/objects/{uid} of settings: referenced by %q, want the CronJob report and the Deployment web", want)
	}
	p.goTo("/objects/" + settings)
	p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
	var byPage []string
	p.eval(`[...document.querySelectorAll('#referenced-by tbody tr')].map((tr) => tr.querySelector('a').textContent + ' ' + tr.querySelector('code').textContent)`, &byPage)
	if diff := cmp.Diff(want, sorted(byPage)); diff != "" {
		t.Errorf("referenced by, on settings's page (-API +page):\n%s", diff)
	}
	if diff := cmp.Diff(want, referrers()); diff != "" {
		t.Errorf("/objects/{uid} of settings changed while the page was read (-before +after):\n%s", diff)
	}
	if got := p.text("#last-referenced"); !strings.HasPrefix(got, "Referenced now, by 2 objects") {
		t.Errorf("settings's last reference: %q, want it referenced now by 2 objects", got)
	}
	checkReferenceEdges(t, p, map[string]string{"web->settings": "reference", "report->settings": "reference"})
	if n := p.count(`.legend .reference-key:not([hidden])`); n != 1 {
		t.Errorf("%d legend entries for references by name, want 1", n)
	}
	p.shot("object-referenced-by")

	// The Deployment's page: what it references, one target dangling, and
	// the rule that finds it.
	var webUID string
	for _, r := range func() []api.ObjectReferrer {
		var det api.ObjectDetail
		d.GetJSON(t, "/objects/"+settings, 200, &det)
		return det.ReferencedBy
	}() {
		if r.Kind == "Deployment" {
			webUID = r.UID
		}
	}
	var web api.ObjectDetail
	d.GetJSON(t, "/objects/"+webUID, 200, &web)
	p.eval(`(() => { delete document.querySelector('.view').dataset.loaded; return true; })()`, nil)
	p.run(chromedpClick(fmt.Sprintf(`#referenced-by a[href="#/objects/%s"]`, webUID)))
	p.waitLoaded()
	p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
	var refsAPI, refsPage []string
	for _, r := range web.References {
		state := "exists"
		if !r.Exists {
			state = "dangling"
		}
		refsAPI = append(refsAPI, fmt.Sprintf("%s %s/%s %s %s", r.Kind, r.Namespace, r.Name, r.Via, state))
	}
	p.eval(`[...document.querySelectorAll('#references tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent).join(' '))`, &refsPage)
	if diff := cmp.Diff(sorted(refsAPI), sorted(refsPage)); diff != "" {
		t.Errorf("web's references (-API +page):\n%s", diff)
	}
	if n := p.count(`#references tbody a`); n != 3 {
		t.Errorf("web's references link %d targets, want the 3 that exist", n)
	}
	checkReferenceEdges(t, p, map[string]string{"web->settings": "reference", "web->web-tls": "reference", "web->web": "reference",
		"web->db-password": "reference"})
	var dangling string
	p.eval(`window.kubegcdGraph.cy.nodes().filter((n) => n.data('label').endsWith('db-password')).classes().join(' ')`, &dangling)
	if dangling != "dangling" {
		t.Errorf("the missing Secret db-password is drawn %q, want dangling", dangling)
	}
	if got := p.text("#object-rules tbody"); !strings.Contains(got, "dangling-references") {
		t.Errorf("rules on web's page: %q, want dangling-references", got)
	}
	p.shot("object-references")

	p.phone()
	for _, r := range []struct{ name, route string }{
		{"rules-chosen", "/rules?rule=unused-configmaps&namespace=" + ns},
		{"object-references", "/objects/" + webUID},
		{"object-referenced-by", "/objects/" + settings},
	} {
		p.goTo(r.route)
		if strings.HasPrefix(r.route, "/objects/") {
			p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
		}
		// A phone widens its layout to the widest line: the screen's own
		// width is the measure.
		var overflow int
		p.eval(fmt.Sprintf(`document.documentElement.scrollWidth - %d`, phoneWidth), &overflow)
		if overflow > 0 {
			t.Errorf("%s on a phone: the page is %d px wider than the screen", r.name, overflow)
		}
		p.shot("phone-" + r.name)
	}
	p.desktop()
}

// checkReferenceEdges checks the drawn graph's edges between the named
// nodes ("from->to" by the names in their labels) against want, by their
// classes; other edges are not looked at.
func checkReferenceEdges(t *testing.T, p *page, want map[string]string) {
	t.Helper()
	var edges map[string]string
	p.eval(`Object.fromEntries(window.kubegcdGraph.cy.edges().map((e) => {
		// A node's name, or a folded node's whole label.
		const name = (n) => { const l = n.data('label').split('\n'); return l.length > 1 ? l[1] : l[0]; };
		return [name(e.source()) + '->' + name(e.target()), e.classes().join(' ')];
	}))`, &edges)
	got := map[string]string{}
	for k := range want {
		got[k] = edges[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("references drawn (-want +got):\n%s\nall edges: %v", diff, edges)
	}
}

func ruleInfo(t *testing.T, l api.RuleList, id string) api.RuleInfo {
	t.Helper()
	i := slices.IndexFunc(l.Items, func(r api.RuleInfo) bool { return r.ID == id })
	if i < 0 {
		t.Fatalf("/rules does not list %s", id)
	}
	return l.Items[i]
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// More than 20 referrers of one kind are one node of the graph, which
// opens nothing; the list below names each. A referrer of its own opens its
// page.
func TestReferrersFoldOnTheGraph(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-referrers")
	configMap(t, ns, "shared")
	const n = 25
	job := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "report", Image: "registry.k8s.io/pause:3.10",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}}}}
	cron, err := kube.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "report"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: job}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "x"}
	for i := range n {
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "registry.k8s.io/pause:3.10",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}}}}
		if _, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%02d", i)},
			Spec: appsv1.DeploymentSpec{Replicas: new(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := daemons.Start(t, "")
	uid := objectUID(t, d, ns, "shared")
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var det api.ObjectDetail
		d.GetJSON(t, "/objects/"+uid, 200, &det)
		if len(det.ReferencedBy) != n+1 {
			return fmt.Errorf("shared is referenced by %d objects, want %d", len(det.ReferencedBy), n+1)
		}
		return nil
	})
	p := openPage(t, d)
	p.goTo("/objects/" + uid)
	p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
	type node struct {
		Label, Classes string
		Inert          bool
	}
	var nodes []node
	p.eval(`window.kubegcdGraph.cy.nodes().map((n) => ({ label: n.data('label'), classes: n.classes().join(' '), inert: !!n.data('inert') }))`, &nodes)
	want := []node{{"ConfigMap\nshared", "solid self", false}, {fmt.Sprintf("Deployment × %d", n), "solid", true},
		{"CronJob\nreport", "solid", false}}
	less := func(a, b node) bool { return a.Label < b.Label }
	if diff := cmp.Diff(want, nodes, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("graph nodes (-want +got):\n%s", diff)
	}
	checkReferenceEdges(t, p, map[string]string{fmt.Sprintf("Deployment × %d->shared", n): "reference", "report->shared": "reference"})
	if got := p.count("#referenced-by tbody a"); got != n+1 {
		t.Errorf("%d referrers listed, want %d", got, n+1)
	}
	p.shot("object-referrers-folded")
	// A click on the folded node opens no page; a click on the CronJob
	// opens its.
	p.eval(`window.kubegcdGraph.cy.nodes().filter((n) => n.data('inert')).emit('tap'); true`, nil)
	var hash string
	p.eval(`location.hash`, &hash)
	if hash != "#/objects/"+uid {
		t.Errorf("a click on the folded referrers opened %s", hash)
	}
	p.eval(`window.kubegcdGraph.cy.nodes().filter((n) => n.data('label') === 'CronJob\nreport').emit('tap'); true`, nil)
	p.waitJS(fmt.Sprintf(`location.hash === %q`, "#/objects/"+string(cron.UID)))
	p.waitLoaded()
}
