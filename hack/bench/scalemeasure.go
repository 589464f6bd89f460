package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

const (
	// scaleReadyTimeout bounds kubegcd's initial sync. Under heartbeats it
	// took over 5 minutes (readyTimeout) in the first full run.
	scaleReadyTimeout = 15 * time.Minute
	scaleSample       = 30 * time.Second
	cascadeTimeout    = 10 * time.Minute
)

// startKubegcd runs kubegcd, enforcing, with its default controllers. It
// times kubegcd's initial sync and returns it with its base URL.
func (s *scaleRun) startKubegcd(ctx context.Context, bin string) (*testcluster.Kubegcd, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	r := &s.r
	base := "http://" + addr
	begin := time.Now()
	d, err := testcluster.StartKubegcd(bin, filepath.Join(s.dir, "kubegcd-scale.log"),
		"run", "--kubeconfig", s.cluster.Kubeconfig, "--db", s.dbPath(), "--listen", addr,
		"--log-level", "warn", "--dry-run=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
		"--max-deletions-per-minute=0", "--profiling", fmt.Sprintf("--gc-workers=%d", s.sc.gcWorkers))
	if err != nil {
		return nil, "", err
	}
	if err := d.WaitReady(ctx, base+"/readyz", readyPoll, scaleReadyTimeout); err != nil {
		return nil, "", errors.Join(err, d.Stop(stopGrace))
	}
	r.sync = time.Since(begin)
	st, err := testcluster.GetKubegcdStatus(ctx, base)
	if err != nil {
		return nil, "", errors.Join(err, d.Stop(stopGrace))
	}
	r.objects = st.Objects
	if err := sleep(ctx, settleDelay); err != nil {
		return nil, "", errors.Join(err, d.Stop(stopGrace))
	}
	return d, base, nil
}

// startScaleKCM runs kube-controller-manager with kubegcd's counterparts
// and returns its stop function and its process.
func startScaleKCM(ctx context.Context, cluster *testcluster.Cluster) (func() error, int, error) {
	stop, err := cluster.StartControllerManager(ctx, kcmScaleControllers,
		"--kube-api-qps=5000", "--kube-api-burst=5000",
		"--feature-gates=StorageVersionAPI=true,APIServerIdentity=true")
	if err != nil {
		return nil, 0, err
	}
	pid, err := findProcess("kube-controller-manager", "--kubeconfig="+cluster.Kubeconfig)
	if err != nil {
		return nil, 0, errors.Join(err, stop())
	}
	return stop, pid, nil
}

// kcmProceedLog is what kube-controller-manager's garbage collector logs
// when it gives up waiting for its monitors and starts with what it has.
// At this size it does so, after 15 s in the first full run, and never
// logs kcmSyncedLog.
const kcmProceedLog = "not all resource monitors could be synced, proceeding anyways"

// waitKCMSynced waits for the newest kube-controller-manager's garbage
// collector to have synced its monitors, or to have started without.
func waitKCMSynced(ctx context.Context, cluster *testcluster.Cluster) error {
	logPath, err := lastLog(cluster.Dir, "controller-manager")
	if err != nil {
		return err
	}
	return pollUntil(ctx, readyTimeout, func() (bool, error) {
		return fileContains(logPath, kcmSyncedLog) || fileContains(logPath, kcmProceedLog), nil
	})
}

// settledRSS waits until pid's RSS grows by less than kcmGrowth in
// kcmStable, and returns it.
func settledRSS(ctx context.Context, pid int) (uint64, error) {
	return settledRSSFor(ctx, pid, kcmStable)
}

// settledRSSFor waits until pid's RSS grows by less than kcmGrowth in
// stable, and returns it.
func settledRSSFor(ctx context.Context, pid int, stable time.Duration) (uint64, error) {
	var anchor uint64
	var anchorAt time.Time
	deadline := time.Now().Add(kcmTimeout)
	for {
		m, err := rssOf(pid)
		if err != nil {
			return 0, err
		}
		now := time.Now()
		if anchorAt.IsZero() || m > anchor+kcmGrowth {
			anchor, anchorAt = m, now
		}
		if now.Sub(anchorAt) >= stable || now.After(deadline) {
			return m, nil
		}
		if err := sleep(ctx, kcmPoll); err != nil {
			return 0, err
		}
	}
}

// settledCPU waits until pid uses less than cpuSettled of a core over
// cpuWindow, and returns how long that took (at most cpuSettleTimeout).
func settledCPU(ctx context.Context, pid int) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < cpuSettleTimeout {
		before := procCPU(pid)
		if err := sleep(ctx, cpuWindow); err != nil {
			return 0, err
		}
		if 100*(procCPU(pid)-before)/cpuWindow.Seconds() < cpuSettled {
			break
		}
	}
	return time.Since(start), nil
}

const (
	cpuWindow        = 10 * time.Second
	cpuSettled       = 15.0 // % of one core
	cpuSettleTimeout = 5 * time.Minute
)

// dbSize is the database's size on disk, its write-ahead log included.
func dbSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}

// heartbeatPeriod lets the cluster's heartbeats run for d with kubegcd
// and kube-controller-manager watching, sampling both processes' RSS and
// measuring their CPU.
func heartbeatPeriod(ctx context.Context, d time.Duration, pid, kcmPid int, base string, r *scaleResult) error {
	fmt.Printf("  heartbeats for %s\n", d)
	leases0, nodes0, err := modifiedEvents(ctx, base)
	if err != nil {
		return err
	}
	cpu0, kcmCPU0 := procCPU(pid), procCPU(kcmPid)
	if r.rssStart, err = rssOf(pid); err != nil {
		return fmt.Errorf("kubegcd: %w", err)
	}
	r.rssMax, r.kcmRSSMax = max(r.rssSynced, r.rssStart), r.kcmRSSSynced
	r.pssMax = r.memSynced.PSS
	start := time.Now()
	profiling, stopProfiling := context.WithCancel(ctx)
	defer stopProfiling()
	if path := os.Getenv("KUBEGCD_BENCH_CPUPROFILE"); path != "" {
		go profileWindows(profiling, base, path)
	}
	lastCPU, lastAt := cpu0, start
	for {
		left := d - time.Since(start)
		if err := sleep(ctx, min(scaleSample, max(left, 0))); err != nil {
			return err
		}
		mem, err := readMemory(pid)
		if err != nil {
			return fmt.Errorf("kubegcd: %w", err)
		}
		m := mem.RSS
		r.memEnd = mem
		r.pssMax = max(r.pssMax, mem.PSS)
		k, err := rssOf(kcmPid)
		if err != nil {
			return fmt.Errorf("kube-controller-manager: %w", err)
		}
		r.rssEnd, r.kcmRSSEnd = m, k
		r.rssMax, r.kcmRSSMax = max(r.rssMax, m), max(r.kcmRSSMax, k)
		c, now := procCPU(pid), time.Now()
		fmt.Printf("    %4.0fs: kubegcd RSS %.1f MB (PSS %.1f), CPU %.1f %%; kube-controller-manager RSS %.1f MB\n",
			time.Since(start).Seconds(), mb(m), mb(mem.PSS), 100*(c-lastCPU)/now.Sub(lastAt).Seconds(), mb(k))
		lastCPU, lastAt = c, now
		if time.Since(start) >= d {
			break
		}
	}
	r.period = time.Since(start)
	r.cpu = 100 * (procCPU(pid) - cpu0) / r.period.Seconds()
	r.kcmCPU = 100 * (procCPU(kcmPid) - kcmCPU0) / r.period.Seconds()
	leases1, nodes1, err := modifiedEvents(ctx, base)
	if err != nil {
		return err
	}
	r.leaseRenewals, r.nodeUpdates = leases1-leases0, nodes1-nodes0
	return printRulePasses(ctx, base)
}

// printRulePasses prints each rule's last pass: the passes recur through
// the heartbeats, and their share of kubegcd's CPU shows in the samples.
func printRulePasses(ctx context.Context, base string) error {
	list, err := getRules(ctx, base)
	if err != nil {
		return err
	}
	fmt.Printf("  last pass of each rule:")
	for _, r := range list.Items {
		if p := r.LastPass; p != nil {
			fmt.Printf(" %s %.0f ms (%d matches);", r.ID, 1000*p.DurationSeconds, p.Matches)
		}
	}
	fmt.Println()
	return nil
}

// profileWindows writes CPU profiles of kubegcd to path.0, path.1, ...
// until ctx ends, each over the next 25 s (HTTPGet waits 30 s at most).
// A burst within the heartbeat period can then be read on its own
// (KUBEGCD_BENCH_CPUPROFILE).
func profileWindows(ctx context.Context, base, path string) {
	for i := 0; ctx.Err() == nil; i++ {
		b, err := testcluster.HTTPGet(ctx, base+"/debug/pprof/profile?seconds=25")
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "  profile %d: %v\n", i, err)
			}
			return
		}
		_ = os.WriteFile(fmt.Sprintf("%s.%d", path, i), b, 0o644)
	}
}

// modifiedEvents reads from kubegcd's /metrics how many Lease and Node
// updates it has mirrored.
func modifiedEvents(ctx context.Context, base string) (leases, nodes float64, err error) {
	body, err := testcluster.HTTPGet(ctx, base+"/metrics")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "kubegcd_ingest_events_total{") || !strings.Contains(line, `type="modified"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		switch {
		case strings.Contains(line, `resource="coordination.k8s.io/leases"`):
			leases = v
		case strings.Contains(line, `resource="nodes"`):
			nodes = v
		}
	}
	return leases, nodes, sc.Err()
}

// timeCascade deletes the Deployments of the cascade namespace ns with
// background propagation, as kubectl delete does. It times the owners'
// deletion to the first and to the last of their pods gone.
func timeCascade(ctx context.Context, kube kubernetes.Interface, ns string, sc scaleConfig) (
	first, last time.Duration, err error) {
	pods := kube.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	left := map[string]bool{}
	for _, p := range list.Items {
		left[p.Name] = true
	}
	if len(left) != sc.cascadePods {
		return 0, 0, fmt.Errorf("%d pods in %s, want %d", len(left), ns, sc.cascadePods)
	}
	rv := list.ResourceVersion
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return 0, 0, err
	}
	defer func() { w.Stop() }()
	deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	c := &creator{kube: kube, workers: len(deps.Items)}
	bg := metav1.DeletePropagationBackground
	if err := c.parallel(ctx, seq(len(deps.Items)), func(ctx context.Context, i int) error {
		return kube.AppsV1().Deployments(ns).Delete(ctx, deps.Items[i].Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	}); err != nil {
		return 0, 0, err
	}
	deadline := time.After(cascadeTimeout)
	for len(left) > 0 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				w.Stop()
				if w, err = pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv}); err != nil {
					return 0, 0, fmt.Errorf("rewatch with %d pods left: %w", len(left), err)
				}
				continue
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod {
				continue
			}
			rv = p.ResourceVersion
			if ev.Type == watch.Deleted && left[p.Name] {
				delete(left, p.Name)
				if first == 0 {
					first = time.Since(t0)
				}
			}
		case <-deadline:
			return 0, 0, fmt.Errorf("%d of %d pods left after %s", len(left), sc.cascadePods, cascadeTimeout)
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	last = time.Since(t0)
	fmt.Printf("    first pod gone after %s, last after %s (%.0f pods/s)\n", first.Round(time.Millisecond),
		last.Round(time.Millisecond), float64(sc.cascadePods)/last.Seconds())
	return first, last, nil
}
