package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/api"
)

// rulesGoodFile overrides unused-configmaps to look again every second and
// call a ConfigMap unused after one, and adds a rule of the test's
// namespace.
const rulesGoodFile = `rules:
- id: unused-configmaps
  params: {grace: 1s}
  interval: 1s
- id: named-unused
  description: ConfigMaps of the test's namespace named unused-*
  select: |
    SELECT uid, 'named ' || name AS reason FROM objects
    WHERE namespace = :ns AND kind = 'ConfigMap' AND name LIKE 'unused-%'
  params: {ns: %s}
  interval: 1s
`

// TestRules runs kubegcd with a rules directory holding a good file, a
// file that does not parse and rules that ATTACH and write. /rules shows
// the refused ones with file:line, and the good and built-in rules run.
// An unused ConfigMap is matched by unused-configmaps, one mounted by a
// Deployment scaled to 0 is not; the API, get unused and why say so.
// rules test and POST /rules/evaluate match what the loaded rules stored.
// A rule file written later is loaded without a restart.
func TestRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "rules")
	opts := metav1.CreateOptions{}
	for _, name := range []string{"unused-cm", "mounted-cm"} {
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}},
			opts); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "rules"}
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "zero"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "mounted-cm"}}}}}}}}}, opts); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("good.yaml", strings.Replace(rulesGoodFile, "%s", ns, 1))
	write("bad.yaml", "rules:\n- id: broken\n  select: SELECT uid FROM objects\n  interval: [1s\n")
	write("sql.yaml", `rules:
- id: attaches
  select: |
    SELECT uid FROM objects;
    ATTACH DATABASE '/tmp/kubegcd-e2e-attach.db' AS x
- id: writes
  select: DELETE FROM objects RETURNING uid
`)
	d := daemons.Start(t, "", "--rules-dir", dir)
	d.WaitReady(t, 60*time.Second)

	// The refused files and rules, each with its file and line; the good
	// rules and the built-ins pass.
	var list api.RuleList
	eventually(t, 60*time.Second, func() error {
		d.GetJSON(t, "/rules", http.StatusOK, &list)
		for _, r := range list.Items {
			if r.LastPass == nil {
				return fmt.Errorf("%s has made no pass yet", r.ID)
			}
		}
		return nil
	})
	var refused []string
	for _, e := range list.Errors {
		refused = append(refused, strings.TrimPrefix(e.Message, dir+"/"))
	}
	slices.Sort(refused)
	wantRefused := []string{"bad.yaml:3: not YAML", "sql.yaml:3: rules[0].select: Invalid value: not one statement",
		"sql.yaml:7: rules[1].select: Invalid value: not a SELECT"}
	if len(refused) != len(wantRefused) {
		t.Fatalf("refused:\n%s\nwant:\n%s", strings.Join(refused, "\n"), strings.Join(wantRefused, "\n"))
	}
	for i, want := range wantRefused {
		if !strings.HasPrefix(refused[i], want) {
			t.Errorf("refused %q, want %q…", refused[i], want)
		}
	}
	ids := map[string]api.RuleInfo{}
	for _, r := range list.Items {
		ids[r.ID] = r
		if r.LastPass.Error != "" {
			t.Errorf("%s: last pass failed: %s", r.ID, r.LastPass.Error)
		}
	}
	for _, id := range []string{"unused-configmaps", "unused-secrets", "unused-pvcs", "unused-serviceaccounts", "finished-jobs",
		"dangling-references", "ttl-expired", "named-unused"} {
		if _, ok := ids[id]; !ok {
			t.Errorf("rule %s is not loaded", id)
		}
	}
	if r := ids["unused-configmaps"]; !r.BuiltIn || r.File != good || r.Interval != "1s" {
		t.Errorf("unused-configmaps: %+v; want the built-in overridden by good.yaml", r)
	}
	if got := d.Metric(t, "kubegcd_rule_refused"); got != 3 {
		t.Errorf("kubegcd_rule_refused = %v, want 3", got)
	}

	// The unused ConfigMap, not the one a Deployment scaled to 0 mounts.
	matches := func(rule string) []string {
		t.Helper()
		var page api.RuleMatchList
		d.GetJSON(t, "/rules/"+rule+"/matches?namespace="+ns, http.StatusOK, &page)
		var names []string
		for _, m := range page.Items {
			names = append(names, m.Name)
		}
		slices.Sort(names)
		return names
	}
	eventually(t, 60*time.Second, func() error {
		if got := matches("unused-configmaps"); !slices.Equal(got, []string{"unused-cm"}) {
			return fmt.Errorf("unused-configmaps matches %v in %s, want unused-cm", got, ns)
		}
		return nil
	})
	out := cliOK(t, d, []string{"unused-cm", "unused-configmaps"}, "get", "unused", "-n", ns)
	if strings.Contains(out, "mounted-cm") {
		t.Errorf("get unused lists the mounted ConfigMap:\n%s", out)
	}
	cliOK(t, d, []string{"named-unused", "unused-configmaps", "built-in (good.yaml:2)", "good.yaml:5", "refused: "}, "get", "rules")

	// rules test and POST /rules/evaluate match what the loaded rules
	// stored, in the test's namespace.
	code, stdout, stderr := cliRun("rules", "test", good, "-o", "json", "--server", d.ClientURL())
	if code != 0 {
		t.Fatalf("rules test: exit %d: %s", code, stderr)
	}
	body, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.Client.Post(d.URL+"/rules/evaluate", "application/yaml", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var posted bytes.Buffer
	_, _ = posted.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /rules/evaluate: %d %s", resp.StatusCode, posted.String())
	}
	for name, answer := range map[string][]byte{"rules test": []byte(stdout), "POST /rules/evaluate": posted.Bytes()} {
		var ev api.RuleEvaluation
		if err := json.Unmarshal(answer, &ev); err != nil {
			t.Fatalf("%s: %v: %s", name, err, answer)
		}
		if len(ev.Rules) != 2 || len(ev.Errors) != 0 {
			t.Errorf("%s: %+v; want the two rules of good.yaml and no error", name, ev)
		}
		for _, r := range ev.Rules {
			var got []string
			for _, m := range r.Matches {
				if m.Namespace == ns {
					got = append(got, m.Name)
				}
			}
			slices.Sort(got)
			if want := matches(r.ID); !slices.Equal(got, want) || r.Hash != ids[r.ID].Hash || r.Error != "" {
				t.Errorf("%s: %s matches %v (hash %.12s, error %q); the loaded rule stored %v (hash %.12s)", name, r.ID, got,
					r.Hash, r.Error, want, ids[r.ID].Hash)
			}
		}
	}
	code, _, stderr = cliRun("rules", "test", filepath.Join(dir, "sql.yaml"), "--server", d.ClientURL())
	if code != 1 || !strings.Contains(stderr, "sql.yaml:3: rules[0].select: ") {
		t.Errorf("rules test sql.yaml: exit %d, stderr %q; want 1 and sql.yaml:3", code, stderr)
	}

	// What references what, and the rules that match, on /objects/{uid}
	// and in why.
	uidOf := func(kind, name string) string {
		t.Helper()
		var found api.Lookup
		d.GetJSON(t, "/objects?kind="+kind+"&namespace="+ns+"&name="+name, http.StatusOK, &found)
		if len(found.Items) != 1 {
			t.Fatalf("%s %s: %+v", kind, name, found.Items)
		}
		return found.Items[0].UID
	}
	var detail api.ObjectDetail
	d.GetJSON(t, "/objects/"+url.PathEscape(uidOf("ConfigMap", "mounted-cm")), http.StatusOK, &detail)
	if len(detail.ReferencedBy) != 1 || detail.ReferencedBy[0].Kind != "Deployment" || detail.ReferencedBy[0].Name != "zero" ||
		len(detail.Rules) != 0 {
		t.Errorf("mounted-cm: referenced by %+v, rules %+v; want the Deployment, no rule", detail.ReferencedBy, detail.Rules)
	}
	d.GetJSON(t, "/objects/"+url.PathEscape(uidOf("Deployment", "zero")), http.StatusOK, &detail)
	if !slices.ContainsFunc(detail.References, func(r api.ObjectReference) bool {
		return r.Kind == "ConfigMap" && r.Name == "mounted-cm" && r.Exists && r.UID != ""
	}) {
		t.Errorf("the Deployment's references %+v lack mounted-cm", detail.References)
	}
	d.GetJSON(t, "/objects/"+url.PathEscape(uidOf("ConfigMap", "unused-cm")), http.StatusOK, &detail)
	var rules []string
	for _, m := range detail.Rules {
		rules = append(rules, m.Rule)
	}
	if !slices.Equal(rules, []string{"named-unused", "unused-configmaps"}) || len(detail.ReferencedBy) != 0 {
		t.Errorf("unused-cm: rules %v, referenced by %+v; want named-unused and unused-configmaps, nothing",
			rules, detail.ReferencedBy)
	}
	cliOK(t, d, []string{"Cleanup rules that match it:", "unused-configmaps, for "}, "why", "cm/unused-cm", "-n", ns)
	cliOK(t, d, []string{"Referenced by: 1", "Deployment " + ns + "/zero (spec.template.spec.volumes[].configMap)"},
		"why", "cm/mounted-cm", "-n", ns)

	// A file written now is loaded, and its rule runs, without a restart.
	write("later.yml", "rules:\n- id: added-later\n  select: SELECT uid FROM objects WHERE name = 'mounted-cm'\n  interval: 1s\n")
	eventually(t, 30*time.Second, func() error {
		d.GetJSON(t, "/rules", http.StatusOK, &list)
		for _, r := range list.Items {
			if r.ID == "added-later" && r.LastPass != nil && r.LastPass.Error == "" && r.Matches >= 1 {
				return nil
			}
		}
		return fmt.Errorf("added-later is not loaded, or has not matched yet")
	})
	if !slices.Contains(list.Files, filepath.Join(dir, "later.yml")) || len(list.Errors) != 3 {
		t.Errorf("files %v, %d errors; want later.yml among them and the 3 refusals still", list.Files, len(list.Errors))
	}
}
