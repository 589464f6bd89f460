package rules

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// cmFixture holds ConfigMaps used every way kor's own fixture uses them,
// and each of kor's false-positive classes, beside unused ones.
func cmFixture(t *testing.T) *fixture {
	f := newFixture(t)
	old := 40 * day
	pod := f.obj("Pod", "a/web", old)
	f.pod(pod, "Running")
	for _, c := range []struct{ name, via string }{
		{"volume", "spec.volumes[].configMap"},
		{"env", "spec.containers[].env[].valueFrom.configMapKeyRef"},
		{"envfrom", "spec.containers[].envFrom[].configMapRef"},
		{"init-env", "spec.initContainers[].env[].valueFrom.configMapKeyRef"},
		{"projected", "spec.volumes[].projected.sources[].configMap"},
	} {
		f.obj("ConfigMap", "a/used-by-"+c.name, old)
		f.ref(pod, "ConfigMap a/used-by-"+c.name, c.via)
	}
	// kor's false positives: referenced by templates with no Pod now.
	cron := f.obj("CronJob", "a/nightly", old)
	f.obj("ConfigMap", "a/used-between-runs", old)
	f.ref(cron, "ConfigMap a/used-between-runs", "spec.jobTemplate.spec.template.spec.volumes[].configMap")
	deploy := f.obj("Deployment", "a/idle", old)
	f.workload(deploy, 0)
	f.obj("ConfigMap", "a/used-scaled-to-zero", old)
	f.ref(deploy, "ConfigMap a/used-scaled-to-zero", "spec.template.spec.containers[].envFrom[].configMapRef")
	widget := f.obj("Widget", "a/w", old)
	f.obj("ConfigMap", "a/used-by-a-custom-resource", old)
	f.ref(widget, "ConfigMap a/used-by-a-custom-resource", "spec.configRef")

	f.obj("ConfigMap", "a/unused", old)
	f.obj("ConfigMap", "b/used-by-env", old) // the same name in another namespace
	f.obj("ConfigMap", "a/unused-new", 12*time.Hour)
	f.obj("ConfigMap", "a/unreferenced-lately", old)
	f.history("ConfigMap a/unreferenced-lately", false, 6*time.Hour)
	f.obj("ConfigMap", "a/unreferenced-long-ago", old)
	f.history("ConfigMap a/unreferenced-long-ago", false, 10*day)

	f.label(f.obj("ConfigMap", "a/kor-used-true", old), "kor/used", "true")
	korFalse := f.obj("ConfigMap", "a/kor-used-false", old)
	f.label(korFalse, "kor/used", "false")
	f.ref(pod, "ConfigMap a/kor-used-false", "spec.volumes[].configMap")
	f.obj("ConfigMap", "a/kube-root-ca.crt", old)
	f.obj("ConfigMap", "kube-system/unused", old)
	f.obj("ConfigMap", "kube-public/unused", old)
	owned := f.obj("ConfigMap", "a/owned", old)
	f.owner(owned, deploy, false)
	f.annotation(f.obj("ConfigMap", "a/helm-keep", old), "helm.sh/resource-policy", "keep")
	f.annotation(f.obj("ConfigMap", "a/keep-annotated", old), "kubegcd.io/keep", "true")
	f.label(f.obj("ConfigMap", "a/keep-labelled", old), "kubegcd.io/keep", "true")
	f.deleting(f.obj("ConfigMap", "a/deleting", old))
	return f
}

func TestUnusedConfigMaps(t *testing.T) {
	f := cmFixture(t)
	f.commit()
	got := evaluate(t, f.sandbox(), builtinRule(t, "unused-configmaps"))
	want := []string{
		"ConfigMap/a/kor-used-false: labelled kor/used=false",
		"ConfigMap/a/unreferenced-long-ago: no reference since " + ts(ago(10*day)),
		"ConfigMap/a/unused: no reference since " + ts(watched),
		"ConfigMap/b/used-by-env: no reference since " + ts(watched),
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
}

// TestNeverUnreferencedLongerThanWatched: with the referrers watched for
// less than the grace, or one of them not listed yet, nothing is unused.
func TestNeverUnreferencedLongerThanWatched(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  string
		arg  any
	}{
		{"watched for less than the grace", `UPDATE resources SET first_synced_at = ? WHERE kind = 'Pod'`, ts(ago(20 * time.Hour))},
		{"a referrer never listed", `UPDATE resources SET first_synced_at = NULL WHERE kind = ?`, "Ingress"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := cmFixture(t)
			f.exec(tt.set, tt.arg)
			f.commit()
			got := evaluate(t, f.sandbox(), builtinRule(t, "unused-configmaps"))
			if want := []string{"ConfigMap/a/kor-used-false: labelled kor/used=false"}; !slices.Equal(got, want) {
				t.Errorf("matches: %q, want %q", got, want)
			}
		})
	}
}

func TestUnusedSecrets(t *testing.T) {
	f := newFixture(t)
	old := 40 * day
	pod := f.obj("Pod", "a/web", old)
	secret := func(name, typ string) string {
		key := name
		if !strings.Contains(name, "/") {
			key = "a/" + name
		}
		uid := f.obj("Secret", key, old)
		f.secret(uid, typ)
		return uid
	}
	secret("unused", "Opaque")
	secret("unused-tls", "kubernetes.io/tls")
	secret("helm-release", "helm.sh/release.v1")
	secret("token", "kubernetes.io/service-account-token")
	secret("dockercfg", "kubernetes.io/dockercfg")
	secret("pull", "kubernetes.io/dockerconfigjson")
	secret("kubernetes-dashboard/kubernetes-dashboard-csrf", "Opaque")
	secret("volume", "Opaque")
	f.ref(pod, "Secret a/volume", "spec.volumes[].secret")
	secret("image-pull", "kubernetes.io/dockerconfigjson")
	f.ref(pod, "Secret a/image-pull", "spec.imagePullSecrets[]")
	sa := f.obj("ServiceAccount", "a/builder", old)
	secret("of-a-service-account", "Opaque")
	f.ref(sa, "Secret a/of-a-service-account", "secrets[]")
	ing := f.obj("Ingress", "a/web", old)
	secret("tls", "kubernetes.io/tls")
	f.ref(ing, "Secret a/tls", "spec.tls[].secretName")
	secret("csi", "Opaque")
	f.ref(pod, "Secret a/csi", "spec.volumes[].csi.nodePublishSecretRef")
	f.commit()
	got := evaluate(t, f.sandbox(), builtinRule(t, "unused-secrets"))
	want := []string{
		"Secret/a/unused: no reference since " + ts(watched),
		"Secret/a/unused-tls: no reference since " + ts(watched),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
}

func TestUnusedPVCs(t *testing.T) {
	f := newFixture(t)
	old := 40 * day
	pod := f.obj("Pod", "a/db", old)
	claim := func(name string) string {
		uid := f.obj("PersistentVolumeClaim", "a/"+name, old)
		f.pvc(uid, "Bound", "pv-"+name)
		return uid
	}
	claim("mounted")
	f.ref(pod, "PersistentVolumeClaim a/mounted", "spec.volumes[].persistentVolumeClaim")
	// A StatefulSet's claims, by their prefix <template>-<set>-, the set
	// scaled down or not.
	web := f.obj("StatefulSet", "a/web", old)
	f.workload(web, 1)
	f.ref(web, "PersistentVolumeClaim a/data-web-", "spec.volumeClaimTemplates[]", refOpt{prefix: true})
	claim("data-web-0")
	claim("data-web-1")
	claim("data-web-12")
	claim("data-webby-0")
	claim("data-web-x")
	claim("data-web-")
	dbs := f.obj("StatefulSet", "a/db", old)
	f.workload(dbs, 0)
	f.ref(dbs, "PersistentVolumeClaim a/vol-db-", "spec.volumeClaimTemplates[]", refOpt{prefix: true})
	claim("vol-db-0")
	// A StatefulSet deleted a while ago: its claims' prefix history.
	claim("gone-old-0")
	f.history("PersistentVolumeClaim a/gone-old-", true, 2*time.Hour)
	// Only a PersistentVolume's claimRef points at it: unused.
	pv := f.obj("PersistentVolume", "pv-bound-only", old)
	claim("bound-only")
	f.ref(pv, "PersistentVolumeClaim a/bound-only", "spec.claimRef")
	claim("unused")
	f.commit()
	got := evaluate(t, f.sandbox(), builtinRule(t, "unused-pvcs"))
	want := []string{
		"PersistentVolumeClaim/a/bound-only: no reference since " + ts(watched),
		"PersistentVolumeClaim/a/data-web-: no reference since " + ts(watched),
		"PersistentVolumeClaim/a/data-web-x: no reference since " + ts(watched),
		"PersistentVolumeClaim/a/data-webby-0: no reference since " + ts(watched),
		"PersistentVolumeClaim/a/unused: no reference since " + ts(watched),
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
}

func TestUnusedServiceAccounts(t *testing.T) {
	f := newFixture(t)
	old := 40 * day
	f.obj("ServiceAccount", "a/default", old)
	f.obj("ServiceAccount", "a/unused", old)
	pod := f.obj("Pod", "a/web", old)
	f.obj("ServiceAccount", "a/runner", old)
	f.ref(pod, "ServiceAccount a/runner", "spec.serviceAccountName")
	deploy := f.obj("Deployment", "a/idle", old)
	f.workload(deploy, 0)
	f.obj("ServiceAccount", "a/idle-runner", old)
	f.ref(deploy, "ServiceAccount a/idle-runner", "spec.template.spec.serviceAccountName")
	// A binding names its ServiceAccount subjects with their namespace:
	// b/bound is used, a/bound (the same name) is not.
	rb := f.obj("RoleBinding", "a/read", old)
	f.obj("ServiceAccount", "b/bound", old)
	f.obj("ServiceAccount", "a/bound", old)
	f.ref(rb, "ServiceAccount b/bound", "subjects[]")
	crb := f.obj("ClusterRoleBinding", "admin", old)
	f.obj("ServiceAccount", "c/admin", old)
	f.ref(crb, "ServiceAccount c/admin", "subjects[]")
	f.obj("ServiceAccount", "kube-system/unused", old)
	f.commit()
	got := evaluate(t, f.sandbox(), builtinRule(t, "unused-serviceaccounts"))
	want := []string{
		"ServiceAccount/a/bound: no reference since " + ts(watched),
		"ServiceAccount/a/unused: no reference since " + ts(watched),
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
}

func TestFinishedJobs(t *testing.T) {
	f := newFixture(t)
	old := 40 * day
	job := func(key string, complete, failed bool, finished time.Duration, ttl *int) string {
		uid := f.obj("Job", key, old)
		f.job(uid, complete, failed, finished, ttl)
		return uid
	}
	job("a/done", true, false, 2*day, nil)
	job("a/failed", false, true, 3*day, nil)
	job("a/done-with-ttl", true, false, 2*day, intp(3600))
	job("a/done-lately", true, false, time.Hour, nil)
	job("a/running", false, false, 0, nil)
	// A CronJob with the default history: 3 successful, 1 failed.
	nightly := f.obj("CronJob", "a/nightly", old)
	f.cronjob(nightly, nil, nil)
	for i, age := range []time.Duration{2, 3, 4, 5, 6} {
		f.owner(job("a/nightly-"+string(rune('a'+i)), true, false, age*day, nil), nightly, true)
	}
	for i, age := range []time.Duration{2, 3} {
		f.owner(job("a/nightly-failed-"+string(rune('a'+i)), false, true, age*day, nil), nightly, true)
	}
	// One that keeps no successful Job; its latest is too new.
	hourly := f.obj("CronJob", "a/hourly", old)
	f.cronjob(hourly, intp(0), intp(5))
	f.owner(job("a/hourly-a", true, false, 30*time.Minute, nil), hourly, true)
	f.owner(job("a/hourly-b", true, false, 2*day, nil), hourly, true)
	// Owned by another controller, or by a CronJob gone: not this rule's.
	widget := f.obj("Widget", "a/w", old)
	f.owner(job("a/of-a-widget", true, false, 2*day, nil), widget, true)
	f.owner(job("a/orphan", true, false, 2*day, nil), "CronJob/a/gone", true)
	job("kube-system/done", true, false, 2*day, nil)
	f.commit()
	got := evaluate(t, f.sandbox(), builtinRule(t, "finished-jobs"))
	want := []string{
		"Job/a/done: Complete since " + ts(ago(2*day)) + ", no ttlSecondsAfterFinished",
		"Job/a/failed: Failed since " + ts(ago(3*day)) + ", no ttlSecondsAfterFinished",
		"Job/a/hourly-b: Complete since " + ts(ago(2*day)) + ", number 2 of CronJob hourly, whose history keeps 0",
		"Job/a/nightly-d: Complete since " + ts(ago(5*day)) + ", number 4 of CronJob nightly, whose history keeps 3",
		"Job/a/nightly-e: Complete since " + ts(ago(6*day)) + ", number 5 of CronJob nightly, whose history keeps 3",
		"Job/a/nightly-failed-b: Failed since " + ts(ago(3*day)) + ", number 2 of CronJob nightly, whose history keeps 1",
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
}

func TestDanglingReferences(t *testing.T) {
	f := newFixture(t)
	old := 40 * day
	f.obj("ConfigMap", "a/present", old)
	deploy := f.obj("Deployment", "a/web", old)
	f.ref(deploy, "ConfigMap a/present", "spec.template.spec.volumes[].configMap")
	f.ref(deploy, "ConfigMap a/missing", "spec.template.spec.volumes[].configMap")
	f.ref(deploy, "Secret a/missing", "spec.template.spec.containers[].env[].valueFrom.secretKeyRef")
	f.ref(deploy, "Secret a/optional", "spec.template.spec.volumes[].secret", refOpt{optional: true})
	pod := f.obj("Pod", "a/alone", old)
	f.pod(pod, "Pending")
	f.ref(pod, "ServiceAccount a/missing", "spec.serviceAccountName")
	f.ref(pod, "PersistentVolumeClaim a/alone-scratch", "spec.volumes[].ephemeral")
	done := f.obj("Pod", "a/done", old)
	f.pod(done, "Succeeded")
	f.ref(done, "ConfigMap a/missing", "spec.volumes[].configMap")
	// A Job that has finished starts no Pod again; one suspended does,
	// once resumed.
	for _, j := range []struct {
		name             string
		complete, failed bool
	}{{"complete", true, false}, {"failed", false, true}, {"suspended", false, false}} {
		job := f.obj("Job", "a/"+j.name, old)
		f.job(job, j.complete, j.failed, day, nil)
		f.ref(job, "ConfigMap a/missing", "spec.template.spec.volumes[].configMap")
	}
	rs := f.obj("ReplicaSet", "a/web-1", old)
	f.owner(rs, deploy, true)
	f.ref(rs, "ConfigMap a/missing", "spec.template.spec.volumes[].configMap")
	sts := f.obj("StatefulSet", "a/db", old)
	f.ref(sts, "PersistentVolumeClaim a/data-db-", "spec.volumeClaimTemplates[]", refOpt{prefix: true})
	cron := f.obj("CronJob", "a/nightly", old)
	f.ref(cron, "Secret a/token", "spec.jobTemplate.spec.template.spec.volumes[].secret")
	rb := f.obj("RoleBinding", "a/read", old)
	f.ref(rb, "ServiceAccount a/missing", "subjects[]")
	widget := f.obj("Widget", "a/w", old)
	f.ref(widget, "Secret a/missing", "spec.secretRef")
	sys := f.obj("Deployment", "kube-system/dns", old)
	f.ref(sys, "ConfigMap kube-system/missing", "spec.template.spec.volumes[].configMap")
	f.commit()
	got := evaluate(t, f.sandbox(), builtinRule(t, "dangling-references"))
	want := []string{
		"CronJob/a/nightly: refers to Secret token (spec.jobTemplate.spec.template.spec.volumes[].secret), which does not exist",
		"Deployment/a/web: refers to ConfigMap missing (spec.template.spec.volumes[].configMap), " +
			"Secret missing (spec.template.spec.containers[].env[].valueFrom.secretKeyRef), which does not exist",
		"Job/a/suspended: refers to ConfigMap missing (spec.template.spec.volumes[].configMap), which does not exist",
		"Pod/a/alone: refers to ServiceAccount missing (spec.serviceAccountName), which does not exist",
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
}

func TestTTLExpired(t *testing.T) {
	f := newFixture(t)
	note := func(kind, key string, created time.Duration, kv ...string) string {
		uid := f.obj(kind, key, created)
		for i := 0; i+1 < len(kv); i += 2 {
			f.annotation(uid, kv[i], kv[i+1])
		}
		return uid
	}
	note("ConfigMap", "a/ttl-passed", 2*time.Hour, "kubegcd.io/ttl", "1h")
	note("ConfigMap", "a/ttl-to-come", 2*time.Hour, "kubegcd.io/ttl", "1d")
	note("ConfigMap", "a/expired", time.Hour, "kubegcd.io/expires", "2026-05-01")
	note("ConfigMap", "a/expires-later", time.Hour, "kubegcd.io/expires", "2026-07-01T00:00:00Z")
	note("Deployment", "a/janitor", 8*day, "janitor/ttl", "7d")
	note("Deployment", "a/janitor-forever", 800*day, "janitor/ttl", "forever")
	note("Deployment", "a/janitor-expired", day, "janitor/expires", "2026-05-31T10:00")
	kyverno := f.obj("ConfigMap", "a/kyverno", 3*time.Hour)
	f.label(kyverno, "cleanup.kyverno.io/ttl", "2h")
	note("Namespace", "test-friday", 3*day, "kubegcd.io/ttl", "2d")
	note("ClusterRole", "temporary", 3*day, "kubegcd.io/expires", "2026-05-30")
	note("ConfigMap", "a/bad", time.Hour, "kubegcd.io/ttl", "soon")
	note("ConfigMap", "a/bad-and-expired", 2*time.Hour, "kubegcd.io/expires", "someday", "kubegcd.io/ttl", "1h")
	note("ConfigMap", "kube-system/ttl-passed", 2*time.Hour, "kubegcd.io/ttl", "1h")
	note("Namespace", "kube-system", 300*day, "kubegcd.io/ttl", "1d")
	note("Namespace", "kept", 3*day, "kubegcd.io/ttl", "1d", "kubegcd.io/keep", "true")
	f.commit()
	got := evaluate(t, f.sandbox(), builtinRule(t, "ttl-expired"))
	want := []string{
		"ClusterRole/temporary: kubegcd.io/expires=2026-05-30 expired at 2026-05-30T00:00:00.000000Z",
		"ConfigMap/a/bad-and-expired: kubegcd.io/expires=someday is not a time; kubegcd.io/ttl=1h expired at " + ts(ago(time.Hour)),
		"ConfigMap/a/expired: kubegcd.io/expires=2026-05-01 expired at 2026-05-01T00:00:00.000000Z",
		"ConfigMap/a/kyverno: cleanup.kyverno.io/ttl=2h expired at " + ts(ago(time.Hour)),
		"ConfigMap/a/ttl-passed: kubegcd.io/ttl=1h expired at " + ts(ago(time.Hour)),
		"Deployment/a/janitor-expired: janitor/expires=2026-05-31T10:00 expired at 2026-05-31T10:00:00.000000Z",
		"Deployment/a/janitor: janitor/ttl=7d expired at " + ts(ago(day)),
		"Namespace/test-friday: kubegcd.io/ttl=2d expired at " + ts(ago(day)),
		"finding ConfigMap/a/bad: kubegcd.io/ttl=soon is not a duration",
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
}

// TestOverrideExcludes: an entry with a built-in's id narrows it by
// namespace, label and name, and changes its params; the built-in's own
// exclusions stay.
func TestOverrideExcludes(t *testing.T) {
	f := cmFixture(t)
	old := 40 * day
	f.obj("ConfigMap", "team-x/unused", old)
	f.obj("ConfigMap", "a/app-cache", old)
	f.label(f.obj("ConfigMap", "a/labelled-keep", old), "app", "keep")
	f.label(f.obj("ConfigMap", "a/labelled-other", old), "app", "other")
	f.label(f.obj("ConfigMap", "a/tier-3", old), "tier", "3")
	f.commit()
	rules, errs := Parse("override.yaml", []byte(`
rules:
- id: unused-configmaps
  params: {grace: 11d}
  exclude:
    namespaces: [team-*, b]
    labels: ["app in (keep)", "tier>2"]
    names: ["*-cache"]
`), ParseOptions{})
	if len(errs) > 0 || len(rules) != 1 {
		t.Fatalf("Parse: %v", errs)
	}
	got := evaluate(t, f.sandbox(), rules[0])
	// unreferenced-long-ago (10 days) is within the grace of 11 days.
	want := []string{
		"ConfigMap/a/kor-used-false: labelled kor/used=false",
		"ConfigMap/a/labelled-other: no reference since " + ts(watched),
		"ConfigMap/a/unused: no reference since " + ts(watched),
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	if rules[0].Hash == builtinRule(t, "unused-configmaps").Hash {
		t.Error("the override has the built-in's hash")
	}
}

// TestBuiltinsCheck: every built-in prepares on the sandbox, as shipped.
func TestBuiltinsCheck(t *testing.T) {
	f := newFixture(t)
	f.commit()
	e := &Evaluator{Sandbox: f.sandbox()}
	for _, r := range Builtins() {
		if err := e.Check(context.Background(), r); err != nil {
			t.Errorf("%s: %v", r.ID, err)
		}
		if !strings.Contains(r.Description, " ") || r.Hash == "" || !r.Source.BuiltIn {
			t.Errorf("%s: %+v", r.ID, r)
		}
	}
}
