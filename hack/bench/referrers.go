package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// The referrers benchmark measures what reading the referrer kinds in full
// costs. It grows one cluster in four steps: namespaces only, then
// metadata-only kinds (ConfigMaps), then Pods and workloads whose specs
// reference them, then as many again. At each step every kubegcd binary
// syncs a fresh database. The differences between steps give CPU seconds
// and RSS bytes per object of each class, for this build and for a
// baseline built before references were mirrored. The first referrers
// also fill the caches of the database's connections, which are bounded:
// the second ones show what each referrer adds once they are full.

const (
	refNamespaces = 10
	// Targets: a referrer may cost at most refCPURatio times the baseline's
	// CPU, and grow RSS by at most refRSSPerObject bytes.
	refCPURatio     = 1.25
	refRSSPerObject = 600
)

// refStep is one size of the cluster: its label and what it adds.
type refStep struct {
	name string
	add  func(f *refFixture, ctx context.Context) error
}

// refRun is one binary's figures at one step.
type refRun struct {
	objects int64
	// cpu is CPU seconds from the start to /readyz: the sync, not the
	// rule passes after it.
	cpu float64
	// rss and anon are the settled resident set and its anonymous part:
	// the rest is file pages, mostly of the database that the read
	// connections map.
	rss, anon uint64
}

// refFixture creates the referenced ConfigMaps, then Pods and workloads.
type refFixture struct {
	kube    kubernetes.Interface
	c       *creator
	n       int // ConfigMaps and Pods; workloads are fractions of n
	created int
	// steps counts the steps of referrers made: the next one numbers its
	// objects from where the last ended.
	steps int
}

func refNamespace(i int) string { return fmt.Sprintf("refs-%d", i%refNamespaces) }

// runReferrers runs the benchmark for bin and, when it is set, baseline.
func runReferrers(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	bin, dir string) error {
	fmt.Printf("\n== referrers: %d ConfigMaps, then %d Pods and their workloads\n", cfg.refObjects, cfg.refObjects)
	f := &refFixture{kube: kube, c: &creator{kube: kube, workers: cfg.workers}, n: cfg.refObjects}
	bins := [][2]string{{"kubegcd", bin}}
	if cfg.refBaseline != "" {
		bins = append(bins, [2]string{"baseline", cfg.refBaseline})
	}
	steps := []refStep{
		{"namespaces", (*refFixture).namespaces},
		{"+configmaps", (*refFixture).configMaps},
		{"+referrers", (*refFixture).referrers},
		{"+referrers again", (*refFixture).referrers},
	}
	runs := map[string][]refRun{}
	for s, step := range steps {
		begin := time.Now()
		if err := step.add(f, ctx); err != nil {
			return fmt.Errorf("referrers: %s: %w", step.name, err)
		}
		fmt.Printf("  %s: created %d objects in %s\n", step.name, f.created, time.Since(begin).Round(time.Millisecond))
		f.created = 0
		medians, err := measureReferrers(ctx, cfg, bins, cluster.Kubeconfig, dir, s)
		if err != nil {
			return fmt.Errorf("referrers: at %s: %w", step.name, err)
		}
		for i, nb := range bins {
			r := medians[i]
			fmt.Printf("  %s: %d objects, CPU %.2f s, RSS %.1f MB\n", nb[0], r.objects, r.cpu, mb(r.rss))
			runs[nb[0]] = append(runs[nb[0]], r)
		}
	}
	reportReferrers(runs)
	return nil
}

func (f *refFixture) namespaces(ctx context.Context) error {
	for i := range refNamespaces {
		ns := refNamespace(i)
		if err := createNamespace(ctx, f.kube, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err := createDefaultServiceAccount(ctx, f.kube, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		f.created += 2
	}
	return nil
}

func (f *refFixture) configMaps(ctx context.Context) error {
	return f.each(ctx, f.n, func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: refName("cm", i), Namespace: refNamespace(i)},
			Data: map[string]string{"key": "value"}}
		_, err := createRetrying(ctx, func() (*corev1.ConfigMap, error) {
			return f.kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		}, func() (*corev1.ConfigMap, error) {
			return f.kube.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		})
		return err
	})
}

// referrers creates n Pods, n/5 Deployments and ReplicaSets, n/10
// StatefulSets and Jobs and n/20 CronJobs, each pod spec referencing
// ConfigMaps, a Secret, a claim and a pull secret six ways. A second call
// creates as many more; their ConfigMaps do not exist, so their
// references dangle, as many do in a real cluster.
func (f *refFixture) referrers(ctx context.Context) error {
	kinds := []struct {
		count  int
		create func(ctx context.Context, i int) error
	}{
		{f.n, f.pod}, {f.n / 5, f.deployment}, {f.n / 5, f.replicaSet},
		{f.n / 10, f.statefulSet}, {f.n / 10, f.job}, {f.n / 20, f.cronJob},
	}
	for _, k := range kinds {
		from := f.steps * k.count
		if err := f.each(ctx, k.count, func(ctx context.Context, i int) error { return k.create(ctx, from+i) }); err != nil {
			return err
		}
	}
	f.steps++
	return nil
}

// each runs create for 0..count-1 on the creator's workers.
func (f *refFixture) each(ctx context.Context, count int, create func(context.Context, int) error) error {
	f.created += count
	return f.c.parallel(ctx, seq(count), create)
}

func refName(prefix string, i int) string { return fmt.Sprintf("%s-%06d", prefix, i) }

func ignoreExists[T any](_ T, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// podSpec references ConfigMap i through a volume, an env var and envFrom,
// and a Secret, a claim and a pull secret, as a real workload does.
func podSpec(i int) corev1.PodSpec {
	cm := refName("cm", i)
	return corev1.PodSpec{
		ServiceAccountName: "default",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1",
			Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm},
					Key: "key"}}}},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: refName("secret", i)}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}, {Name: "data", MountPath: "/data"}},
		}},
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: refName("claim", i)}}},
		},
	}
}

func template(i int) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": refName("app", i)}},
		Spec: podSpec(i)}
}

func selector(i int) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": refName("app", i)}}
}

func refMeta(prefix string, i int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: refName(prefix, i), Namespace: refNamespace(i)}
}

func (f *refFixture) pod(ctx context.Context, i int) error {
	p := &corev1.Pod{ObjectMeta: refMeta("pod", i), Spec: podSpec(i)}
	return ignoreExists(f.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}))
}

func (f *refFixture) deployment(ctx context.Context, i int) error {
	d := &appsv1.Deployment{ObjectMeta: refMeta("deploy", i), Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](0), Selector: selector(i), Template: template(i)}}
	return ignoreExists(f.kube.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}))
}

func (f *refFixture) replicaSet(ctx context.Context, i int) error {
	r := &appsv1.ReplicaSet{ObjectMeta: refMeta("rs", i), Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](0), Selector: selector(i), Template: template(i)}}
	return ignoreExists(f.kube.AppsV1().ReplicaSets(r.Namespace).Create(ctx, r, metav1.CreateOptions{}))
}

func (f *refFixture) statefulSet(ctx context.Context, i int) error {
	s := &appsv1.StatefulSet{ObjectMeta: refMeta("sts", i), Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](0), Selector: selector(i), Template: template(i)}}
	return ignoreExists(f.kube.AppsV1().StatefulSets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}))
}

func jobSpec(i int) batchv1.JobSpec {
	t := template(i)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return batchv1.JobSpec{Suspend: ptr.To(true), Template: t}
}

func (f *refFixture) job(ctx context.Context, i int) error {
	j := &batchv1.Job{ObjectMeta: refMeta("job", i), Spec: jobSpec(i)}
	return ignoreExists(f.kube.BatchV1().Jobs(j.Namespace).Create(ctx, j, metav1.CreateOptions{}))
}

func (f *refFixture) cronJob(ctx context.Context, i int) error {
	c := &batchv1.CronJob{ObjectMeta: refMeta("cron", i), Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *",
		Suspend: ptr.To(true), JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec(i)}}}
	return ignoreExists(f.kube.BatchV1().CronJobs(c.Namespace).Create(ctx, c, metav1.CreateOptions{}))
}

// measureReferrers syncs each binary of bins on a fresh database rounds
// times and returns the median of each figure, by binary. A round syncs
// every binary in turn, each round starting one further along: a machine
// that slows down for a while slows all of them alike.
func measureReferrers(ctx context.Context, cfg config, bins [][2]string, kubeconfig, dir string,
	step int) ([]refRun, error) {
	cpus := make([][]float64, len(bins))
	rsss, anons := make([][]uint64, len(bins)), make([][]uint64, len(bins))
	out := make([]refRun, len(bins))
	for round := range cfg.rounds {
		for _, i := range roundOrder(len(bins), round) {
			name := fmt.Sprintf("refs-%s-%d-%d", bins[i][0], step, round)
			r, err := syncOnce(ctx, bins[i][1], kubeconfig, filepath.Join(dir, name), cmp.Or(cfg.refSettle, kcmStable))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", bins[i][0], err)
			}
			cpus[i], rsss[i], anons[i] = append(cpus[i], r.cpu), append(rsss[i], r.rss), append(anons[i], r.anon)
			out[i].objects = r.objects
		}
	}
	for i := range bins {
		out[i].cpu, out[i].rss, out[i].anon = median(cpus[i]), middle(rsss[i]), middle(anons[i])
	}
	return out, nil
}

// middle is the middle value of vs, which is not empty: the upper one of
// the two middle values when there are as many on each side.
func middle(vs []uint64) uint64 { return slices.Sorted(slices.Values(vs))[len(vs)/2] }

// syncOnce starts bin on a fresh database, reads its CPU at /readyz, waits
// for a settled RSS, and reads its memory and mirrored objects.
func syncOnce(ctx context.Context, bin, kubeconfig, path string, settle time.Duration) (r refRun, err error) {
	addr, err := freeAddr()
	if err != nil {
		return r, err
	}
	base := "http://" + addr
	d, err := testcluster.StartKubegcd(bin, path+".log", "run", "--kubeconfig", kubeconfig, "--db", path+".db",
		"--listen", addr, "--log-level", "warn")
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, d.Stop(stopGrace)) }()
	if err := d.WaitReady(ctx, base+"/readyz", readyPoll, readyTimeout); err != nil {
		return r, err
	}
	if r.cpu, err = pidCPU(d.Pid()); err != nil {
		return r, err
	}
	if _, err = settledRSSFor(ctx, d.Pid(), settle); err != nil {
		return r, err
	}
	m, err := readMemory(d.Pid())
	if err != nil {
		return r, err
	}
	r.rss, r.anon = m.RSS, m.Anon
	st, err := testcluster.GetKubegcdStatus(ctx, base)
	if err != nil {
		return r, err
	}
	r.objects = st.Objects
	return r, nil
}

// refClasses are the classes of object, by the step that adds them.
var refClasses = []string{"metadata-only", "referrers", "more referrers"}

// reportReferrers prints, per class of object, CPU and RSS per object of
// each binary, and the verdicts against the targets. RSS is judged on the
// second referrers: the first fill the bounded caches too.
func reportReferrers(runs map[string][]refRun) {
	fmt.Println("\nReferrers: per object of each class, from the differences between steps")
	fmt.Printf("%-10s %-14s %8s %12s %12s %12s\n", "binary", "class", "objects", "CPU µs/obj", "RSS B/obj",
		"anon B/obj")
	perObject := map[string][3]float64{} // binary/class → CPU µs, RSS bytes, anonymous bytes
	for _, name := range []string{"kubegcd", "baseline"} {
		rs := runs[name]
		for i, class := range refClasses {
			if i+1 >= len(rs) {
				break
			}
			a, b := rs[i], rs[i+1]
			n := float64(b.objects - a.objects)
			cpu, rss := (b.cpu-a.cpu)/n*1e6, (float64(b.rss)-float64(a.rss))/n
			anon := (float64(b.anon) - float64(a.anon)) / n
			perObject[name+"/"+class] = [3]float64{cpu, rss, anon}
			fmt.Printf("%-10s %-14s %8.0f %12.1f %12.0f %12.0f\n", name, class, n, cpu, rss, anon)
		}
	}
	first, more := perObject["kubegcd/referrers"], perObject["kubegcd/more referrers"]
	fmt.Printf("\nRSS growth per referrer: %.0f bytes, %.0f of them anonymous (target ≤ %d) %s;"+
		" with the first referrers, which fill the caches: %.0f\n", more[1], more[2], refRSSPerObject,
		verdict(more[1] <= refRSSPerObject), first[1])
	if _, ok := perObject["baseline/referrers"]; !ok {
		fmt.Println("CPU per referrer: no --referrer-baseline to compare with")
		return
	}
	for _, class := range refClasses[1:] {
		ratio := perObject["kubegcd/"+class][0] / perObject["baseline/"+class][0]
		fmt.Printf("CPU per referrer to /readyz, %s: %.2f× the baseline's (target ≤ %.2f×) %s\n", class, ratio,
			refCPURatio, verdict(ratio <= refCPURatio))
	}
	meta, metaBase := perObject["kubegcd/metadata-only"], perObject["baseline/metadata-only"]
	fmt.Printf("CPU per metadata-only object: %.2f× the baseline's\n", meta[0]/metaBase[0])
}
