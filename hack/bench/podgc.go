package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// Targets of the PodGC and TTL benchmarks.
const (
	targetPodGCVsKCM = 1.5
	podgcThreshold   = 1000
	podgcTimeout     = 15 * time.Minute
	ttlNodes         = 2000
	ttlWant          = "60" // band 3 (900–2000 nodes)
)

// contender starts a collector against the cluster and returns its stop
// function and the name of its process (for CPU accounting).
type contender struct {
	name, proc string
	start      func(ctx context.Context, extra ...string) (stop func() error, err error)
}

// contenders are kubegcd running controller, and kube-controller-manager
// running its counterpart kcmController, at the same API rate limits.
func contenders(cfg config, cluster *testcluster.Cluster, dir, controller, kcmController string) []contender {
	qps := strconv.Itoa(cfg.podgcQPS)
	startKubegcd := func(ctx context.Context, extra ...string) (func() error, error) {
		return startControllerKubegcd(ctx, cfg, cluster, dir, controller, extra)
	}
	startKCM := func(ctx context.Context, extra ...string) (func() error, error) {
		return cluster.StartControllerManager(ctx, append([]string{"--controllers=" + kcmController,
			"--kube-api-qps=" + qps, "--kube-api-burst=" + qps}, extra...)...)
	}
	all := []contender{
		{name: "kubegcd", proc: "kubegcd", start: startKubegcd},
		{name: "kube-controller-manager", proc: "kube-controller-manager", start: startKCM},
	}
	if !cfg.kcm {
		return all[:1]
	}
	return all
}

// startControllerKubegcd runs a kubegcd that enforces controller alone,
// with the extra arguments, and returns its stop function.
func startControllerKubegcd(ctx context.Context, cfg config, cluster *testcluster.Cluster, dir, controller string,
	extra []string) (func() error, error) {
	bin, err := testcluster.KubegcdBin()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	qps := strconv.Itoa(cfg.podgcQPS)
	args := append([]string{"run", "--kubeconfig", cluster.Kubeconfig,
		"--db", filepath.Join(dir, "kubegcd-"+controller+".db"), "--listen", addr, "--log-level", "warn",
		"--dry-run=false", "--kube-api-qps=" + qps, "--kube-api-burst=" + qps, "--max-deletions-per-minute=0",
		"--controllers=" + controller, fmt.Sprintf("--gc-workers=%d", cfg.gcWorkers)}, extra...)
	profile := os.Getenv("KUBEGCD_BENCH_CPUPROFILE")
	if profile != "" {
		args = append(args, "--profiling")
	}
	d, err := testcluster.StartKubegcd(bin, filepath.Join(dir, "kubegcd-"+controller+".log"), args...)
	if err != nil {
		return nil, err
	}
	if profile != "" {
		go profileKubegcd(ctx, d, "http://"+addr, profile+"."+controller)
	}
	return func() error { return d.Stop(stopGrace) }, nil
}

// profileKubegcd writes a CPU profile of kubegcd's first seconds after it
// serves /healthz (KUBEGCD_BENCH_PROFILE_SECONDS, default 20), for tuning.
func profileKubegcd(ctx context.Context, d *testcluster.Kubegcd, url, path string) {
	if err := d.WaitReady(ctx, url+"/healthz", readyPoll, readyTimeout); err != nil {
		return
	}
	secs := os.Getenv("KUBEGCD_BENCH_PROFILE_SECONDS")
	if secs == "" {
		secs = "20"
	}
	if b, err := testcluster.HTTPGet(ctx, url+"/debug/pprof/profile?seconds="+secs); err == nil {
		_ = os.WriteFile(path, b, 0o644)
	}
}

// phaseResult is one contender's run.
type phaseResult struct {
	name       string
	first      time.Duration // start → first deletion (or patch)
	last       time.Duration // start → done
	writes     int
	cpu, cpCPU float64
}

// printPhaseResults prints the contenders' table and, with both, how much
// faster kubegcd converged.
func printPhaseResults(title, unit string, rs []phaseResult) {
	fmt.Printf("\n%s\n", title)
	fmt.Printf("%-26s %10s %10s %10s %14s %18s\n",
		"contender", "first s", "done s", unit, "own CPU s", "apiserver+etcd CPU s")
	for _, r := range rs {
		fmt.Printf("%-26s %10.2f %10.2f %10d %14.2f %18.2f\n",
			r.name, r.first.Seconds(), r.last.Seconds(), r.writes, r.cpu, r.cpCPU)
	}
	if len(rs) < 2 {
		return
	}
	k, u := rs[0], rs[1]
	ratio := u.last.Seconds() / k.last.Seconds()
	fmt.Printf("kubegcd converges %.2f× faster than kube-controller-manager (target ≥ %.1f×) %s\n",
		ratio, targetPodGCVsKCM, verdict(ratio >= targetPodGCVsKCM))
}

// runPodGC times, for kubegcd and then kube-controller-manager, how long it
// takes from the collector's start until only the threshold of n terminated
// pods remains.
func runPodGC(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	dir string) error {
	n := cfg.terminatedPods
	fmt.Printf("\n== PodGC: %s terminated pods, --terminated-pod-gc-threshold=%d; QPS/burst %d for both; "+
		"kubegcd --gc-workers=%d\n", countLabel(n), podgcThreshold, cfg.podgcQPS, cfg.gcWorkers)
	var results []phaseResult
	for _, c := range contenders(cfg, cluster, dir, "podgc", "pod-garbage-collector-controller") {
		ns := "podgc-" + c.proc
		if err := createTerminatedPods(ctx, kube, ns, n, cfg.workers); err != nil {
			return err
		}
		r, err := timePodGC(ctx, kube, ns, n, c)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	printPhaseResults(fmt.Sprintf("PodGC: %s terminated pods → %d (collector start → threshold reached)",
		countLabel(n), podgcThreshold), "deleted", results)
	return nil
}

// createTerminatedPods creates namespace ns with n pods in it that have
// ended: one in ten Failed (evicted), the others Succeeded.
func createTerminatedPods(ctx context.Context, kube kubernetes.Interface, ns string, n, workers int) error {
	if err := createNamespace(ctx, kube, ns); err != nil {
		return err
	}
	if err := createDefaultServiceAccount(ctx, kube, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	begin := time.Now()
	c := &creator{kube: kube, workers: workers}
	err := c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		p, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("done-%06d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = corev1.PodSucceeded
		if i%10 == 0 {
			p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Evicted"
		}
		_, err = kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("  %s: created %d terminated pods in %s\n", ns, n, time.Since(begin).Round(time.Millisecond))
	return nil
}

// timePodGC starts contender c and times it deleting the terminated pods
// of ns down to the threshold.
func timePodGC(ctx context.Context, kube kubernetes.Interface, ns string, n int, c contender) (
	r phaseResult, err error) {
	r.name = c.name
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return r, err
	}
	lastRV := list.ResourceVersion
	w, err := kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV})
	if err != nil {
		return r, err
	}
	defer func() { w.Stop() }()
	cpu0, cp0 := cpuOf(c.proc), cpuOf("kube-apiserver")+cpuOf("etcd")
	t0 := time.Now()
	stop, err := c.start(ctx, "--terminated-pod-gc-threshold="+strconv.Itoa(podgcThreshold))
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	want := n - podgcThreshold
	deadline := time.After(podgcTimeout)
	for r.writes < want {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				w.Stop()
				if w, err = kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV}); err != nil {
					return r, fmt.Errorf("%s: rewatch after %d deletions: %w", ns, r.writes, err)
				}
				continue
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			lastRV = p.ResourceVersion
			if ev.Type == watch.Deleted {
				r.writes++
				if r.writes == 1 {
					r.first = time.Since(t0)
				}
			}
		case <-deadline:
			return r, fmt.Errorf("%s: %s deleted only %d of %d pods in %s", ns, c.name, r.writes, want, podgcTimeout)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.last = time.Since(t0)
	r.cpu, r.cpCPU = cpuOf(c.proc)-cpu0, cpuOf("kube-apiserver")+cpuOf("etcd")-cp0
	fmt.Printf("  %s: first pod deleted after %s, %d deleted after %s\n",
		c.name, r.first.Round(time.Millisecond), r.writes, r.last.Round(time.Millisecond))
	return r, nil
}

// runTTL times, for kubegcd and then kube-controller-manager, how long it
// takes from the controller's start until every one of ttlNodes nodes
// carries the TTL of their band, and counts the patches sent.
func runTTL(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	dir string) error {
	fmt.Printf("\n== TTL: %s nodes without the annotation; QPS/burst %d for both\n", countLabel(ttlNodes), cfg.podgcQPS)
	var results []phaseResult
	for _, c := range contenders(cfg, cluster, dir, "ttl", "ttl-controller") {
		if err := setBenchNodes(ctx, kube, ttlNodes, cfg.workers); err != nil {
			return err
		}
		r, err := timeTTL(ctx, kube, c)
		if err != nil {
			return err
		}
		results = append(results, r)
		if err := setBenchNodes(ctx, kube, 0, cfg.workers); err != nil {
			return err
		}
	}
	printPhaseResults(fmt.Sprintf("TTL: %s nodes → all annotated %ss (controller start → done)",
		countLabel(ttlNodes), ttlWant), "patches", results)
	return nil
}

// setBenchNodes creates or deletes nodes bench-node-… until n exist.
func setBenchNodes(ctx context.Context, kube kubernetes.Interface, n, workers int) error {
	have, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	c := &creator{kube: kube, workers: workers}
	var idx []int
	for i := range max(n, len(have.Items)) {
		idx = append(idx, i)
	}
	return c.parallel(ctx, idx, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("bench-node-%05d", i)
		if i < n {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
			_, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}
		if err := kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
}

// timeTTL starts contender c and times it annotating every node with the
// TTL of their band.
func timeTTL(ctx context.Context, kube kubernetes.Interface, c contender) (r phaseResult, err error) {
	r.name = c.name
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, err
	}
	lastRV := list.ResourceVersion
	have := map[string]string{}
	for _, n := range list.Items {
		have[n.Name] = n.Annotations[corev1.ObjectTTLAnnotationKey]
	}
	w, err := kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV})
	if err != nil {
		return r, err
	}
	defer func() { w.Stop() }()
	right := func() int {
		k := 0
		for _, v := range have {
			if v == ttlWant {
				k++
			}
		}
		return k
	}
	cpu0, cp0 := cpuOf(c.proc), cpuOf("kube-apiserver")+cpuOf("etcd")
	t0 := time.Now()
	stop, err := c.start(ctx)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	deadline := time.After(podgcTimeout)
	for right() < len(have) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				w.Stop()
				if w, err = kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV}); err != nil {
					return r, err
				}
				continue
			}
			n, isNode := ev.Object.(*corev1.Node)
			if !isNode || ev.Type != watch.Modified {
				continue
			}
			lastRV = n.ResourceVersion
			if v := n.Annotations[corev1.ObjectTTLAnnotationKey]; v != have[n.Name] {
				r.writes++
				if r.writes == 1 {
					r.first = time.Since(t0)
				}
				have[n.Name] = v
			}
		case <-deadline:
			return r, fmt.Errorf("%s: %d of %d nodes right after %s", c.name, right(), len(have), podgcTimeout)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.last = time.Since(t0)
	r.cpu, r.cpCPU = cpuOf(c.proc)-cpu0, cpuOf("kube-apiserver")+cpuOf("etcd")-cp0
	fmt.Printf("  %s: first patch after %s, all %d nodes at %ss after %s, %d patches\n",
		c.name, r.first.Round(time.Millisecond), len(have), ttlWant, r.last.Round(time.Millisecond), r.writes)
	return r, nil
}
