package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// The built-in rules, as the fixture's expectations name them.
const (
	unusedCMs      = "unused-configmaps"
	unusedSecrets  = "unused-secrets"
	unusedPVCs     = "unused-pvcs"
	unusedSAs      = "unused-serviceaccounts"
	finishedJobs   = "finished-jobs"
	danglingRefs   = "dangling-references"
	ttlExpired     = "ttl-expired"
	ttlUnparseable = "ttl-expired (finding)"
)

// want is what the built-in rules say of one fixture object at the
// fixture's three instants: when kubegcd has just synced (sync), a day
// later (day: every grace and min_age has passed since the sync), and a
// day after a referrer was deleted (later). Each instant's rules include
// the previous instant's.
type want struct {
	sync, day, later []string
}

func never() want                       { return want{} }
func always(rules ...string) want       { return want{sync: rules} }
func afterADay(rules ...string) want    { return want{day: rules} }
func afterHistory(rules ...string) want { return want{later: rules} }

// at is the rules that match at instant i: 0 sync, 1 day, 2 later.
func (w want) at(i int) []string {
	out := slices.Clone(w.sync)
	if i >= 1 {
		out = append(out, w.day...)
	}
	if i >= 2 {
		out = append(out, w.later...)
	}
	return out
}

// rulesFixture creates the objects of TestRulesFixture and records, for
// each, what every built-in rule must say of it.
type rulesFixture struct {
	t   *testing.T
	ctx context.Context
	// wants are by "Kind namespace/name" ("Kind name" when cluster-scoped).
	wants map[string]want
	// namespaces are the fixture's own: an object of theirs the fixture
	// did not create must match nothing.
	namespaces []string
	// cleanups run when the test ends.
	cleanups []func()
}

func (f *rulesFixture) must(_ any, err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *rulesFixture) expect(kind, ns, name string, w want) {
	f.t.Helper()
	key := objectKey(kind, ns, name)
	if _, ok := f.wants[key]; ok {
		f.t.Fatalf("fixture: %s twice", key)
	}
	f.wants[key] = w
}

func objectKey(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// metaOpt sets a field of an object's metadata.
type metaOpt func(*metav1.ObjectMeta)

func label(k, v string) metaOpt {
	return func(m *metav1.ObjectMeta) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[k] = v
	}
}

func annotation(k, v string) metaOpt {
	return func(m *metav1.ObjectMeta) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[k] = v
	}
}

func ownedBy(apiVersion, kind string, owner metav1.Object, controller bool) metaOpt {
	return func(m *metav1.ObjectMeta) {
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind,
			Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(controller)})
	}
}

func objectMeta(ns, name string, opts ...metaOpt) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: ns, Name: name}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func (f *rulesFixture) configMap(ns, name string, w want, opts ...metaOpt) *corev1.ConfigMap {
	f.t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(f.ctx, &corev1.ConfigMap{ObjectMeta: objectMeta(ns, name, opts...),
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.expect("ConfigMap", ns, name, w)
	return cm
}

func (f *rulesFixture) secret(ns, name string, typ corev1.SecretType, data map[string]string, w want, opts ...metaOpt) {
	f.t.Helper()
	f.must(kube.CoreV1().Secrets(ns).Create(f.ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, name, opts...), Type: typ,
		StringData: data}, metav1.CreateOptions{}))
	f.expect("Secret", ns, name, w)
}

func (f *rulesFixture) claim(ns, name, volume string, w want, opts ...metaOpt) {
	f.t.Helper()
	f.must(kube.CoreV1().PersistentVolumeClaims(ns).Create(f.ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: objectMeta(ns, name, opts...), Spec: claimSpec(volume)}, metav1.CreateOptions{}))
	f.expect("PersistentVolumeClaim", ns, name, w)
}

func (f *rulesFixture) serviceAccount(sa *corev1.ServiceAccount, w want) {
	f.t.Helper()
	f.must(kube.CoreV1().ServiceAccounts(sa.Namespace).Create(f.ctx, sa, metav1.CreateOptions{}))
	f.expect("ServiceAccount", sa.Namespace, sa.Name, w)
}

func (f *rulesFixture) role(ns, name string, w want, opts ...metaOpt) {
	f.t.Helper()
	f.must(kube.RbacV1().Roles(ns).Create(f.ctx, &rbacv1.Role{ObjectMeta: objectMeta(ns, name, opts...)},
		metav1.CreateOptions{}))
	f.expect("Role", ns, name, w)
}

// deleting deletes an object the fixture holds with holdFinalizer, and
// lets it go when the test ends.
func (f *rulesFixture) deleting(ns, name string) {
	f.t.Helper()
	cms := kube.CoreV1().ConfigMaps(ns)
	if err := cms.Delete(f.ctx, name, metav1.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.cleanups = append(f.cleanups, func() {
		_, _ = cms.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`),
			metav1.PatchOptions{})
	})
}

// targets creates the objects a pod spec names through every field kubegcd
// reads, each named prefix-<field>, and returns that spec. Every target
// is referenced, so each rule must leave it out. Each spec names its own
// targets: a field whose extraction broke leaves its target unreferenced,
// which the unused-* rules then report.
func (f *rulesFixture) targets(ns, prefix string) corev1.PodSpec {
	f.t.Helper()
	n := func(field string) string { return prefix + "-" + field }
	for _, cm := range []string{"vol", "proj", "init-env", "env", "envfrom"} {
		f.configMap(ns, n(cm), never())
	}
	for _, s := range []string{"pull", "vol", "proj", "csi", "flex", "init-envfrom", "env", "envfrom"} {
		f.secret(ns, n(s), corev1.SecretTypeOpaque, nil, never())
	}
	f.claim(ns, n("claim"), "", never())
	f.serviceAccount(&corev1.ServiceAccount{ObjectMeta: objectMeta(ns, prefix)}, never())
	local := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	return corev1.PodSpec{
		ServiceAccountName:           prefix,
		AutomountServiceAccountToken: ptr.To(false),
		ImagePullSecrets:             []corev1.LocalObjectReference{local(n("pull"))},
		Volumes: []corev1.Volume{
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: local(n("vol"))}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: n("vol")}}},
			{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: n("claim")}}},
			{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: local(n("proj"))}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: local(n("proj")), Optional: ptr.To(true)}},
				}}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.example.com",
				NodePublishSecretRef: ptr.To(local(n("csi")))}}},
			{Name: "flex", VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "example.com/flex",
				SecretRef: ptr.To(local(n("flex")))}}},
			// A generic ephemeral volume: a Pod's claim is <pod>-scratch
			// (see pod); a template's pods have no names yet.
			{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: claimSpec("")}}}},
		},
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox",
			Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: local(n("init-env")), Key: "k"}}}},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: local(n("init-envfrom"))}}}}},
		Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Env: []corev1.EnvVar{
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: local(n("env")), Key: "k"}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: local(n("env")), Key: "k", Optional: ptr.To(true)}}},
			},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: local(n("envfrom"))}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: local(n("envfrom"))}},
			}}},
	}
}

// pod creates a Pod and the claim of its ephemeral volume, if it has one.
func (f *rulesFixture) pod(ns, name string, spec corev1.PodSpec, w want, opts ...metaOpt) *corev1.Pod {
	f.t.Helper()
	for _, v := range spec.Volumes {
		if v.Ephemeral != nil {
			f.claim(ns, name+"-"+v.Name, "", never())
		}
	}
	p, err := kube.CoreV1().Pods(ns).Create(f.ctx, &corev1.Pod{ObjectMeta: objectMeta(ns, name, opts...), Spec: spec},
		metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.expect("Pod", ns, name, w)
	return p
}

// minimalSpec is a pod spec naming nothing but its namespace's default
// ServiceAccount, plus what more sets.
func minimalSpec(more func(*corev1.PodSpec)) corev1.PodSpec {
	s := corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}
	if more != nil {
		more(&s)
	}
	return s
}

func template(spec corev1.PodSpec, labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}
}

func jobSpec(spec corev1.PodSpec) batchv1.JobSpec {
	spec.RestartPolicy = corev1.RestartPolicyNever
	return batchv1.JobSpec{Template: template(spec, nil)}
}

func (f *rulesFixture) deployment(ns, name string, replicas int32, spec corev1.PodSpec, w want,
	opts ...metaOpt) *appsv1.Deployment {
	f.t.Helper()
	labels := map[string]string{"app": name}
	d, err := kube.AppsV1().Deployments(ns).Create(f.ctx, &appsv1.Deployment{ObjectMeta: objectMeta(ns, name, opts...),
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template(spec, labels)}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.expect("Deployment", ns, name, w)
	return d
}

// deploymentUp creates a Deployment of one replica with what the
// deployment controller would make of it: its ReplicaSet and that
// ReplicaSet's Pod, all naming the same targets. wantDeployment is what the
// rules say of the Deployment; its ReplicaSet and Pod have owners, which
// every built-in leaves out.
func (f *rulesFixture) deploymentUp(ns, name string, spec corev1.PodSpec, wantDeployment want) {
	f.t.Helper()
	d := f.deployment(ns, name, 1, spec, wantDeployment)
	labels := map[string]string{"app": name, "pod-template-hash": "5d4b"}
	rs, err := kube.AppsV1().ReplicaSets(ns).Create(f.ctx, &appsv1.ReplicaSet{
		ObjectMeta: objectMeta(ns, name+"-5d4b", label("app", name), label("pod-template-hash", "5d4b"),
			ownedBy("apps/v1", "Deployment", d, true)),
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template(spec, labels)}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.expect("ReplicaSet", ns, rs.Name, never())
	f.pod(ns, rs.Name+"-x7k2p", spec, never(), label("app", name), ownedBy("apps/v1", "ReplicaSet", rs, true))
}

// finishedJob creates a Job and writes the status the Job controller
// would: Complete (or Failed) since finished.
func (f *rulesFixture) finishedJob(ns, name string, failed bool, finished time.Time, ttl *int32, w want,
	opts ...metaOpt) {
	f.t.Helper()
	spec := jobSpec(minimalSpec(nil))
	spec.TTLSecondsAfterFinished = ttl
	f.finish(f.job(ns, name, spec, w, opts...), failed, finished)
}

func (f *rulesFixture) job(ns, name string, spec batchv1.JobSpec, w want, opts ...metaOpt) *batchv1.Job {
	f.t.Helper()
	j, err := kube.BatchV1().Jobs(ns).Create(f.ctx, &batchv1.Job{ObjectMeta: objectMeta(ns, name, opts...), Spec: spec},
		metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.expect("Job", ns, name, w)
	return j
}

func (f *rulesFixture) finish(j *batchv1.Job, failed bool, finished time.Time) {
	f.t.Helper()
	at := metav1.NewTime(finished)
	start := metav1.NewTime(finished.Add(-time.Minute))
	cond := func(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, LastProbeTime: at,
			LastTransitionTime: at}
	}
	j.Status.StartTime = &start
	if failed {
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"),
			cond(batchv1.JobFailed, "BackoffLimitExceeded")}
	} else {
		j.Status.Succeeded = 1
		j.Status.CompletionTime = &at
		j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"),
			cond(batchv1.JobComplete, "CompletionsReached")}
	}
	f.must(kube.BatchV1().Jobs(j.Namespace).UpdateStatus(f.ctx, j, metav1.UpdateOptions{}))
}

// TestRulesFixture: against a real kube-apiserver, a fixture with a
// referrer through every reference path kubegcd reads, present and scaled
// to zero or between a CronJob's runs; unreferenced ConfigMaps, Secrets,
// claims and ServiceAccounts beside the ones no rule may report; kor's own
// fixture and its false positives; finished Jobs; dangling references;
// and TTLs on namespaced and cluster-scoped objects. kubegcd mirrors it,
// and every built-in rule, evaluated over its database, reports exactly
// the objects the fixture expects, at the sync, a day later, and a day
// after a referrer went.
func TestRulesFixture(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := &rulesFixture{t: t, ctx: ctx, wants: map[string]want{}}
	t.Cleanup(func() {
		for _, c := range f.cleanups {
			c()
		}
	})
	ns := namespaces.New(t, "rules-fixture")
	other := namespaces.New(t, "rules-fixture-b")
	korNS := namespaces.New(t, "rules-fixture-kor")
	f.namespaces = []string{ns, other, korNS}
	for _, n := range f.namespaces {
		f.expect("Namespace", "", n, never())
		// kor's exception: every namespace's default ServiceAccount.
		f.expect("ServiceAccount", n, "default", never())
	}
	now := time.Now()

	f.referrers(ns)
	f.otherReferrers(ns, other)
	f.korFixture(korNS)
	f.unreferenced(ns, other)
	f.finishedJobs(ns, now)
	f.dangling(ns, other)
	f.ttls(ns)
	gone := f.history(ns)

	d := daemons.Start(t, "", "--reference-path", "Widget."+widgetGVR.Group+":{.spec.configRef}:ConfigMap")
	d.WaitReady(t, 60*time.Second)
	// Every object was made before kubegcd started, so the first lists,
	// done once it is ready, hold them all: from now on nothing in the
	// fixture changes but what the test changes.
	sync := time.Now()
	keys := mirroredKeys(t, d.DBPath)
	var missing []string
	for k := range f.wants {
		if _, ok := keys[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Fatalf("not mirrored once kubegcd is ready: %v", missing)
	}

	// A referrer goes: its targets were referenced until after the sync,
	// so a day after the sync they are still within their grace.
	err := kube.CoreV1().Pods(ns).Delete(ctx, gone, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	if err != nil {
		t.Fatal(err)
	}
	delete(f.wants, objectKey("Pod", ns, gone))
	eventually(t, 30*time.Second, func() error {
		q := `SELECT uid FROM objects WHERE kind = 'Pod' AND namespace = ? AND name = ?`
		if n := querySQL(t, d.DBPath, q, ns, gone); len(n) > 0 {
			return fmt.Errorf("pod %s/%s still mirrored", ns, gone)
		}
		return nil
	})
	later := time.Now().Add(24*time.Hour + time.Minute)

	sandbox, err := d.DB(t).Rules().OpenSandbox(db.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sandbox.Close()
	keys = mirroredKeys(t, d.DBPath)
	for i, at := range []struct {
		name string
		now  time.Time
	}{
		{"at the sync", sync},
		{"a day after the sync", sync.Add(24 * time.Hour)},
		{"a day after a referrer went", later},
	} {
		f.check(sandbox, keys, i, at.name, at.now)
	}
}

// check evaluates every built-in rule at now, the fixture's instant i
// (see want), and compares what each matches of the fixture's objects
// with what it wants; keys are the mirrored objects' (mirroredKeys).
func (f *rulesFixture) check(sandbox *db.Sandbox, keys map[string]string, i int, name string, now time.Time) {
	f.t.Helper()
	e := &rules.Evaluator{Sandbox: sandbox, Now: func() time.Time { return now }}
	for _, r := range rules.Builtins() {
		ms, _, err := e.Evaluate(f.ctx, r)
		if err != nil {
			f.t.Fatalf("%s %s: %v", r.ID, name, err)
		}
		var got []string
		for _, m := range ms {
			k := keys[m.UID]
			if !f.mine(k) {
				continue
			}
			if m.Finding {
				k += " (finding)"
			}
			got = append(got, k)
			f.t.Logf("%s %s: %s: %s", r.ID, name, k, m.Reason)
		}
		var want []string
		for k, w := range f.wants {
			for _, id := range w.at(i) {
				switch id {
				case r.ID:
					want = append(want, k)
				case r.ID + " (finding)":
					want = append(want, k+" (finding)")
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			f.t.Errorf("%s %s (-want +got):\n%s", r.ID, name, diff)
		}
	}
}

// mine says whether the object k ("Kind ns/name", or "" for one not
// mirrored) is the fixture's: made by it, or in one of its namespaces.
func (f *rulesFixture) mine(k string) bool {
	if _, ok := f.wants[k]; ok {
		return true
	}
	for _, ns := range f.namespaces {
		if strings.Contains(k, " "+ns+"/") {
			return true
		}
	}
	return false
}

// mirroredKeys maps each mirrored object's UID to its key, and its key to
// its UID.
func mirroredKeys(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	q := `SELECT uid || char(9) || kind || char(9) || namespace || char(9) || name FROM objects`
	for _, row := range querySQL(t, path, q) {
		p := strings.Split(row, "\t")
		k := objectKey(p[1], p[2], p[3])
		out[p[0]] = k
		out[k] = p[0]
	}
	return out
}
