// Command bench measures kubegcd against a local control plane and prints the
// figures, each beside kube-controller-manager's on the same control plane:
//
//   - ingest: fills the cluster with ConfigMaps (10,000 then 50,000 by
//     default) and, at each size, times kubegcd's initial list→SQLite sync on a
//     fresh database and reads its resident memory once synced;
//
//   - ownergc: 20,000 then 50,000 dependents of one owner, owner deleted →
//     last gone, against raw deletes (--raw; by default 32 workers on a
//     client with no client-side rate limit, the API server's own limit) and
//     against kube-controller-manager; both collectors at QPS/burst 5000
//     with their default workers; every contender is timed by one watch of
//     the dependents, read while it deletes;
//
//   - rules (not run by default): --rule-objects ConfigMaps past their TTL,
//     deleted by the built-in rule ttl-expired set to action delete, against
//     a raw client of 32 workers that sends each object a GET then a DELETE
//     on its UID and resourceVersion, the floor of a delete re-checked live;
//     kubegcd's rule file goes from report to delete once it has matched
//     them, and its rate runs from its first deletion to its last;
//     --rule-baseline runs another kubegcd binary the same way, and the
//     difference is the cost of what it lacks, such as keeping copies;
//
//   - podgc: 20,000 terminated pods, threshold 1,000: collector start → 1,000
//     left;
//
//   - ttl: 2,000 nodes without the annotation: controller start → all at 60;
//
//   - restart (not run by default): --restart-objects ConfigMaps, kubegcd
//     synced then stopped, garbage made while it is down: start → first
//     deletion of that garbage, for kubegcd resuming its watches, kubegcd
//     made to list everything again, and kube-controller-manager;
//
//   - scale (not run by default; needs kwok, which make bench builds): a
//     cluster of real size simulated by kwok (2,000 nodes renewing their
//     Leases, 50,000 pods behind Deployments and Jobs, 100,000 ConfigMaps,
//     Secrets, Services and custom resources with a 1 KB annotation each);
//     kubegcd's initial sync, its RSS, database and CPU through --heartbeat
//     of the nodes' heartbeats beside kube-controller-manager's same
//     controllers, then each, one after the other, collecting 20
//     Deployments with 10,000 pods;
//
//   - referrers (not run by default): --referrer-objects ConfigMaps, then as
//     many Pods and a fifth as many workloads referencing them; kubegcd
//     syncs a fresh database at each step, and so does --referrer-baseline,
//     a kubegcd built before references were mirrored; CPU and RSS per
//     object of each class;
//
//   - coldstart (not run by default): --coldstart-objects ConfigMaps
//     (200,000), then, round after round in rotated order, the floor no
//     mirror can beat, a bare paginated metadata list of every resource
//     kubegcd lists and WatchList where it is served, both from this
//     process; kube-controller-manager's garbage collector, start → synced;
//     and kubegcd on a fresh database, start → /readyz, with its CPU, peak
//     RSS and bytes written; then one more kubegcd start under strace
//     counts its fsyncs;
//
//   - reads (not run by default; no cluster): a database of --read-objects
//     objects and --read-audit audit rows, filled through kubegcd's ingestion
//     and ledger code, then p50/p99 of every read endpoint through the
//     daemon's handler, and the memory of streaming the whole graph.
//
// Usage:
//
//	go run ./hack/bench [--run ingest,ownergc,podgc,ttl] [--sizes 10000,50000] [--dependents 20000,50000] \
//	    [--workers 32] [--kcm=true]
//	go run ./hack/bench --run scale [--heartbeat 10m]
//	go run ./hack/bench --run referrers [--referrer-objects 20000] [--referrer-baseline OLD-KUBEGCD] [--rounds 3]
//	go run ./hack/bench --run ownergc --dependents 20000 --pin [--cp-profiles DIR]
//	go run ./hack/bench --run ownergc --raw 32,paced,watched,exact,beside [--kubegcd-args=--gc-workers=32] \
//	    [--owner-delay 5s]
//	go run ./hack/bench --run ownergc --pin --kubegcd-db-dir /dev/shm --rounds 3
//	go run ./hack/bench --run rules [--rule-objects 20000] [--rule-baseline OLD-KUBEGCD] \
//	    --pin --kubegcd-db-dir /dev/shm --rounds 3
//	go run ./hack/bench --run coldstart [--coldstart-objects 200000] [--rounds 3] [--pin] [--kubegcd-db-dir /dev/shm]
//
// --pin places etcd and kube-apiserver on CPU 0 and kubegcd,
// kube-controller-manager and this process (the raw client) on CPU 1, as
// when kubegcd runs off the cluster; it needs two CPUs or more. Disk writes
// on one core of a virtual machine slow the other core too. So a pinned run
// should put kubegcd's databases on tmpfs with --kubegcd-db-dir /dev/shm:
// off the cluster, its disk writes land on its own machine.
//
// --rounds N runs every ownergc contender N times at each size, each round
// in another order. The position in a run alone moves a rate by up to a
// fifth.
//
// For tuning, KUBEGCD_BENCH_CPUPROFILE=PATH writes a CPU profile of
// kubegcd while it collects (ownergc, podgc, scale, rules; %n in PATH is
// the size) or, in coldstart, of one more cold start from /healthz to
// /readyz, with its allocations in PATH.allocs; and
// KUBEGCD_BENCH_GOROUTINES=PATH twenty goroutine dumps of
// kubegcd half a second apart during the ownership GC and the rule's
// deletions (%i numbers them).
//
// A figure that misses its target is marked FAIL; the exit status is non-zero
// only when the benchmark itself breaks.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	flag "github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

const (
	mib = 1 << 20

	readyPoll    = 50 * time.Millisecond
	readyTimeout = 5 * time.Minute
	settleDelay  = 3 * time.Second // after sync, before reading kubegcd's RSS
	stopGrace    = 15 * time.Second

	// kube-controller-manager has no readiness signal for its dependency
	// graph: wait for its "monitors have synced" log line, then for RSS to
	// stop growing by more than kcmGrowth for kcmStable.
	kcmSyncedLog = "resource monitors have synced"
	kcmGrowth    = 1 * mib
	kcmStable    = 5 * time.Second
	kcmTimeout   = 2 * time.Minute
	kcmPoll      = 500 * time.Millisecond

	// Targets: kubegcd's RSS may grow by at most targetGrowth per
	// targetObjects objects (25 MB from 10k to 50k); upstream's garbage
	// collector is quoted at ≈2.2 KB (2,200 bytes) per object.
	targetGrowth      = 25 * mib
	targetObjects     = 40000
	kcmReferenceBytes = 2200
)

type config struct {
	sizes      []int
	workers    int
	kcm        bool
	runIngest  bool
	runOwnerGC bool
	dependents []int
	gcWorkers  int
	// ownergc: the raw contenders, kubegcd's extra run arguments, and the
	// wait from kubegcd's /readyz to its owner's deletion.
	raw         []rawContender
	kubegcdArgs []string
	ownerDelay  time.Duration
	// rounds of every contender at each size, each round in its own order.
	rounds int
	// kubegcdDBDir holds kubegcd's databases in the ownership GC ("": the
	// run's directory).
	kubegcdDBDir string

	runPodGC       bool
	runTTL         bool
	runReads       bool
	readObjects    int
	readAudit      int
	readDB         string
	readProfiles   string
	readEndpoints  string
	terminatedPods int
	podgcQPS       int

	runRestart     bool
	restartObjects int

	runScale  bool
	heartbeat time.Duration

	runReferrers bool
	refObjects   int
	refBaseline  string // a kubegcd binary to compare with ("": none)
	// refSettle is how long RSS must hold still to be read (0: kcmStable).
	// The tests shorten it: they check the benchmark runs, not its figures.
	refSettle time.Duration

	runRules     bool
	ruleObjects  int
	ruleBaseline string // a kubegcd binary to compare with ("": none)

	runColdstart     bool
	coldstartObjects []int

	pin              *pinning // nil: nothing pinned
	cpProfiles       string
	cpProfileSeconds int
}

// result is one size's measurements.
type result struct {
	configMaps int           // ConfigMaps in the cluster
	objects    int64         // objects kubegcd mirrored, all resources
	sync       time.Duration // kubegcd start → /readyz 200
	mem        memory        // kubegcd, settleDelay after sync
	heap       uint64        // kubegcd's Go heap in use (0: unknown)
	kcm        *kcmResult    // nil unless measured
}

type kcmResult struct {
	mem     memory
	elapsed time.Duration // start → settled (or gave up)
	settled bool
}

func main() {
	sizes := flag.String("sizes", "10000,50000", "comma-separated ConfigMap counts to measure at, ascending")
	workers := flag.Int("workers", 32, "parallel ConfigMap creators")
	kcm := flag.Bool("kcm", true, "also measure kube-controller-manager in the ingest, podgc and ttl benchmarks")
	which := flag.String("run", "ingest,ownergc,podgc,ttl",
		"benchmarks to run: ingest, ownergc, podgc, ttl, reads, restart, scale, referrers, rules, coldstart")
	readObjects := flag.Int("read-objects", 1_000_000, "reads: objects in the database (no cluster)")
	readAudit := flag.Int("read-audit", 1_000_000, "reads: audit rows in the database")
	readDB := flag.String("read-db", "", "reads: keep the filled database at this path and reuse it when it is there")
	readProfiles := flag.String("read-profiles", "",
		"reads: write a CPU profile of each endpoint's requests into this directory")
	readEndpoints := flag.String("read-endpoints", "",
		"reads: time only the endpoints this regular expression matches (\"whole\": the whole graph's stream)")
	dependents := flag.String("dependents", "20000,50000",
		"ownergc: comma-separated counts of dependents of the one owner that is deleted, ascending")
	gcWorkers := flag.Int("gc-workers", 64, "podgc, ttl: kubegcd's --gc-workers")
	terminated := flag.Int("terminated-pods", 20000, "podgc: terminated pods in the cluster (the threshold is 1,000)")
	qps := flag.Int("qps", 5000, "podgc, ttl: --kube-api-qps and --kube-api-burst of kubegcd and kube-controller-manager")
	coldstartObjects := flag.String("coldstart-objects", "200000",
		"coldstart: comma-separated ConfigMap counts to measure at, ascending")
	restartObjects := flag.Int("restart-objects", 200_000, "restart: ConfigMaps in the cluster when kubegcd restarts")
	refObjects := flag.Int("referrer-objects", 20_000, "referrers: ConfigMaps, then as many Pods")
	refBaseline := flag.String("referrer-baseline", "",
		"referrers: a kubegcd binary to measure the same way, e.g. one built before references were mirrored")
	ruleObjects := flag.Int("rule-objects", 20_000, "rules: ConfigMaps past their TTL that the rule deletes")
	ruleBaseline := flag.String("rule-baseline", "",
		"rules: a kubegcd binary to measure the same way, e.g. one built before deleted objects' copies were kept")
	heartbeat := flag.Duration("heartbeat", 10*time.Minute,
		"scale: how long kubegcd and kube-controller-manager watch the nodes' heartbeats")
	pin := flag.Bool("pin", false, "pin etcd and kube-apiserver to CPU 0, "+
		"kubegcd, kube-controller-manager and the raw client to CPU 1 (needs two CPUs)")
	cpProfiles := flag.String("cp-profiles", "", "ownergc: write CPU profiles of kube-apiserver during the kubegcd run "+
		"and each raw run of the first size (and round) into this directory")
	cpProfileSeconds := flag.Int("cp-profile-seconds", 5,
		"ownergc: length of each --cp-profiles profile, from the first deletion")
	raw := flag.String("raw", "32", "ownergc: comma-separated raw delete contenders, "+
		"each a worker count with no client-side limit (\"20\"), "+
		"\"paced\": 32 workers sharing one token bucket at the deletions/s kubegcd measured at that size, "+
		"\"watched\": 32 workers beside a metadata-only watch of every ConfigMap, as a collector's mirror keeps, "+
		"\"exact\": watched, and deleting through kubegcd's client with its preconditions and propagation, "+
		"or \"beside\": 32 workers while a kubegcd (with --kubegcd-args) mirrors the cluster, "+
		"their owner kept so that it deletes nothing")
	kubegcdArgs := flag.String("kubegcd-args", "", "ownergc, rules: extra arguments of kubegcd's run command, split on spaces, "+
		"e.g. --kubegcd-args=--gc-workers=32 (the ownership GC's workers)")
	rounds := flag.Int("rounds", 1, "ownergc, referrers, rules, coldstart: rounds of every contender at each size on one control plane, "+
		"each round in another order (the list rotated by one); the verdicts take the median of the rounds' ratios")
	kubegcdDBDir := flag.String("kubegcd-db-dir", "",
		"ownergc, rules, coldstart: put kubegcd's databases in a new directory under this one, "+
			"e.g. /dev/shm: its disk writes then stay off the disk the control plane shares on one machine")
	ownerDelay := flag.Duration("owner-delay", 0, "ownergc: for kubegcd only, the wait from its /readyz "+
		"to the owner's deletion (e.g. 5s: its start-up pass still runs)")
	flag.Parse()
	cfg := config{refObjects: *refObjects, refBaseline: *refBaseline, ruleObjects: *ruleObjects,
		ruleBaseline: *ruleBaseline, restartObjects: *restartObjects, heartbeat: *heartbeat, workers: *workers, kcm: *kcm,
		gcWorkers: *gcWorkers, terminatedPods: *terminated, podgcQPS: *qps,
		readObjects: *readObjects, readAudit: *readAudit, readDB: *readDB, readProfiles: *readProfiles,
		readEndpoints: *readEndpoints, cpProfiles: *cpProfiles, cpProfileSeconds: *cpProfileSeconds,
		kubegcdArgs: strings.Fields(*kubegcdArgs), ownerDelay: *ownerDelay, rounds: *rounds, kubegcdDBDir: *kubegcdDBDir}
	if err := cfg.choose(*which); err != nil {
		fmt.Fprintln(os.Stderr, "bench: --run:", err)
		os.Exit(2)
	}
	var err error
	if cfg.sizes, err = parseSizes(*sizes); err != nil {
		fmt.Fprintln(os.Stderr, "bench: --sizes:", err)
		os.Exit(2)
	}
	if cfg.coldstartObjects, err = parseSizes(*coldstartObjects); err != nil {
		fmt.Fprintln(os.Stderr, "bench: --coldstart-objects:", err)
		os.Exit(2)
	}
	if cfg.dependents, err = parseSizes(*dependents); err != nil {
		fmt.Fprintln(os.Stderr, "bench: --dependents:", err)
		os.Exit(2)
	}
	if cfg.raw, err = parseRaw(*raw); err != nil {
		fmt.Fprintln(os.Stderr, "bench: --raw:", err)
		os.Exit(2)
	}
	if cfg.workers < 1 || cfg.refObjects < 20 || cfg.ruleObjects < 1 || cfg.cpProfileSeconds < 1 || cfg.ownerDelay < 0 || cfg.rounds < 1 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *pin {
		if cfg.pin, err = newPinning(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// choose sets the benchmarks that which, a comma-separated list, names.
func (cfg *config) choose(which string) error {
	for b := range strings.SplitSeq(which, ",") {
		switch strings.TrimSpace(b) {
		case "ingest":
			cfg.runIngest = true
		case "ownergc":
			cfg.runOwnerGC = true
		case "podgc":
			cfg.runPodGC = true
		case "ttl":
			cfg.runTTL = true
		case "reads":
			cfg.runReads = true
		case "restart":
			cfg.runRestart = true
		case "scale":
			cfg.runScale = true
		case "referrers":
			cfg.runReferrers = true
		case "rules":
			cfg.runRules = true
		case "coldstart":
			cfg.runColdstart = true
		default:
			return fmt.Errorf("unknown benchmark %q", b)
		}
	}
	return nil
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		if len(sizes) > 0 && n <= sizes[len(sizes)-1] {
			return nil, errors.New("sizes must be ascending")
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func run(ctx context.Context, cfg config) (err error) {
	kubegcd, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubegcd-bench-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: logs kept in %s\n", dir)
			return
		}
		err = os.RemoveAll(dir)
	}()

	if cfg.kubegcdDBDir != "" {
		var dbDir string
		if dbDir, err = os.MkdirTemp(cfg.kubegcdDBDir, "kubegcd-bench-"); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, os.RemoveAll(dbDir)) }()
		cfg.kubegcdDBDir = dbDir
	}
	fmt.Printf("kubegcd benchmarks: %d CPUs, %d client workers\n", runtime.NumCPU(), cfg.workers)
	if cfg.runReads {
		// No cluster: the database is filled through kubegcd's own code.
		err := runReads(ctx, dir, cfg.readObjects, cfg.readAudit, 10_000, cfg.readDB, cfg.readProfiles, cfg.readEndpoints)
		if err != nil {
			return fmt.Errorf("reads: %w", err)
		}
		if !cfg.runIngest && !cfg.runOwnerGC && !cfg.runPodGC && !cfg.runTTL && !cfg.runRestart && !cfg.runScale &&
			!cfg.runReferrers && !cfg.runRules && !cfg.runColdstart {
			return nil
		}
	}
	cluster, err := testcluster.Start(ctx, testcluster.Options{
		Dir:  filepath.Join(dir, "cluster"),
		Logf: func(format string, args ...any) { fmt.Printf("  "+format+"\n", args...) },
		APIServerArgs: []string{
			"--max-requests-inflight=3000",
			"--max-mutating-requests-inflight=1500",
		},
	})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cluster.Stop()) }()
	if err := cfg.pin.pinCluster(cluster); err != nil {
		return err
	}

	restCfg := rest.CopyConfig(cluster.Config)
	restCfg.QPS, restCfg.Burst = 5000, 5000
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	if cfg.runScale {
		if err := runScale(ctx, fullScale(cfg), cluster, dir); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	if cfg.runOwnerGC {
		if err := runOwnerGC(ctx, cfg, cluster, kube, dir); err != nil {
			return err
		}
	}
	if cfg.runRules {
		if err := runRules(ctx, cfg, cluster, kube, kubegcd, dir); err != nil {
			return err
		}
	}
	if cfg.runPodGC {
		if err := runPodGC(ctx, cfg, cluster, kube, dir); err != nil {
			return err
		}
	}
	if cfg.runTTL {
		if err := runTTL(ctx, cfg, cluster, kube, dir); err != nil {
			return err
		}
	}
	if cfg.runRestart {
		if err := runRestart(ctx, cfg, cluster, kube, dir); err != nil {
			return fmt.Errorf("restart: %w", err)
		}
	}
	if cfg.runReferrers {
		if err := runReferrers(ctx, cfg, cluster, kube, kubegcd, dir); err != nil {
			return err
		}
	}
	if cfg.runColdstart {
		if err := runColdstart(ctx, cfg, cluster, kube, kubegcd, dir); err != nil {
			return fmt.Errorf("coldstart: %w", err)
		}
	}
	if !cfg.runIngest {
		return nil
	}
	return runIngest(ctx, cfg, cluster, kube, kubegcd, dir)
}

// runIngest grows the cluster's ConfigMaps to each size and measures, at
// each, kubegcd's initial sync on a fresh database and, with cfg.kcm,
// kube-controller-manager's garbage collector.
func runIngest(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	kubegcd, dir string) error {
	fmt.Printf("\n== ingest: sizes %v\n", cfg.sizes)
	c := &creator{kube: kube, workers: cfg.workers}
	if err := c.createNamespaces(ctx); err != nil {
		return err
	}

	var results []result
	for _, n := range cfg.sizes {
		fmt.Printf("\n== %s ConfigMaps\n", countLabel(n))
		from, begin := len(c.uids), time.Now()
		if err := c.createUpTo(ctx, n); err != nil {
			return err
		}
		took := time.Since(begin)
		fmt.Printf("  created %d ConfigMaps in %s: %.0f/s\n",
			n-from, took.Round(time.Millisecond), float64(n-from)/took.Seconds())

		r, err := measureKubegcd(ctx, kubegcd, cluster.Kubeconfig, dir, n)
		if err != nil {
			return err
		}
		fmt.Printf("  kubegcd: synced %d objects (%d ConfigMaps) in %s: %.0f ConfigMaps/s; RSS %.1f MB, peak %.1f MB\n",
			r.objects, n, r.sync.Round(time.Millisecond), float64(n)/r.sync.Seconds(), mb(r.mem.RSS), mb(r.mem.HWM))

		if cfg.kcm {
			if r.kcm, err = measureKCM(ctx, cluster); err != nil {
				return err
			}
			state := "settled"
			if !r.kcm.settled {
				state = "NOT settled, gave up"
			}
			fmt.Printf("  kube-controller-manager (garbagecollector): RSS %.1f MB, peak %.1f MB (%s after %s)\n",
				mb(r.kcm.mem.RSS), mb(r.kcm.mem.HWM), state, r.kcm.elapsed.Round(time.Second))
		}
		results = append(results, r)
	}
	report(results)
	return nil
}

// measureKubegcd runs kubegcd on a fresh database with n ConfigMaps in the
// cluster, times its initial sync and reads its memory.
func measureKubegcd(ctx context.Context, bin, kubeconfig, dir string, n int) (r result, err error) {
	r.configMaps = n
	addr, err := freeAddr()
	if err != nil {
		return r, err
	}
	base := "http://" + addr
	begin := time.Now()
	d, err := testcluster.StartKubegcd(bin, filepath.Join(dir, fmt.Sprintf("kubegcd-%d.log", n)),
		"run", "--kubeconfig", kubeconfig, "--db", filepath.Join(dir, fmt.Sprintf("kubegcd-%d.db", n)),
		"--listen", addr, "--log-level", "warn")
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, d.Stop(stopGrace)) }()

	if err := d.WaitReady(ctx, base+"/readyz", readyPoll, readyTimeout); err != nil {
		return r, err
	}
	r.sync = time.Since(begin)

	st, err := testcluster.GetKubegcdStatus(ctx, base)
	if err != nil {
		return r, err
	}
	r.objects = st.Objects
	var cms int64
	for _, res := range st.Resources {
		if res.Group == "" && res.Resource == "configmaps" {
			cms = res.Objects
		}
	}
	if cms < int64(n) {
		return r, fmt.Errorf("kubegcd is ready but mirrors %d ConfigMaps; %d exist", cms, n)
	}

	if err := sleep(ctx, settleDelay); err != nil {
		return r, err
	}
	if r.mem, err = readMemory(d.Pid()); err != nil {
		return r, err
	}
	r.heap, _ = goHeapInuse(ctx, base) // informative only
	return r, nil
}

// measureKCM runs kube-controller-manager with only its garbage collector
// until the dependency graph is built and its RSS stops growing.
func measureKCM(ctx context.Context, cluster *testcluster.Cluster) (_ *kcmResult, err error) {
	begin := time.Now()
	stop, err := cluster.StartControllerManager(ctx, "--controllers=garbagecollector",
		"--kube-api-qps=5000", "--kube-api-burst=5000")
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	pid, err := findProcess("kube-controller-manager", "--kubeconfig="+cluster.Kubeconfig)
	if err != nil {
		return nil, err
	}
	logPath, err := lastLog(cluster.Dir, "controller-manager")
	if err != nil {
		return nil, err
	}

	r := &kcmResult{}
	var synced bool
	var anchor uint64
	var anchorAt time.Time
	deadline := begin.Add(kcmTimeout)
	for {
		if r.mem, err = readMemory(pid); err != nil {
			return nil, fmt.Errorf("kube-controller-manager: %w", err)
		}
		now := time.Now()
		if anchorAt.IsZero() || r.mem.RSS > anchor+kcmGrowth {
			anchor, anchorAt = r.mem.RSS, now
		}
		if !synced {
			synced = fileContains(logPath, kcmSyncedLog)
		}
		r.elapsed = now.Sub(begin)
		if synced && now.Sub(anchorAt) >= kcmStable {
			r.settled = true
			return r, nil
		}
		if now.After(deadline) {
			return r, nil
		}
		if err := sleep(ctx, kcmPoll); err != nil {
			return nil, err
		}
	}
}

func report(results []result) {
	fmt.Println("\nIngest: kubegcd initial list→SQLite sync on a fresh database (start → /readyz 200); " +
		"MB = 2^20 bytes")
	fmt.Printf("%10s %9s %8s %10s %12s %8s %9s %8s",
		"configmaps", "objects", "sync s", "objects/s", "configmaps/s", "RSS MB", "peak MB", "heap MB")
	withKCM := results[0].kcm != nil
	if withKCM {
		fmt.Printf(" %12s", "kcm GC MB")
	}
	fmt.Println()
	for _, r := range results {
		s := r.sync.Seconds()
		fmt.Printf("%10d %9d %8.2f %10.0f %12.0f %8.1f %9.1f %8.1f", r.configMaps, r.objects, s,
			float64(r.objects)/s, float64(r.configMaps)/s, mb(r.mem.RSS), mb(r.mem.HWM), mb(r.heap))
		if withKCM {
			fmt.Printf(" %12.1f", mb(r.kcm.mem.RSS))
		}
		fmt.Println()
	}
	if len(results) < 2 {
		return
	}

	first, last := results[0], results[len(results)-1]
	span := countLabel(first.configMaps) + "→" + countLabel(last.configMaps)
	added := last.configMaps - first.configMaps
	objects := float64(last.objects - first.objects) // ≈ added
	growth := float64(last.mem.RSS) - float64(first.mem.RSS)
	target := float64(targetGrowth) * float64(added) / targetObjects
	verdict := "ok"
	if growth >= target {
		verdict = "FAIL"
	}
	scaled := ""
	if added != targetObjects {
		scaled = fmt.Sprintf(", i.e. %d MB per %s objects", targetGrowth/mib, countLabel(targetObjects))
	}
	fmt.Printf("\nRSS growth %s: %.1f MB (target < %.1f MB%s) %s\n", span, growth/mib, target/mib, scaled, verdict)
	fmt.Printf("per object: %.0f bytes\n", growth/objects)

	fmt.Println("\nFor comparison, kube-controller-manager's garbage collector keeps its own graph in memory:")
	fmt.Printf("  reference: ≈%d bytes/object: %.1f MB (%.0f decimal MB) for %s objects\n",
		kcmReferenceBytes, kcmReferenceBytes*objects/mib, kcmReferenceBytes*objects/1e6, countLabel(added))
	if withKCM {
		kcmGrowth := float64(last.kcm.mem.RSS) - float64(first.kcm.mem.RSS)
		note := ""
		if !first.kcm.settled || !last.kcm.settled {
			note = " (RSS had not settled within the time limit)"
		}
		fmt.Printf("  measured:  RSS growth %s: %.1f MB, per object: %.0f bytes%s\n",
			span, kcmGrowth/mib, kcmGrowth/objects, note)
	}
}

// goHeapInuse reads go_memstats_heap_inuse_bytes from kubegcd's /metrics.
func goHeapInuse(ctx context.Context, base string) (uint64, error) {
	body, err := testcluster.HTTPGet(ctx, base+"/metrics")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return uint64(f), err
		}
	}
	return 0, errors.New("/metrics: no go_memstats_heap_inuse_bytes")
}

// freeAddr returns a loopback address with a port that is free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func fileContains(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(s)))
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// pollUntil calls done every second until it reports done or fails, for
// at most timeout.
func pollUntil(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func mb(b uint64) float64 { return float64(b) / mib }

// countLabel writes 10000 as "10k" and 2500 as "2.5k".
func countLabel(n int) string {
	if n < 1000 {
		return strconv.Itoa(n)
	}
	return strconv.FormatFloat(float64(n)/1000, 'f', -1, 64) + "k"
}
