package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	rounds := max(cfg.rounds, 1)
	fmt.Printf("\n== ownership GC: %s dependents of one owner; kubegcd and kube-controller-manager at QPS/burst %d with their default "+
		"workers (--gc-workers, --concurrent-gc-syncs); raw deletes: %s\n", size, gcQPS, rawSummary(cfg.raw))
	if len(cfg.kubegcdArgs) > 0 {
		fmt.Printf("   kubegcd run with the extra arguments %s\n", strings.Join(cfg.kubegcdArgs, " "))
	}
	if cfg.kubegcdDBDir != "" {
		fmt.Printf("   kubegcd's databases in %s\n", cfg.kubegcdDBDir)
	}
	meta, err := metadata.NewForConfig(cluster.Config)
	if err != nil {
		return err
	}
	qps := fmt.Sprint(gcQPS)
	// window measures a contender's process, found by ownPID, and profiles
	// kube-apiserver in the first round if profile is set.
	window := func(round int, profile string, ownPID func() (int, error)) gcWindow {
		w := base
		w.ownPID = ownPID
		if profiles != "" && profile != "" && round == 0 {
			w.profile = filepath.Join(profiles, fmt.Sprintf("kube-apiserver-%s-%s.pprof", profile, size))
		}
		return w
	}
	var (
		kubegcdPID int
		readyAt    time.Time
		// kubegcdRate is the rate of kubegcd's latest collection at this
		// size, which a paced contender keeps to.
		kubegcdRate float64
	)

	// startKubegcd runs a kubegcd that enforces the ownership GC, pinned
	// with the clients, and waits for its /readyz; name tells its database
	// and log apart.
	startKubegcd := func(ctx context.Context, name string) (*testcluster.Kubegcd, string, error) {
		addr, err := freeAddr()
		if err != nil {
			return nil, "", err
		}
		args := []string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(cmp.Or(cfg.kubegcdDBDir, dir), fmt.Sprintf("%s-%d.db", name, n)), "--listen", addr,
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

	contenders := []ownerGCContender{{slug: "kubegcd", run: func(ctx context.Context, round int) (gcResult, error) {
		suffix := roundSuffix(round, rounds)
		r, err := gcContender(ctx, kube, "gc-kubegcd-"+nsSize+suffix, n, cfg.workers, window(round, "kubegcd", func() (int, error) { return kubegcdPID, nil }), func(ctx context.Context, owner *corev1.ConfigMap) (func() error, error) {
			d, addr, err := startKubegcd(ctx, "kubegcd-gc"+suffix)
			if err != nil {
				return nil, err
			}
			kubegcdPID = d.Pid()
			readyAt = time.Now()
			if path := os.Getenv("KUBEGCD_BENCH_CPUPROFILE"); path != "" && round == 0 {
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
			if path := os.Getenv("KUBEGCD_BENCH_GOROUTINES"); path != "" && round == 0 {
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
		r.name = "kubegcd"
		if err == nil {
			kubegcdRate = r.rate()
		}
		return r, err
	}}}

	for i, c := range cfg.raw {
		// The first raw contender keeps the profile's historical name.
		profile := "raw"
		if i > 0 {
			profile = "raw-" + c.slug()
		}
		contenders = append(contenders, ownerGCContender{slug: "raw-" + c.slug(), run: func(ctx context.Context, round int) (gcResult, error) {
			limiter, err := c.limiter(kubegcdRate, clock.RealClock{})
			if err != nil {
				return gcResult{}, err
			}
			suffix := roundSuffix(round, rounds)
			var beside func(context.Context, *corev1.ConfigMap) (func() error, error)
			if c.beside {
				beside = func(ctx context.Context, _ *corev1.ConfigMap) (func() error, error) {
					d, _, err := startKubegcd(ctx, "kubegcd-beside"+suffix)
					if err != nil {
						return nil, err
					}
					return func() error { return d.Stop(stopGrace) }, nil
				}
			}
			r, err := gcContender(ctx, kube, "gc-raw-"+c.slug()+"-"+nsSize+suffix, n, cfg.workers, window(round, profile, func() (int, error) { return os.Getpid(), nil }), beside,
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
					// Timed, as the collectors are, by the benchmark's watch; the
					// calls' own times are printed beside.
					first, last, err := rawDeletes(ctx, raw, exact, owner.Namespace, c.workers, limiter, begin)
					if err == nil {
						fmt.Printf("  %s: first delete call returned after %s, last after %s\n", owner.Namespace,
							first.Round(time.Millisecond), last.Round(time.Millisecond))
					}
					return err
				})
			r.name, r.column = c.name(kubegcdRate), c.column()
			return r, err
		}})
	}

	kcmPID := func() (int, error) { return findProcess("kube-controller-manager", "--kubeconfig="+cluster.Kubeconfig) }
	contenders = append(contenders, ownerGCContender{slug: "kcm", run: func(ctx context.Context, round int) (gcResult, error) {
		r, err := gcContender(ctx, kube, "gc-kcm-"+nsSize+roundSuffix(round, rounds), n, cfg.workers, window(round, "", kcmPID), func(ctx context.Context, owner *corev1.ConfigMap) (func() error, error) {
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
		r.name = "kube-controller-manager"
		return r, err
	}})

	// byRound holds each round's results in the contenders' order; each
	// round runs them in its own order (roundOrder).
	byRound := make([][]gcResult, rounds)
	for round := range rounds {
		byRound[round] = make([]gcResult, len(contenders))
		order := roundOrder(len(contenders), round)
		if rounds > 1 {
			slugs := make([]string, len(order))
			for i, c := range order {
				slugs[i] = contenders[c].slug
			}
			fmt.Printf("  round %d of %d: %s\n", round+1, rounds, strings.Join(slugs, ", "))
		}
		for _, c := range order {
			r, err := contenders[c].run(ctx, round)
			if err != nil {
				return err
			}
			byRound[round][c] = r
		}
	}

	pinned := ""
	if cfg.pin != nil {
		pinned = fmt.Sprintf("; etcd and kube-apiserver pinned to CPU %d, the rest to CPU %d", cfg.pin.controlPlane, cfg.pin.clients)
	}
	delayed := ""
	if cfg.ownerDelay > 0 {
		delayed = fmt.Sprintf("; kubegcd's owner deleted %s after its /readyz", cfg.ownerDelay)
	}
	fmt.Printf("\nOwnership GC: %s dependents of one owner, owner deleted (background) → last dependent gone%s%s\n", size, pinned, delayed)
	resultsTable(os.Stdout, byRound)
	fmt.Println()
	accountingTable(os.Stdout, mergeRounds(byRound))
	fmt.Println("(for every contender, one watch event per deletion goes to this benchmark's own watch)")
	ownerGCVerdicts(os.Stdout, size, byRound, 1+verdictRaw(cfg.raw))
	return nil
}

// ownerGCContender is one contender of the ownership-GC benchmark: run
// collects the dependents of one owner in a namespace of its own for the
// round (from 0). slug names it in the order of each round.
type ownerGCContender struct {
	slug string
	run  func(ctx context.Context, round int) (gcResult, error)
}

// roundOrder returns the order in which a round (from 0) runs n
// contenders: their list rotated left by round. Over n rounds each
// contender runs once at each position, so that the position in a run,
// which alone moves a rate by up to a fifth, weighs on none of them more.
func roundOrder(n, round int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (i + round) % n
	}
	return order
}

// roundSuffix tells the namespaces and files of a round apart; a run of
// one round keeps their plain names.
func roundSuffix(round, rounds int) string {
	if rounds == 1 {
		return ""
	}
	return fmt.Sprintf("-r%d", round+1)
}

// resultsTable writes a row per contender and round, each round in the
// order it ran.
func resultsTable(w io.Writer, byRound [][]gcResult) {
	fmt.Fprintln(w, "CPU per deletion in ms, over the deletions alone (raw: after its list)")
	fmt.Fprintf(w, "%-38s %8s %8s %12s %8s %10s %8s %14s\n", "contender", "first s", "last s", "deletions/s", "own CPU",
		"apiserver", "etcd", "control plane")
	for round, results := range byRound {
		if len(byRound) > 1 {
			fmt.Fprintf(w, "round %d\n", round+1)
		}
		for _, c := range roundOrder(len(results), round) {
			r := results[c]
			fmt.Fprintf(w, "%-38s %8.3f %8.2f %12.0f %8.2f %10.2f %8.2f %14.2f\n", r.name, r.first.Seconds(), r.last.Seconds(), r.rate(),
				r.msPer(r.cpu), r.msPer(r.apiserverCPU), r.msPer(r.etcdCPU), r.controlPlaneMs())
		}
	}
}

// mergeRounds sums each contender's API server counts and deletions over
// the rounds, for the accounting table. A contender whose metrics could not
// be read in some round is counted over the other rounds.
func mergeRounds(byRound [][]gcResult) []gcResult {
	merged := slices.Clone(byRound[0])
	for i := range merged {
		merged[i].n, merged[i].api = 0, apiCounts{}
		for _, results := range byRound {
			r := results[i]
			if r.api == nil {
				continue
			}
			merged[i].n += r.n
			for k, v := range r.api {
				merged[i].api[k] += v
			}
		}
		if merged[i].n == 0 {
			merged[i].n, merged[i].api = byRound[0][i].n, nil
		}
	}
	return merged
}

// ownerGCVerdicts writes the verdict lines of one size: kubegcd
// (contender 0) against kube-controller-manager (the last) and against
// the raw contender at rawIdx. Over several rounds a ratio is judged by its
// median over the rounds, each round's kubegcd against the same round's
// contender, and the first deletion by the slowest round.
func ownerGCVerdicts(w io.Writer, size string, byRound [][]gcResult, rawIdx int) {
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	// ratio returns the median over the rounds of f, and for several
	// rounds the values it is the median of, to open the target's
	// parenthesis.
	ratio := func(f func([]gcResult) float64) (float64, string) {
		var vs []float64
		for _, results := range byRound {
			if v := f(results); v > 0 && !math.IsInf(v, 0) {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return 0, ""
		}
		if len(byRound) == 1 {
			return vs[0], ""
		}
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = fmt.Sprintf("%.2f×", v)
		}
		return median(vs), "median of " + strings.Join(parts, ", ") + "; "
	}
	last := len(byRound[0]) - 1
	k, rawName := byRound[0][0], byRound[0][rawIdx].name
	vsKCM, of := ratio(func(rs []gcResult) float64 { return rs[0].rate() / rs[last].rate() })
	fmt.Fprintf(w, "%s: kubegcd vs kube-controller-manager: %.2f× (%starget ≥ %.1f×) %s\n", size, vsKCM, of, targetVsKCM, verdict(vsKCM >= targetVsKCM))
	vsRaw, of := ratio(func(rs []gcResult) float64 { return rs[0].rate() / rs[rawIdx].rate() })
	fmt.Fprintf(w, "%s: kubegcd vs %s: %.2f× (%starget ≥ %.1f×) %s\n", size, rawName, vsRaw, of, targetVsRaw, verdict(vsRaw >= targetVsRaw))
	if cp, of := ratio(func(rs []gcResult) float64 { return rs[0].controlPlaneMs() / rs[rawIdx].controlPlaneMs() }); cp > 0 {
		fmt.Fprintf(w, "%s: kubegcd's control-plane CPU per deletion vs %s: %.2f× (%starget ≤ %.1f×) %s\n", size, rawName, cp, of,
			targetCPVsRaw, verdict(cp <= targetCPVsRaw))
	}
	first, slowest := k.first, ""
	for _, results := range byRound[1:] {
		first = max(first, results[0].first)
	}
	if len(byRound) > 1 {
		slowest = fmt.Sprintf("slowest of %d rounds; ", len(byRound))
	}
	fmt.Fprintf(w, "%s: kubegcd first deletion after %s (%starget ≤ %s) %s\n", size, first.Round(time.Millisecond), slowest,
		targetFirstDelete, verdict(first <= targetFirstDelete))
}

// median returns the median of vs, which is not empty.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
	w, err := kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return r, err
	}
	// The watch is read while the contender deletes, whoever it is, so
	// that the API server sends its events as they happen for every
	// contender alike. Left unread while raw workers deleted, it filled
	// and the API server dropped it; the events came again after the last
	// delete, all at once.
	begun := make(chan time.Time, 1)
	seen := make(chan watchCount, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer func() {
		stopWatch()
		if seen != nil {
			<-seen
		}
	}()
	go func() {
		seen <- countDeletions(watchCtx, kube, ns, owner.Name, n, w, list.ResourceVersion, begun)
	}()

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
		begun <- t0
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
	wc := <-seen
	seen = nil
	if wc.err != nil {
		return r, wc.err
	}
	r.first, r.last = wc.first, wc.last
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
	fmt.Printf("  %s: deletions the watch saw, second by second: %s\n", ns, strings.Trim(fmt.Sprint(wc.perSecond), "[]"))
	if wc.rewatches > 0 {
		fmt.Printf("  %s: the API server dropped the benchmark's watch %d times\n", ns, wc.rewatches)
	}
	return r, nil
}

// watchCount is what countDeletions saw.
type watchCount struct {
	// first and last are the times from the deletions' start to the first
	// and the last dependent the watch saw deleted.
	first, last time.Duration
	// perSecond counts the deletions seen in each second from the start:
	// a collection that slows or stalls shows it.
	perSecond []int
	// rewatches counts the times the API server closed the watch.
	rewatches int
	err       error
}

// countDeletions reads w, a watch of namespace ns from resourceVersion rv,
// until it has seen n dependents of owner deleted, gcTimeout after the
// start that begun delivers, or until ctx ends. It watches again from the
// last event seen when the API server closes w, and stops the watch it
// holds at the end.
func countDeletions(ctx context.Context, kube kubernetes.Interface, ns, owner string, n int, w watch.Interface, rv string,
	begun <-chan time.Time) (c watchCount) {
	defer func() { w.Stop() }()
	var t0 time.Time
	select {
	case t0 = <-begun:
	case <-ctx.Done():
		c.err = ctx.Err()
		return c
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
				c.rewatches++
				var err error
				if w, err = kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv}); err != nil {
					c.err = fmt.Errorf("%s: rewatch after %d of %d deletions: %w", ns, gone, n, err)
					return c
				}
				continue
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				continue
			}
			rv = cm.ResourceVersion
			if ev.Type == watch.Deleted && cm.Name != owner {
				gone++
				since := time.Since(t0)
				if gone == 1 {
					c.first = since
				}
				sec := int(since / time.Second)
				for len(c.perSecond) <= sec {
					c.perSecond = append(c.perSecond, 0)
				}
				c.perSecond[sec]++
			}
		case <-deadline:
			c.err = fmt.Errorf("%s: only %d of %d dependents gone after %s", ns, gone, n, gcTimeout)
			return c
		case <-ctx.Done():
			c.err = ctx.Err()
			return c
		}
	}
	c.last = time.Since(t0)
	return c
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
