package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// Targets of the ownership-GC benchmark.
const (
	targetVsKCM       = 1.5
	targetVsRaw       = 0.8
	targetFirstDelete = 500 * time.Millisecond
	gcTimeout         = 10 * time.Minute
)

// gcResult is one contender's collection of n dependents.
type gcResult struct {
	name string
	// CPU seconds spent during the collection by the contender and by the
	// control plane (kube-apiserver + etcd).
	cpu, controlPlaneCPU float64
	first                time.Duration // owner deleted → first dependent gone
	last                 time.Duration // owner deleted → last dependent gone
	n                    int
}

func (r gcResult) rate() float64 { return float64(r.n) / r.last.Seconds() }

// runOwnerGC times the collection of n dependents of one owner by kubegcd,
// by raw parallel client deletes and by kube-controller-manager, one after
// the other on one control plane, at the same API rate limits.
func runOwnerGC(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface, dir string) error {
	n := cfg.dependents
	fmt.Printf("\n== ownership GC: %s dependents of one owner; QPS/burst 5000 for all; kubegcd --gc-workers=%d, "+
		"kube-controller-manager --concurrent-gc-syncs=%d, raw deletes %d workers\n", countLabel(n), cfg.gcWorkers, cfg.workers, cfg.workers)
	var results []gcResult

	bin, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}
	workers := cfg.workers
	r, err := gcContender(ctx, kube, "gc-kubegcd", "kubegcd", n, cfg.workers, func(ctx context.Context, owner *corev1.ConfigMap) (func() error, error) {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		d, err := testcluster.StartKubegcd(bin, filepath.Join(dir, "kubegcd-gc.log"),
			"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, "kubegcd-gc.db"), "--listen", addr,
			"--log-level", "warn", "--dry-run=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
			"--max-deletions-per-minute=0", "--controllers=ownergc", "--profiling", fmt.Sprintf("--gc-workers=%d", cfg.gcWorkers))
		if err != nil {
			return nil, err
		}
		if err := d.WaitReady(ctx, "http://"+addr+"/readyz", readyPoll, readyTimeout); err != nil {
			return nil, errors.Join(err, d.Stop(stopGrace))
		}
		if path := os.Getenv("KUBEGCD_BENCH_CPUPROFILE"); path != "" {
			// Profile kubegcd while it collects, for tuning.
			go func() {
				if b, err := testcluster.HTTPGet(ctx, "http://"+addr+"/debug/pprof/profile?seconds=4"); err == nil {
					_ = os.WriteFile(path, b, 0o644)
				}
			}()
		}
		return func() error { return d.Stop(stopGrace) }, nil
	}, deleteOwner(kube))
	if err != nil {
		return err
	}
	results = append(results, r)

	r, err = gcContender(ctx, kube, "gc-raw", "bench", n, cfg.workers, nil, func(ctx context.Context, owner *corev1.ConfigMap) error {
		return rawDeletes(ctx, kube, owner.Namespace, cfg.workers)
	})
	// The watch of this process lags while its own 32 workers delete, so
	// raw deletes are timed by the calls: the last one returned is the end.
	r.last, r.first = rawLast, rawFirst
	if err != nil {
		return err
	}
	r.name = fmt.Sprintf("raw deletes (%d workers)", cfg.workers)
	results = append(results, r)

	r, err = gcContender(ctx, kube, "gc-kcm", "kube-controller-manager", n, cfg.workers, func(ctx context.Context, owner *corev1.ConfigMap) (func() error, error) {
		stop, err := cluster.StartControllerManager(ctx, "--controllers=garbagecollector", "--kube-api-qps=5000", "--kube-api-burst=5000",
			fmt.Sprintf("--concurrent-gc-syncs=%d", workers))
		if err != nil {
			return nil, err
		}
		logPath, err := lastLog(cluster.Dir, "controller-manager")
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		for !fileContains(logPath, kcmSyncedLog) {
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return nil, errors.Join(err, stop())
			}
		}
		return stop, nil
	}, deleteOwner(kube))
	if err != nil {
		return err
	}
	r.name = "kube-controller-manager"
	results = append(results, r)
	results[0].name = "kubegcd"

	fmt.Printf("\nOwnership GC: %s dependents of one owner, owner deleted (background) → last dependent gone\n", countLabel(n))
	fmt.Printf("%-28s %10s %10s %12s %14s %18s\n", "contender", "first s", "last s", "deletions/s", "own CPU ms/del",
		"apiserver+etcd ms/del")
	for _, r := range results {
		fmt.Printf("%-28s %10.3f %10.2f %12.0f %14.2f %18.2f\n", r.name, r.first.Seconds(), r.last.Seconds(), r.rate(),
			1000*r.cpu/float64(r.n), 1000*r.controlPlaneCPU/float64(r.n))
	}
	k, raw, kcm := results[0], results[1], results[2]
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Printf("kubegcd vs kube-controller-manager: %.2f× (target ≥ %.1f×) %s\n", k.rate()/kcm.rate(), targetVsKCM, verdict(k.rate() >= targetVsKCM*kcm.rate()))
	fmt.Printf("kubegcd vs raw deletes:             %.2f× (target ≥ %.1f×) %s\n", k.rate()/raw.rate(), targetVsRaw, verdict(k.rate() >= targetVsRaw*raw.rate()))
	fmt.Printf("kubegcd first deletion after %s (target ≤ %s) %s\n", k.first.Round(time.Millisecond), targetFirstDelete, verdict(k.first <= targetFirstDelete))
	return nil
}

// cpuOf returns the CPU seconds used so far by the processes named name
// ("bench" is this process).
func cpuOf(name string) float64 {
	if name == "bench" {
		name = filepath.Base(os.Args[0])
	}
	t, _ := cpuTicks(name)
	return float64(t) / 100
}

func deleteOwner(kube kubernetes.Interface) func(context.Context, *corev1.ConfigMap) error {
	return func(ctx context.Context, owner *corev1.ConfigMap) error {
		bg := metav1.DeletePropagationBackground
		return kube.CoreV1().ConfigMaps(owner.Namespace).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	}
}

// gcContender creates an owner and n dependents in namespace ns, starts the
// contender, then runs act and times the dependents' deletions from a watch.
func gcContender(ctx context.Context, kube kubernetes.Interface, ns, proc string, n, workers int,
	start func(context.Context, *corev1.ConfigMap) (stop func() error, err error),
	act func(context.Context, *corev1.ConfigMap) error) (r gcResult, err error) {
	r.n = n
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	owner, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		return r, err
	}
	begin := time.Now()
	c := &creator{kube: kube, workers: workers}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if err := c.parallel(ctx, idx, func(ctx context.Context, i int) error {
		_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("dep-%06d", i),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
		}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return r, err
	}
	fmt.Printf("  %s: created %d dependents in %s\n", ns, n, time.Since(begin).Round(time.Millisecond))

	if start != nil {
		stop, err := start(ctx, owner)
		if err != nil {
			return r, err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}

	list, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return r, err
	}
	lastRV := list.ResourceVersion
	w, err := kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV})
	if err != nil {
		return r, err
	}
	defer func() { w.Stop() }()

	cpu0, cp0 := cpuOf(proc), cpuOf("kube-apiserver")+cpuOf("etcd")
	t0 := time.Now()
	if err := act(ctx, owner); err != nil {
		return r, err
	}
	deadline := time.After(gcTimeout)
	gone := 0
	for gone < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				// The API server drops a watcher that falls behind; pick up
				// where it stopped.
				w.Stop()
				if w, err = kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV}); err != nil {
					return r, fmt.Errorf("%s: rewatch after %d of %d deletions: %w", ns, gone, n, err)
				}
				continue
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				continue
			}
			lastRV = cm.ResourceVersion
			if ev.Type == watch.Deleted && cm.Name != owner.Name {
				gone++
				if gone == 1 {
					r.first = time.Since(t0)
				}
			}
		case <-deadline:
			return r, fmt.Errorf("%s: only %d of %d dependents gone after %s", ns, gone, n, gcTimeout)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.last = time.Since(t0)
	r.cpu, r.controlPlaneCPU = cpuOf(proc)-cpu0, cpuOf("kube-apiserver")+cpuOf("etcd")-cp0
	r.name = ns
	fmt.Printf("  %s: first dependent gone after %s, last after %s (%.0f/s)\n", ns, r.first.Round(time.Millisecond),
		r.last.Round(time.Millisecond), r.rate())
	return r, nil
}

// rawFirst and rawLast time rawDeletes from its start to its first and
// last completed delete.
var rawFirst, rawLast time.Duration

// rawDeletes deletes every dependent in ns with parallel clients: the
// floor any collector works against.
func rawDeletes(ctx context.Context, kube kubernetes.Interface, ns string, workers int) error {
	var names []string
	cont := ""
	for {
		l, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 5000, Continue: cont})
		if err != nil {
			return err
		}
		for _, cm := range l.Items {
			if len(cm.OwnerReferences) > 0 {
				names = append(names, cm.Name)
			}
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	t0 := time.Now() // after listing: only the deletions are timed
	var firstOnce sync.Once
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(names) {
					return
				}
				if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, names[i], metav1.DeleteOptions{}); err != nil {
					errs <- err
					return
				}
				firstOnce.Do(func() { rawFirst = time.Since(t0) })
			}
		})
	}
	wg.Wait()
	rawLast = time.Since(t0)
	close(errs)
	return <-errs
}
