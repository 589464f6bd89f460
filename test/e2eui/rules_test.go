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
// which owns unused-cache, and bad-ttl's TTL does not parse. The
// Deployment also names a Secret that does not exist. It returns the
// namespace.
func referencesFixture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := namespaces.New(t, "ui-references")
	configMap(t, ns, "settings")
	configMap(t, ns, "unused-cache", ownerRef(configMap(t, ns, "unused"), true, true))
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
// unused-configmaps report at once and one that gives unused-secrets a
// schedule; rules of the test's own that delete, test-configmaps over its
// cap and drop-unused with no cap and a notice; and in the same file a rule
// whose SELECT writes, refused at its line.
func rulesDir(t *testing.T, ns string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"10-override.yaml": `rules:
  - id: unused-configmaps
    interval: 1s
    params:
      grace: 0s
  - id: unused-secrets
    schedule: "0 3 * * *"
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
    action: delete
    limits:
      max_count: 2
  - id: drop-unused
    description: The ConfigMap unused, with what it owns.
    select: |
      SELECT uid, 'nothing uses it' AS reason
      FROM objects WHERE kind = 'ConfigMap' AND namespace = :ns AND name = 'unused'
    params:
      ns: ` + ns + `
    interval: 1s
    action: delete
    occurrences: 3
    notify_before: 1h
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
// and its matches, filtered, each linking to its object's page. A rule
// that deletes is marked so, would delete in dry-run, with its cap, next
// pass and last outcome, and each of its matches previews what its delete
// would take. An object's page shows the rules that match it, and the
// references both ways, drawn on its graph beside the owners.
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

	// The daemon runs in dry-run, as kubegcd does by default: a rule that
	// deletes only records what it would delete.
	var st api.Status
	d.GetJSON(t, "/status", 200, &st)
	if st.Enforcement == nil || !st.Enforcement.DryRun {
		t.Fatalf("/status: enforcement %+v, want dry-run", st.Enforcement)
	}

	p := openPage(t, d)
	type row struct{ ID, Source, Mode, Passes, Cap, Matches string }
	readRows := func() []row {
		t.Helper()
		var out []row
		p.eval(`[...document.querySelectorAll('#rules tbody tr[data-rule]')].map((tr) => {
			const cell = (label) => tr.querySelector('td[data-label="' + label + '"]').textContent;
			return { id: tr.dataset.rule, source: cell('source'), mode: cell('mode'), passes: tr.querySelector('td[data-label="when"] .passes').textContent,
				cap: cell('cap'), matches: cell('matches') };
		})`, &out)
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
			mode, limit := "reports", ""
			if r.Action == "delete" {
				mode, limit = "would delete", "no cap"
				if r.Limits.MaxCount > 0 {
					limit = fmt.Sprintf("at most %d", r.Limits.MaxCount)
				}
			}
			passes := r.Schedule
			if passes == "" {
				passes = "every " + shortDuration(t, r.Interval)
			}
			out = append(out, row{r.ID, src, mode, passes, limit, fmt.Sprint(r.Matches)})
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
	for _, id := range []string{"test-configmaps", "drop-unused"} {
		if r := ruleInfo(t, list, id); r.Action != "delete" {
			t.Errorf("/rules: %s's action is %q, want delete", id, r.Action)
		}
	}
	if got := p.text("#rules-mode"); !strings.HasPrefix(got, "kubegcd runs in dry-run: a rule marked would delete records what it would delete") {
		t.Errorf("the page says of the rules that delete: %q, want that dry-run wins", got)
	}
	// A scheduled rule's next pass is at its schedule's next time, in hours.
	secrets := ruleInfo(t, list, "unused-secrets")
	var next struct{ Text, Title string }
	p.eval(`(() => { const t = document.querySelector('#rules tr[data-rule="unused-secrets"] td[data-label="when"] time');
		return t ? { text: t.textContent, title: t.title } : {}; })()`, &next)
	if at, err := time.Parse(time.RFC3339Nano, next.Title); err != nil || secrets.NextPassAt == nil || !at.Equal(*secrets.NextPassAt) ||
		!strings.HasPrefix(next.Text, "next in ") {
		t.Errorf("unused-secrets's next pass on the page: %q at %q, want in some time at /rules's %v", next.Text, next.Title, secrets.NextPassAt)
	}
	p.shot("rules-list")

	// The rules that delete: over its cap, test-configmaps deletes nothing
	// and says why; drop-unused, with no cap, would delete unused once it has
	// matched 3 passes in a row.
	checkDeleteOutcomes(t, d, p)

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
	if n := p.count(`#matches button.preview`); n != 0 {
		t.Errorf("a rule that reports: %d matches offer a preview of their delete, want none", n)
	}
	p.shot("rules-unused-configmaps")

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
		{"rules-capped", "/rules?rule=test-configmaps"},
		{"rules-delete", "/rules?rule=drop-unused"},
		{"object-references", "/objects/" + webUID},
		{"object-referenced-by", "/objects/" + settings},
	} {
		p.goTo(r.route)
		if strings.HasPrefix(r.route, "/objects/") {
			p.waitJS(`window.kubegcdGraph && document.getElementById('graph').dataset.ready === 'true'`)
		}
		if r.name == "rules-delete" {
			openPreview(t, p, unused)
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

// checkDeleteOutcomes checks what the Rules page says of the rules of
// rulesDir that delete, in dry-run: test-configmaps is capped, and says
// why in its row and on its own; drop-unused would delete unused, and its
// match previews what that delete would take: unused-cache, which unused
// owns. Pending lists that delete. It leaves p on the Rules page.
func checkDeleteOutcomes(t *testing.T, d *e2eutil.Daemon, p *page) {
	t.Helper()
	acted := func(r api.RuleInfo) *api.RuleActed {
		if r.LastPass == nil {
			return nil
		}
		return r.LastPass.Acted
	}
	var capped, would api.RuleInfo
	var outcomes map[string]string
	e2eutil.Eventually(t, 60*time.Second, func() error {
		var list, again api.RuleList
		d.GetJSON(t, "/rules", 200, &list)
		capped, would = ruleInfo(t, list, "test-configmaps"), ruleInfo(t, list, "drop-unused")
		if a := acted(capped); a == nil || a.Capped == "" {
			return fmt.Errorf("test-configmaps's last pass %+v, want it capped", capped.LastPass)
		}
		if a := acted(would); a == nil || a.DryRun != 1 {
			return fmt.Errorf("drop-unused's last pass %+v, want one deletion in dry-run", would.LastPass)
		}
		p.goTo("/rules")
		outcomes = nil
		p.eval(`Object.fromEntries([...document.querySelectorAll('#rules tbody tr[data-mode="delete"]')].map((tr) =>
			[tr.dataset.rule, tr.querySelector('td[data-label="outcome"]').textContent]))`, &outcomes)
		d.GetJSON(t, "/rules", 200, &again)
		if !cmp.Equal(acted(capped), acted(ruleInfo(t, again, "test-configmaps"))) || !cmp.Equal(acted(would), acted(ruleInfo(t, again, "drop-unused"))) {
			return fmt.Errorf("a pass ended while the page was read")
		}
		return nil
	})
	want := map[string]string{"test-configmaps": "capped " + acted(capped).Capped, "drop-unused": "would delete 1"}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("the last passes' outcomes of the rules that delete (-want +page):\n%s", diff)
	}
	if !strings.HasPrefix(acted(capped).Capped, "4 objects due, more than max_count 2") {
		t.Errorf("test-configmaps is capped for %q, want 4 objects due over max_count 2", acted(capped).Capped)
	}
	if n := p.count(`#rules tr.capped[data-rule="test-configmaps"] .badge.mode.would-delete`); n != 1 {
		t.Errorf("test-configmaps's row: %d capped rows marked would delete, want 1", n)
	}

	// The capped rule on its own: why, first.
	p.goTo("/rules?rule=test-configmaps")
	if got := p.text("#rule-capped"); !strings.Contains(got, acted(capped).Capped) {
		t.Errorf("test-configmaps's page says %q, want why it is capped: %q", got, acted(capped).Capped)
	}
	for sel, want := range map[string]string{"#rule-cap": "at most 2", "#rule-occurrences": "2 passes in a row", "#rule-notice": "none",
		"#rule h2 .badge.mode": "would delete"} {
		if got := p.text(sel); !strings.HasPrefix(got, want) {
			t.Errorf("test-configmaps's %s: %q, want %q", sel, got, want)
		}
	}
	p.shot("rules-capped")

	// drop-unused: no cap, a notice, and what its delete would take.
	p.goTo("/rules?rule=drop-unused")
	for sel, want := range map[string]string{"#rule-cap": "no cap", "#rule-occurrences": "3 passes in a row",
		"#rule-notice": "60m: a Kubernetes Event", "#rule-outcome": "would delete 1"} {
		if got := p.text(sel); !strings.HasPrefix(got, want) {
			t.Errorf("drop-unused's %s: %q, want %q", sel, got, want)
		}
	}
	var m api.RuleMatchList
	d.GetJSON(t, "/rules/drop-unused/matches", 200, &m)
	if len(m.Items) != 1 || m.Items[0].Name != "unused" {
		t.Fatalf("drop-unused matches %+v, want unused alone", m.Items)
	}
	uid := m.Items[0].UID
	var c api.Cascade
	d.GetJSON(t, "/objects/"+uid+"/cascade?propagation=background", 200, &c)
	var wantItems []string
	for _, i := range c.Items {
		wantItems = append(wantItems, fmt.Sprintf("ConfigMap %s/%s %s", i.Target.Namespace, i.Target.Name, i.Action))
	}
	if len(wantItems) != 1 || !strings.HasSuffix(wantItems[0], "/unused-cache delete") {
		t.Errorf("/objects/{uid}/cascade of unused: %q, want unused-cache deleted", wantItems)
	}
	openPreview(t, p, uid)
	var items []string
	p.eval(fmt.Sprintf(`[...document.querySelectorAll('tr.cascade-row[data-uid=%q] table.cascade-items tbody tr')].map((tr) =>
		tr.querySelector('td[data-label="object"]').textContent + ' ' + tr.querySelector('td[data-label="action"]').textContent)`, uid), &items)
	if diff := cmp.Diff(wantItems, items); diff != "" {
		t.Errorf("the preview of unused's delete (-API +page):\n%s", diff)
	}
	p.shot("rules")
	// Again, it closes.
	p.run(chromedpClick(fmt.Sprintf(`#matches tr[data-uid=%q] button.preview`, uid)))
	if n := p.count(`tr.cascade-row`); n != 0 {
		t.Errorf("after Hide: %d previews open, want none", n)
	}

	// Pending holds what drop-unused would delete, under the rules
	// controller; its rule links to the Rules page.
	waitItems(t, d, 30*time.Second, "/pending?controller=rules&namespace="+m.Items[0].Namespace, 1)
	p.goTo("/pending?controller=rules&namespace=" + m.Items[0].Namespace)
	var links []string
	p.eval(`[...document.querySelectorAll('#rows td[data-label="rule"] a')].map((a) => a.textContent + ' ' + a.getAttribute('href'))`, &links)
	if want := []string{"drop-unused #/rules?rule=drop-unused"}; !slices.Equal(links, want) {
		t.Errorf("the rules' pending rows on the page link %q, want %q", links, want)
	}
	p.goTo("/rules")
}

// openPreview opens the preview of the delete of the match uid on a rule's
// page, and waits until it has read the API's answer.
func openPreview(t *testing.T, p *page, uid string) {
	t.Helper()
	p.run(chromedpClick(fmt.Sprintf(`#matches tr[data-uid=%q] button.preview`, uid)))
	p.waitJS(fmt.Sprintf(`!!document.querySelector('tr.cascade-row[data-uid=%q] .cascade-preview[data-loaded="true"]')`, uid))
}

// shortDuration writes a Go duration of /rules as the page does: 5m
// rather than 5m0s.
func shortDuration(t *testing.T, s string) string {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("an interval of /rules: %v", err)
	}
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
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

// Enforcing, a rule that deletes is marked as one that does, and the page
// says so; over its cap it deletes nothing, which its row and its own
// section say, and the cluster confirms.
func TestRulesPageEnforcingCappedRule(t *testing.T) {
	ns := namespaces.New(t, "ui-rules-enforcing")
	for _, name := range []string{"a", "b", "c"} {
		configMap(t, ns, name)
	}
	dir := t.TempDir()
	rulesFile := `rules:
  - id: drop-all
    description: Every ConfigMap of the test's namespace, held back by a cap of 1.
    select: SELECT uid, 'unwanted' AS reason FROM objects WHERE kind = 'ConfigMap' AND namespace = :ns
    params:
      ns: ` + ns + `
    interval: 1s
    action: delete
    limits:
      max_count: 1
`
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rulesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	// Only svgc, which nothing in this cluster gives work, beside the
	// rules: nothing else of the shared cluster is enforced on.
	d := daemons.Start(t, "", "--rules-dir="+dir, "--dry-run=false", "--leader-elect=false", "--controllers=svgc")
	var rule api.RuleInfo
	e2eutil.Eventually(t, 60*time.Second, func() error {
		var list api.RuleList
		d.GetJSON(t, "/rules", 200, &list)
		rule = ruleInfo(t, list, "drop-all")
		if rule.LastPass == nil || rule.LastPass.Acted == nil || rule.LastPass.Acted.Capped == "" {
			return fmt.Errorf("drop-all's last pass %+v, want it capped", rule.LastPass)
		}
		return nil
	})
	p := openPage(t, d)
	p.goTo("/rules?rule=drop-all")
	for sel, want := range map[string]string{
		"#rules-mode": "kubegcd enforces: what a rule marked deletes matches is deleted, within its cap",
		`#rules tr[data-rule="drop-all"] td[data-label="mode"]`:    "deletes",
		`#rules tr[data-rule="drop-all"] td[data-label="cap"]`:     "at most 1",
		`#rules tr[data-rule="drop-all"] td[data-label="outcome"]`: "capped " + rule.LastPass.Acted.Capped,
		"#rule-capped": "Capped: " + rule.LastPass.Acted.Capped,
	} {
		if got := p.text(sel); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
	if n := p.count(`#rules tr[data-rule="drop-all"] .badge.mode.deletes`); n != 1 {
		t.Errorf("drop-all's row: %d badges of a rule that deletes, want 1", n)
	}
	cms, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 3 {
		t.Errorf("%d ConfigMaps left in %s, want the 3 a capped rule leaves alone", len(cms.Items), ns)
	}
	p.shot("rules-enforcing")
	p.phone()
	p.goTo("/rules?rule=drop-all")
	var overflow int
	p.eval(fmt.Sprintf(`document.documentElement.scrollWidth - %d`, phoneWidth), &overflow)
	if overflow > 0 {
		t.Errorf("the Rules page on a phone: %d px wider than the screen", overflow)
	}
	p.shot("phone-rules-enforcing")
	p.desktop()
}
