package rules

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// cookbook is the page of recipes; each of its yaml blocks is a rules
// file of one rule.
const cookbook = "../../docs/cleanup-rules.md"

var yamlBlockRE = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")

// recipeFixtures write, for each recipe of the cookbook, a mirror where it
// must match some objects and leave others, and return what it matches.
var recipeFixtures = map[string]func(f *fixture) []string{
	"unused-roles": func(f *fixture) []string {
		old := 40 * day
		f.obj("Role", "a/unbound", old)
		f.obj("Role", "a/bound", old)
		rb := f.obj("RoleBinding", "a/read", old)
		f.ref(rb, "Role a/bound", "roleRef", refOpt{group: "rbac.authorization.k8s.io"})
		f.obj("Role", "a/unbound-lately", old)
		f.historyOf("rbac.authorization.k8s.io", "Role a/unbound-lately", 2*day)
		f.obj("Role", "a/unbound-long-ago", old)
		f.historyOf("rbac.authorization.k8s.io", "Role a/unbound-long-ago", 10*day)
		f.obj("Role", "a/new", day)
		f.obj("Role", "kube-system/unbound", old)
		return []string{
			"Role/a/unbound: no RoleBinding since " + ts(watched),
			"Role/a/unbound-long-ago: no RoleBinding since " + ts(ago(10*day)),
		}
	},
	"orphaned-autoscalers": func(f *fixture) []string {
		old := 40 * day
		f.obj("Deployment", "a/web", old)
		f.obj("Widget", "a/w", old)
		for name, target := range map[string]string{"web": "Deployment a/web", "gone": "Deployment a/gone",
			"widget": "Widget a/w", "rs": "ReplicaSet a/gone"} {
			hpa := f.obj("HorizontalPodAutoscaler", "a/"+name, old)
			group := map[string]string{"Deployment": "apps", "ReplicaSet": "apps", "Widget": "example.com"}
			kind, _, _ := strings.Cut(target, " ")
			f.ref(hpa, target, "spec.scaleTargetRef", refOpt{group: group[kind]})
		}
		recent := f.obj("HorizontalPodAutoscaler", "a/recent", 10*time.Minute)
		f.ref(recent, "Deployment a/gone", "spec.scaleTargetRef", refOpt{group: "apps"})
		return []string{
			"HorizontalPodAutoscaler/a/gone: scales Deployment gone, which does not exist",
			"HorizontalPodAutoscaler/a/rs: scales ReplicaSet gone, which does not exist",
		}
	},
	"broken-ingresses": func(f *fixture) []string {
		old := 40 * day
		f.obj("Service", "a/svc", old)
		f.obj("Secret", "a/tls", old)
		ok := f.obj("Ingress", "a/ok", old)
		f.ref(ok, "Service a/svc", "spec.defaultBackend.service")
		f.ref(ok, "Secret a/tls", "spec.tls[].secretName")
		broken := f.obj("Ingress", "a/broken", old)
		f.ref(broken, "Service a/svc", "spec.defaultBackend.service")
		f.ref(broken, "Service a/missing", "spec.rules[].http.paths[].backend.service")
		f.ref(broken, "Secret a/missing-tls", "spec.tls[].secretName")
		f.ref(broken, "IngressClass nginx", "spec.ingressClassName", refOpt{group: "networking.k8s.io", optional: true})
		return []string{
			"Ingress/a/broken: names Secret missing-tls (spec.tls[].secretName), " +
				"Service missing (spec.rules[].http.paths[].backend.service), which does not exist",
		}
	},
	"empty-replicasets": func(f *fixture) []string {
		old := 40 * day
		deploy := f.obj("Deployment", "a/web", old)
		for name, replicas := range map[string]int{"left": 0, "owned": 0, "running": 2} {
			rs := f.obj("ReplicaSet", "a/"+name, old)
			f.workload(rs, replicas)
			if name == "owned" {
				f.owner(rs, deploy, true)
			}
		}
		f.workload(f.obj("ReplicaSet", "a/new", time.Hour), 0)
		f.workload(f.obj("ReplicaSet", "kube-system/left", old), 0)
		return []string{"ReplicaSet/a/left: zero replicas and no owner, created " + ts(ago(old))}
	},
	"bare-pods": func(f *fixture) []string {
		old := 40 * day
		f.pod(f.obj("Pod", "a/debug", old), "Running")
		f.obj("Pod", "a/unknown", old)
		rs := f.obj("ReplicaSet", "a/web-1", old)
		owned := f.obj("Pod", "a/web-1-x", old)
		f.owner(owned, rs, true)
		f.pod(f.obj("Pod", "a/debug-now", 10*time.Minute), "Running")
		return []string{
			"Pod/a/debug: a bare Pod, Running, created " + ts(ago(old)),
			"Pod/a/unknown: a bare Pod, phase unknown, created " + ts(ago(old)),
		}
	},
	"idle-workloads": func(f *fixture) []string {
		old := 40 * day
		f.workload(f.obj("Deployment", "a/idle", old), 0)
		f.workload(f.obj("StatefulSet", "a/db", old), 0)
		f.workload(f.obj("Deployment", "a/busy", old), 3)
		scaled := f.obj("Deployment", "a/on-demand", old)
		f.workload(scaled, 0)
		hpa := f.obj("HorizontalPodAutoscaler", "a/on-demand", old)
		f.ref(hpa, "Deployment a/on-demand", "spec.scaleTargetRef", refOpt{group: "apps"})
		f.workload(f.obj("Deployment", "a/new", day), 0)
		return []string{
			"Deployment/a/idle: Deployment at zero replicas, created " + ts(ago(old)),
			"StatefulSet/a/db: StatefulSet at zero replicas, created " + ts(ago(old)),
		}
	},
	"generator-leftovers": func(f *fixture) []string {
		const p = "dynamic-config-properties-"
		f.obj("ConfigMap", "a/"+p+"aaa", 3*day)
		f.obj("ConfigMap", "a/"+p+"bbb", 2*day)
		f.obj("ConfigMap", "a/"+p+"ccc", day)
		deploy := f.obj("Deployment", "a/web", 40*day)
		f.ref(deploy, "ConfigMap a/"+p+"bbb", "spec.template.spec.volumes[].configMap")
		f.obj("ConfigMap", "b/"+p+"zzz", 3*day)
		f.obj("ConfigMap", "a/other", 3*day)
		return []string{"ConfigMap/a/" + p + "aaa: replaced by " + p + "ccc, and nothing refers to it"}
	},
	"temporary-pr-namespaces": func(f *fixture) []string {
		f.obj("Namespace", "pr-12", 5*time.Hour)
		f.obj("Namespace", "pr-13", time.Hour)
		f.obj("Namespace", "prod", 40*day)
		return []string{"Namespace/pr-12: a pull-request namespace, created " + ts(ago(5*time.Hour))}
	},
	"require-application-label": func(f *fixture) []string {
		old := 40 * day
		f.obj("Deployment", "a/unlabelled", old)
		f.label(f.obj("Deployment", "a/labelled", old), "application", "shop")
		f.obj("StatefulSet", "a/db", old)
		f.obj("Deployment", "a/new", day)
		return []string{
			"Deployment/a/unlabelled: Deployment without the label application, created " + ts(ago(old)),
			"StatefulSet/a/db: StatefulSet without the label application, created " + ts(ago(old)),
		}
	},
	"finished-jobs": func(f *fixture) []string {
		for _, j := range []struct {
			key      string
			finished time.Duration
		}{{"a/done", 3 * time.Hour}, {"a/done-lately", time.Hour}, {"ci-7/done", 3 * time.Hour}} {
			f.job(f.obj("Job", j.key, day), true, false, j.finished, nil)
		}
		return []string{"Job/a/done: Complete since " + ts(ago(3*time.Hour)) + ", no ttlSecondsAfterFinished"}
	},
}

// historyOf is history for a target of group.
func (f *fixture) historyOf(group, target string, last time.Duration) {
	f.histories = append(f.histories, func() {
		kind, key, _ := strings.Cut(target, " ")
		ns, name, _ := strings.Cut(key, "/")
		f.exec(`INSERT INTO ref_history (target_group, target_kind, target_namespace, target_name, prefix, first_referenced,
				last_referenced)
			VALUES (?, ?, ?, ?, 0, ?, ?)`, group, kind, ns, name, ts(ago(60*day)), ts(ago(last)))
	})
}

// TestCookbook: every recipe of docs/cleanup-rules.md parses, prepares on
// the sandbox, and matches what it says it matches, so the page cannot
// drift from the code.
func TestCookbook(t *testing.T) {
	md, err := os.ReadFile(cookbook)
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlockRE.FindAllStringSubmatch(string(md), -1)
	if len(blocks) != 10 {
		t.Fatalf("%s has %d yaml blocks, want the ten recipes", cookbook, len(blocks))
	}
	var ids []string
	for _, b := range blocks {
		rs, errs := Parse(cookbook, []byte(b[1]), ParseOptions{})
		if len(errs) > 0 {
			t.Fatalf("%s: %v", cookbook, errs)
		}
		if len(rs) != 1 {
			t.Fatalf("%s: a block holds %d rules, want one:\n%s", cookbook, len(rs), b[1])
		}
		r := rs[0]
		ids = append(ids, r.ID)
		t.Run(r.ID, func(t *testing.T) {
			fill, ok := recipeFixtures[r.ID]
			if !ok {
				t.Fatalf("no fixture for the recipe %s", r.ID)
			}
			f := newFixture(t)
			want := fill(f)
			f.commit()
			got := evaluate(t, f.sandbox(), r)
			slices.Sort(got)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("matches (-want +got):\n%s", diff)
			}
		})
	}
	for id := range recipeFixtures {
		if !slices.Contains(ids, id) {
			t.Errorf("a fixture for %s, which is no recipe of %s", id, cookbook)
		}
	}
}
