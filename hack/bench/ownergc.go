package main

import (
	"cmp"
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
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// Targets of the ownership-GC benchmark (docs/benchmarks.md), each at every size:
// deletions/s against raw deletes by an unthrottled client and against
// kube-controller-manager, the control plane's CPU per deletion against
// the raw client's, and the owner's deletion → kubegcd's first deletion.
const (
	targetVsKCM       = 1.8
	targetVsRaw       = 0.9
	targetCPVsRaw     = 1.1
	targetFirstDelete = 500 * time.Millisecond
	gcTimeout         = 10 * time.Minute
	// gcQPS is the client-side limit of both collectors: high enough that
	// the API server, not the client, sets the pace.
	gcQPS = 5000
)

// gcResult is one contender's collection of n dependents.
type gcResult struct {
	name string
	// column names the contender in the accounting table ("" for
	// columnName's default).
	column string
	// CPU seconds spent during the collection by the contender, by
	// kube-apiserver and by etcd.
	cpu, apiserverCPU, etcdCPU float64
	first                      time.Duration // owner deleted → first dependent gone
	last                       time.Duration // owner deleted → last dependent gone
	n                          int
	// api is what kube-apiserver's own metrics counted over the
	// collection (nil if they could not be read).
	api apiCounts
}

func (r gcResult) rate() float64 { return float64(r.n) / r.last.Seconds() }

// msPer returns cpu seconds in milliseconds per deleted object.
func (r gcResult) msPer(cpu float64) float64 { return 1000 * cpu / float64(r.n) }

// controlPlaneMs is the CPU of kube-apiserver and etcd per deleted object,
// in milliseconds.
func (r gcResult) controlPlaneMs() float64 { return r.msPer(r.apiserverCPU + r.etcdCPU) }

// gcWindow is what gcContender measures besides the deletions: the
// control plane's own metrics and, if profile is set, a CPU profile of
// kube-apiserver over the collection's first profileSeconds.
type gcWindow struct {
	cp                    *controlPlane
	etcdPID, apiserverPID int
	// ownPID returns the contender's process once it runs.
	ownPID         func() (int, error)
	pin            *pinning
	profile        string
	profileSeconds int
}

// runOwnerGC times, at each size, the collection of n dependents of one
// owner by kubegcd, by each of cfg.raw's raw parallel client deletes and by
// kube-controller-manager, one after the other on one control plane. Both
// collectors run with QPS/burst gcQPS and their default workers. The raw
// reference is the API server's own limit: goroutines on a client with no
// client-side rate limit at all, unless paced to kubegcd's rate.
func runOwnerGC(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface, dir string) error {
	rawCfg := rest.CopyConfig(cluster.Config)
	rawCfg.QPS = -1 // client-go builds no rate limiter for a negative QPS
	raw, err := kubernetes.NewForConfig(rawCfg)
	if err != nil {
		return err
	}
	bin, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}
	cp, err := newControlPlane(cluster.Config)
	if err != nil {
		return err
	}
	etcdPID, apiserverPID, err := clusterPIDs(cluster)
	if err != nil {
		return err
	}
	if cfg.cpProfiles != "" {
		if err := os.MkdirAll(cfg.cpProfiles, 0o755); err != nil {
			return err
		}
	}
	for i, n := range cfg.dependents {
		// kube-apiserver is profiled at the first size only: the kubegcd
		// run and each raw run.
		profiles := ""
		if i == 0 {
			profiles = cfg.cpProfiles
		}
		w := gcWindow{cp: cp, etcdPID: etcdPID, apiserverPID: apiserverPID, pin: cfg.pin, profileSeconds: cfg.cpProfileSeconds}
		if err := ownerGCAt(ctx, cfg, cluster, kube, raw, bin, dir, n, w, profiles); err != nil {
			return err
		}
	}
	return nil
}

func ownerGCAt(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube, raw kubernetes.Interface, bin, dir string, n int,
	base gcWindow, profiles string) error {
	size := countLabel(n)
	nsSize := namespaceSize(n)
	fmt.Printf("\n== ownership GC: %s dependents of one owner; kubegcd and kube-controller-manager at QPS/burst %d with their default "+
		"workers (--gc-workers, --concurrent-gc-syncs); raw deletes: %s\n", size, gcQPS, rawSummary(cfg.raw))
	if len(cfg.kubegcdArgs) > 0 {
		fmt.Printf("   kubegcd run with the extra arguments %s\n", strings.Join(cfg.kubegcdArgs, " "))
	}
	meta, err := metadata.NewForConfig(cluster.Config)
	if err != nil {
		return err
	}
	var results []gcResult
	qps := fmt.Sprint(gcQPS)
	// window measures a contender's process, found by ownPID, and profiles
	// kube-apiserver if profile is set.
	window := func(profile string, ownPID func() (int, error)) gcWindow {
		w := base
		w.ownPID = ownPID
		if profiles != "" && profile != "" {
			w.profile = filepath.Join(profiles, fmt.Sprintf("kube-apiserver-%s-%s.pprof", profile, size))
		}
		return w
	}
	var (
		kubegcdPID int
		readyAt    time.Time
	)

	// startKubegcd runs a kubegcd that enforces the ownership GC, pinned
	// with the clients, and waits for its /readyz; name tells its database
	// and log apart.
	startKubegcd := func(ctx context.Context, name string) (*testcluster.Kubegcd, string, error) {
		addr, err := freeAddr()
		if err != nil {
			return nil, "", err
		}
		args := []string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, fmt.Sprintf("%s-%d.db", name, n)), "--listen", addr,
			"--log-level", "warn", "--dry-run=false", "--kube-api-qps=" + qps, "--kube-api-burst=" + qps,
			"--max-deletions-per-minute=0", "--controllers=ownergc", "--profiling"}
		d, err := testcluster.StartKubegcd(bin, filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, n)), append(args, cfg.kubegcdArgs...)...)
		if err != nil {
			return nil, "", err
		}
		if err := base.pin.pinClient("kubegcd", d.Pid()); err != nil {
			return nil, "", errors.Join(err, d.Stop(stopGrace))
		}
		if err := d.WaitReady(ctx, "http://"+addr+"/readyz", readyPoll, readyTimeout); err != nil {
			return nil, "", errors.Join(err, d.Stop(stopGrace))
		}
		return d, addr, nil
	}

	r, err := gcContender(ctx, kube, "gc-kubegcd-"+nsSize, n, cfg.workers, window("kubegcd", func() (int, error) { return kubegcdPID, nil }), func(ctx context.Context, owner *corev1.ConfigMap) (func() error, error) {
		d, addr, err := startKubegcd(ctx, "kubegcd-gc")
		if err != nil {
			return nil, err
		}
		kubegcdPID = d.Pid()
		readyAt = time.Now()
		if path := os.Getenv("KUBEGCD_BENCH_CPUPROFILE"); path != "" {
			// Profile kubegcd while it collects, for tuning; one file per
			// size, over KUBEGCD_BENCH_CPUPROFILE_SECONDS (default 4).
			path = strings.ReplaceAll(path, "%n", size)
			seconds := cmp.Or(os.Getenv("KUBEGCD_BENCH_CPUPROFILE_SECONDS"), "4")
			go func() {
				if b, err := testcluster.HTTPGet(ctx, "http://"+addr+"/debug/pprof/profile?seconds="+seconds); err == nil {
					_ = os.WriteFile(path, b, 0o644)
				}
			}()
		}
		if path := os.Getenv("KUBEGCD_BENCH_GOROUTINES"); path != "" {
			// Where kubegcd's goroutines wait during the collection, for
			// tuning: twenty dumps half a second apart, from --owner-delay
			// plus 1 s after /readyz; %i in the path numbers them.
			path = strings.ReplaceAll(path, "%n", size)
			go func() {
				if sleep(ctx, cfg.ownerDelay+time.Second) != nil {
					return
				}
				for i := range 20 {
					if b, err := testcluster.HTTPGet(ctx, "http://"+addr+"/debug/pprof/goroutine?debug=1"); err == nil {
						_ = os.WriteFile(strings.ReplaceAll(path, "%i", fmt.Sprint(i)), b, 0o644)
					}
					if sleep(ctx, 500*time.Millisecond) != nil {
						return
					}
				}
			}()
		}
		return func() error {
			// The collection is over: what the writer did. Scraped only
			// now: a scrape computes the object counts, which would compete
			// with the collection's start.
			m, err := scrapeMetrics(ctx, "http://"+addr)
			if err == nil {
				writerReport(m)
			}
			return errors.Join(err, d.Stop(stopGrace))
		}, nil
	}, func(ctx context.Context, owner *corev1.ConfigMap, begin func()) error {
		// The owner goes --owner-delay after /readyz, while kubegcd's
		// start-up pass may still run; first is timed from its deletion.
		if err := sleep(ctx, time.Until(readyAt.Add(cfg.ownerDelay))); err != nil {
			return err
		}
		return deleteOwner(kube)(ctx, owner, begin)
	})
	if err != nil {
		return err
	}
	r.name = "kubegcd"
	results = append(results, r)
	kubegcdRate := r.rate()

	for i, c := range cfg.raw {
		limiter, err := c.limiter(kubegcdRate, clock.RealClock{})
		if err != nil {
			return err
		}
		// The first raw contender keeps the profile's historical name.
		profile := "raw"
		if i > 0 {
			profile = "raw-" + c.slug()
		}
		var beside func(context.Context, *corev1.ConfigMap) (func() error, error)
		if c.beside {
			beside = func(ctx context.Context, _ *corev1.ConfigMap) (func() error, error) {
				d, _, err := startKubegcd(ctx, "kubegcd-beside")
				if err != nil {
					return nil, err
				}
				return func() error { return d.Stop(stopGrace) }, nil
			}
		}
		var first, last time.Duration
		r, err := gcContender(ctx, kube, "gc-raw-"+c.slug()+"-"+nsSize, n, cfg.workers, window(profile, func() (int, error) { return os.Getpid(), nil }), beside,
			func(ctx context.Context, owner *corev1.ConfigMap, begin func()) (err error) {
				if c.watched {
					stop, err := watchAll(ctx, meta)
					if err != nil {
						return err
					}
					defer stop()
				}
				var exact metadata.Interface
				if c.exact {
					noLimit := rest.CopyConfig(cluster.Config)
					noLimit.QPS = -1
					if exact, err = reconcile.NewMetadataClient(noLimit); err != nil {
						return err
					}
				}
				first, last, err = rawDeletes(ctx, raw, exact, owner.Namespace, c.workers, limiter, begin)
				return err
			})
		if err != nil {
			return err
		}
		// The watch of this process lags while its own workers delete, so
		// raw deletes are timed by the calls: the last one returned is the
		// end.
		r.first, r.last = first, last
		r.name, r.column = c.name(kubegcdRate), c.column()
		results = append(results, r)
	}

	kcmPID := func() (int, error) { return findProcess("kube-controller-manager", "--kubeconfig="+cluster.Kubeconfig) }
	r, err = gcContender(ctx, kube, "gc-kcm-"+nsSize, n, cfg.workers, window("", kcmPID), func(ctx context.Context, owner *corev1.ConfigMap) (func() error, error) {
		stop, err := cluster.StartControllerManager(ctx, "--controllers=garbagecollector", "--kube-api-qps="+qps, "--kube-api-burst="+qps)
		if err != nil {
			return nil, err
		}
		if base.pin != nil {
			pid, err := kcmPID()
			if err == nil {
				err = base.pin.pinClient("kube-controller-manager", pid)
			}
			if err != nil {
				return nil, errors.Join(err, stop())
			}
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

	pinned := ""
	if cfg.pin != nil {
		pinned = fmt.Sprintf("; etcd and kube-apiserver pinned to CPU %d, the rest to CPU %d", cfg.pin.controlPlane, cfg.pin.clients)
	}
	delayed := ""
	if cfg.ownerDelay > 0 {
		delayed = fmt.Sprintf("; kubegcd's owner deleted %s after its /readyz", cfg.ownerDelay)
	}
	fmt.Printf("\nOwnership GC: %s dependents of one owner, owner deleted (background) → last dependent gone%s%s\n", size, pinned, delayed)
	fmt.Println("CPU per deletion in ms, over the deletions alone (raw: after its list)")
	fmt.Printf("%-38s %8s %8s %12s %8s %10s %8s %14s\n", "contender", "first s", "last s", "deletions/s", "own CPU",
		"apiserver", "etcd", "control plane")
	for _, r := range results {
		fmt.Printf("%-38s %8.3f %8.2f %12.0f %8.2f %10.2f %8.2f %14.2f\n", r.name, r.first.Seconds(), r.last.Seconds(), r.rate(),
			r.msPer(r.cpu), r.msPer(r.apiserverCPU), r.msPer(r.etcdCPU), r.controlPlaneMs())
	}
	fmt.Println()
	accountingTable(os.Stdout, results)
	fmt.Println("(for every contender, one watch event per deletion goes to this benchmark's own watch)")
	// The verdicts compare kubegcd with the first raw contender of plain
	// workers, else the first listed.
	k, rawR, kcm := results[0], results[1+verdictRaw(cfg.raw)], results[len(results)-1]
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Printf("%s: kubegcd vs kube-controller-manager: %.2f× (target ≥ %.1f×) %s\n", size, k.rate()/kcm.rate(), targetVsKCM,
		verdict(k.rate() >= targetVsKCM*kcm.rate()))
	fmt.Printf("%s: kubegcd vs %s: %.2f× (target ≥ %.1f×) %s\n", size, rawR.name, k.rate()/rawR.rate(), targetVsRaw,
		verdict(k.rate() >= targetVsRaw*rawR.rate()))
	kCP, rawCP := k.controlPlaneMs(), rawR.controlPlaneMs()
	if rawCP > 0 {
		fmt.Printf("%s: kubegcd's control-plane CPU per deletion vs %s: %.2f× (target ≤ %.1f×) %s\n", size, rawR.name, kCP/rawCP,
			targetCPVsRaw, verdict(kCP <= targetCPVsRaw*rawCP))
	}
	fmt.Printf("%s: kubegcd first deletion after %s (target ≤ %s) %s\n", size, k.first.Round(time.Millisecond), targetFirstDelete,
		verdict(k.first <= targetFirstDelete))
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

// cpuOfPIDs returns the CPU seconds each process has used so far.
func cpuOfPIDs(pids []int) ([]float64, error) {
	cpu := make([]float64, len(pids))
	for i, pid := range pids {
		var err error
		if cpu[i], err = pidCPU(pid); err != nil {
			return nil, err
		}
	}
	return cpu, nil
}

func deleteOwner(kube kubernetes.Interface) func(context.Context, *corev1.ConfigMap, func()) error {
	return func(ctx context.Context, owner *corev1.ConfigMap, begin func()) error {
		begin()
		bg := metav1.DeletePropagationBackground
		return kube.CoreV1().ConfigMaps(owner.Namespace).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	}
}

// gcContender creates an owner and n dependents in namespace ns, starts the
// contender, then runs act and times the dependents' deletions from a watch.
// act calls begin right before its first deletion: the CPU and the API
// server's metrics are measured from there to the last dependent gone.
func gcContender(ctx context.Context, kube kubernetes.Interface, ns string, n, workers int, window gcWindow,
	start func(context.Context, *corev1.ConfigMap) (stop func() error, err error),
	act func(ctx context.Context, owner *corev1.ConfigMap, begin func()) error) (r gcResult, err error) {
	r.n = n
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return r, err
	}
	owner, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		return r, err
	}
	created := time.Now()
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
	fmt.Printf("  %s: created %d dependents in %s\n", ns, n, time.Since(created).Round(time.Millisecond))

	if start != nil {
		stop, startErr := start(ctx, owner)
		if startErr != nil {
			return r, startErr
		}
		// Joined into the result: a contender that crashed is an error.
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

	ownPID, err := window.ownPID()
	if err != nil {
		return r, err
	}
	pids := []int{ownPID, window.apiserverPID, window.etcdPID}
	var (
		apiBefore apiCounts
		apiErr    error
		cpu0      []float64
		cpuErr    error
		t0        time.Time
		profiled  chan error
	)
	begin := func() {
		// Scraped before the CPU is read: the scrape's own cost stays out.
		apiBefore, apiErr = window.cp.metrics(ctx)
		if window.profile != "" {
			profiled = make(chan error, 1)
			go func() { profiled <- window.cp.profile(ctx, window.profileSeconds, window.profile) }()
		}
		cpu0, cpuErr = cpuOfPIDs(pids)
		t0 = time.Now()
	}
	if err := act(ctx, owner, begin); err != nil {
		return r, err
	}
	if t0.IsZero() {
		return r, fmt.Errorf("%s: the deletions never began", ns)
	}
	if cpuErr != nil {
		return r, cpuErr
	}
	deadline := time.After(gcTimeout)
	gone := 0
	// perSecond counts the deletions the watch saw in each second from
	// t0: a collection that slows or stalls shows it.
	var perSecond []int
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
				since := time.Since(t0)
				if gone == 1 {
					r.first = since
				}
				sec := int(since / time.Second)
				for len(perSecond) <= sec {
					perSecond = append(perSecond, 0)
				}
				perSecond[sec]++
			}
		case <-deadline:
			return r, fmt.Errorf("%s: only %d of %d dependents gone after %s", ns, gone, n, gcTimeout)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.last = time.Since(t0)
	cpu, err := cpuOfPIDs(pids)
	if err != nil {
		return r, err
	}
	r.cpu, r.apiserverCPU, r.etcdCPU = cpu[0]-cpu0[0], cpu[1]-cpu0[1], cpu[2]-cpu0[2]
	if profiled != nil {
		// Waited for before the scrape, which the profile would count, and
		// before the next contender.
		if err := <-profiled; err != nil {
			fmt.Printf("  %s: kube-apiserver's CPU profile not written: %v\n", ns, err)
		} else {
			fmt.Printf("  %s: kube-apiserver's CPU profile over the first %d s: %s\n", ns, window.profileSeconds, window.profile)
		}
	}
	apiAfter, scrapeErr := window.cp.metrics(ctx)
	if scrapeErr = errors.Join(apiErr, scrapeErr); scrapeErr != nil {
		fmt.Printf("  %s: kube-apiserver's metrics not read: %v\n", ns, scrapeErr)
	} else {
		r.api = apiAfter.since(apiBefore)
	}
	r.name = ns
	fmt.Printf("  %s: first dependent gone after %s, last after %s (%.0f/s)\n", ns, r.first.Round(time.Millisecond),
		r.last.Round(time.Millisecond), r.rate())
	fmt.Printf("  %s: deletions the watch saw, second by second: %s\n", ns, strings.Trim(fmt.Sprint(perSecond), "[]"))
	return r, nil
}

// scrapeMetrics reads the series of kubegcd's /metrics that writerReport
// compares, by name with labels.
func scrapeMetrics(ctx context.Context, base string) (map[string]float64, error) {
	body, err := testcluster.HTTPGet(ctx, base+"/metrics")
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "kubegcd_db_") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	return m, nil
}

// writerReport prints what kubegcd's database writer did since its start
// (its initial sync adds a few dozen commits): commits, writes per commit,
// and how long an intent waited for its commit (the wait each write has
// before it is sent).
func writerReport(m map[string]float64) {
	commits, writes := m["kubegcd_db_writes_per_commit_count"], m["kubegcd_db_writes_per_commit_sum"]
	intents := m[`kubegcd_db_write_duration_seconds_count{operation="intent"}`]
	intentWait := m[`kubegcd_db_write_duration_seconds_sum{operation="intent"}`]
	events := m[`kubegcd_db_write_duration_seconds_count{operation="events"}`]
	if commits == 0 || intents == 0 {
		return
	}
	fmt.Printf("  kubegcd's writer: %.0f commits, %.1f writes each; %.0f intents, each committed %.1f ms after it was queued (mean); %.0f watch batches\n",
		commits, writes/commits, intents, 1000*intentWait/intents, events)
}

// namespaceSize names a size in namespace names, which take no dot: 2.5k
// is "2-5k".
func namespaceSize(n int) string { return strings.ReplaceAll(countLabel(n), ".", "-") }
