package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// Targets of the ownership-GC benchmark (docs/benchmarks.md), each at
// every size. kubegcd's deletions/s are compared with raw deletes by an
// unthrottled client and with kube-controller-manager's. The control
// plane's CPU per deletion is compared with the raw client's. The last
// target bounds the time from the owner's deletion to kubegcd's first.
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

// runOwnerGC times, at each size, the collection of n dependents of one
// owner by kubegcd, by each of cfg.raw's raw parallel client deletes and by
// kube-controller-manager, one after the other on one control plane. Both
// collectors run with QPS/burst gcQPS and their default workers. The raw
// reference is the API server's own limit: goroutines on a client with no
// client-side rate limit at all, unless paced to kubegcd's rate.
func runOwnerGC(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	dir string) error {
	b := &ownerGCBench{cfg: cfg, cluster: cluster, kube: kube, dir: dir}
	rawCfg := rest.CopyConfig(cluster.Config)
	rawCfg.QPS = -1 // client-go builds no rate limiter for a negative QPS
	var err error
	if b.raw, err = kubernetes.NewForConfig(rawCfg); err != nil {
		return err
	}
	if b.meta, err = metadata.NewForConfig(cluster.Config); err != nil {
		return err
	}
	if b.bin, err = testcluster.KubegcdBin(); err != nil {
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
	b.window = gcWindow{cp: cp, etcdPID: etcdPID, apiserverPID: apiserverPID, pin: cfg.pin,
		profileSeconds: cfg.cpProfileSeconds}
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
		if err := b.ownerGCAt(ctx, n, profiles); err != nil {
			return err
		}
	}
	return nil
}

// ownerGCBench is what every size of the ownership-GC benchmark shares.
type ownerGCBench struct {
	cfg     config
	cluster *testcluster.Cluster
	// kube is rate-limited, raw is not, and meta reads metadata only.
	kube, raw kubernetes.Interface
	meta      metadata.Interface
	bin, dir  string
	// window is the measurement every contender starts from.
	window gcWindow
}

// ownerGCSize is the ownership-GC benchmark at one size: n dependents of
// one owner, collected by each contender in turn.
type ownerGCSize struct {
	*ownerGCBench
	n      int
	size   string // n for people: "20k"
	nsSize string // n in namespace names
	rounds int
	// profiles is the directory of kube-apiserver's CPU profiles ("": none).
	profiles string

	// kubegcdPID is the process of the kubegcd that collects, and readyAt
	// the time it served /readyz.
	kubegcdPID int
	readyAt    time.Time
	// kubegcdRate is the rate of kubegcd's latest collection at this
	// size. A paced contender keeps to it.
	kubegcdRate float64
}

// ownerGCAt runs every contender's collection of n dependents, round after
// round, and prints the tables and verdicts of the size.
func (b *ownerGCBench) ownerGCAt(ctx context.Context, n int, profiles string) error {
	s := &ownerGCSize{ownerGCBench: b, n: n, size: countLabel(n), nsSize: namespaceSize(n),
		rounds: max(b.cfg.rounds, 1), profiles: profiles}
	s.printHeader()
	contenders := []ownerGCContender{{slug: "kubegcd", run: s.runKubegcd}}
	contenders = append(contenders, s.rawContenders()...)
	contenders = append(contenders, ownerGCContender{slug: "kcm", run: s.runKCM})
	byRound, err := runRounds(ctx, contenders, s.rounds)
	if err != nil {
		return err
	}
	s.report(byRound)
	return nil
}

// printHeader says what the size's contenders are.
func (s *ownerGCSize) printHeader() {
	fmt.Printf("\n== ownership GC: %s dependents of one owner; kubegcd and kube-controller-manager at QPS/burst %d "+
		"with their default workers (--gc-workers, --concurrent-gc-syncs); raw deletes: %s\n",
		s.size, gcQPS, rawSummary(s.cfg.raw))
	if len(s.cfg.kubegcdArgs) > 0 {
		fmt.Printf("   kubegcd run with the extra arguments %s\n", strings.Join(s.cfg.kubegcdArgs, " "))
	}
	if s.cfg.kubegcdDBDir != "" {
		fmt.Printf("   kubegcd's databases in %s\n", s.cfg.kubegcdDBDir)
	}
}

// window measures a contender's process, which ownPID finds. In the first
// round it also profiles kube-apiserver if profile is set.
func (s *ownerGCSize) window(round int, profile string, ownPID func() (int, error)) gcWindow {
	w := s.ownerGCBench.window
	w.ownPID = ownPID
	if s.profiles != "" && profile != "" && round == 0 {
		w.profile = filepath.Join(s.profiles, fmt.Sprintf("kube-apiserver-%s-%s.pprof", profile, s.size))
	}
	return w
}

// startKubegcd runs a kubegcd that enforces the ownership GC, pinned with
// the clients, and waits for its /readyz. name tells its database and log
// apart. It returns kubegcd and the address it listens on.
func (s *ownerGCSize) startKubegcd(ctx context.Context, name string) (*testcluster.Kubegcd, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	qps := fmt.Sprint(gcQPS)
	db := filepath.Join(cmp.Or(s.cfg.kubegcdDBDir, s.dir), fmt.Sprintf("%s-%d.db", name, s.n))
	args := []string{"run", "--kubeconfig", s.cluster.Kubeconfig, "--db", db, "--listen", addr,
		"--log-level", "warn", "--dry-run=false", "--kube-api-qps=" + qps, "--kube-api-burst=" + qps,
		"--max-deletions-per-minute=0", "--controllers=ownergc", "--profiling"}
	logPath := filepath.Join(s.dir, fmt.Sprintf("%s-%d.log", name, s.n))
	d, err := testcluster.StartKubegcd(s.bin, logPath, append(args, s.cfg.kubegcdArgs...)...)
	if err != nil {
		return nil, "", err
	}
	if err := s.cfg.pin.pinClient("kubegcd", d.Pid()); err != nil {
		return nil, "", errors.Join(err, d.Stop(stopGrace))
	}
	if err := d.WaitReady(ctx, "http://"+addr+"/readyz", readyPoll, readyTimeout); err != nil {
		return nil, "", errors.Join(err, d.Stop(stopGrace))
	}
	return d, addr, nil
}

// runKubegcd times a kubegcd collecting the dependents.
func (s *ownerGCSize) runKubegcd(ctx context.Context, round int) (gcResult, error) {
	suffix := roundSuffix(round, s.rounds)
	ownPID := func() (int, error) { return s.kubegcdPID, nil }
	start := func(ctx context.Context, _ *corev1.ConfigMap) (func() error, error) {
		return s.startCollector(ctx, round, suffix)
	}
	r, err := gcContender(ctx, s.kube, "gc-kubegcd-"+s.nsSize+suffix, s.n, s.cfg.workers,
		s.window(round, "kubegcd", ownPID), start, s.deleteOwnerWhenDue)
	r.name = "kubegcd"
	if err == nil {
		s.kubegcdRate = r.rate()
	}
	return r, err
}

// startCollector starts the kubegcd that collects in round, and profiles it
// in the first round when asked to. Its stop function prints what
// kubegcd's database writer did.
func (s *ownerGCSize) startCollector(ctx context.Context, round int, suffix string) (func() error, error) {
	d, addr, err := s.startKubegcd(ctx, "kubegcd-gc"+suffix)
	if err != nil {
		return nil, err
	}
	s.kubegcdPID = d.Pid()
	s.readyAt = time.Now()
	if round == 0 {
		s.profileKubegcd(ctx, addr)
		s.dumpGoroutines(ctx, addr)
	}
	return func() error {
		// The collection is over. The writer's metrics are scraped only
		// now, because a scrape counts the objects and would compete with
		// the collection's start.
		m, err := scrapeMetrics(ctx, "http://"+addr)
		if err == nil {
			writerReport(m)
		}
		return errors.Join(err, d.Stop(stopGrace))
	}, nil
}

// deleteOwnerWhenDue deletes the owner --owner-delay after kubegcd's
// /readyz, while kubegcd's start-up pass may still run. The first deletion
// is timed from the owner's.
func (s *ownerGCSize) deleteOwnerWhenDue(ctx context.Context, owner *corev1.ConfigMap, begin func()) error {
	if err := sleep(ctx, time.Until(s.readyAt.Add(s.cfg.ownerDelay))); err != nil {
		return err
	}
	return deleteOwner(s.kube)(ctx, owner, begin)
}

// profileKubegcd writes a CPU profile of kubegcd while it collects, for
// tuning. The profile goes to KUBEGCD_BENCH_CPUPROFILE, where %n is the
// size, and lasts KUBEGCD_BENCH_CPUPROFILE_SECONDS (default 4).
func (s *ownerGCSize) profileKubegcd(ctx context.Context, addr string) {
	path := os.Getenv("KUBEGCD_BENCH_CPUPROFILE")
	if path == "" {
		return
	}
	path = strings.ReplaceAll(path, "%n", s.size)
	seconds := cmp.Or(os.Getenv("KUBEGCD_BENCH_CPUPROFILE_SECONDS"), "4")
	go func() {
		if b, err := testcluster.HTTPGet(ctx, "http://"+addr+"/debug/pprof/profile?seconds="+seconds); err == nil {
			_ = os.WriteFile(path, b, 0o644)
		}
	}()
}

// dumpGoroutines shows where kubegcd's goroutines wait during the
// collection, for tuning. It writes twenty dumps half a second apart to
// KUBEGCD_BENCH_GOROUTINES, where %n is the size and %i numbers the dumps.
// The first comes --owner-delay plus 1 s after /readyz.
func (s *ownerGCSize) dumpGoroutines(ctx context.Context, addr string) {
	path := os.Getenv("KUBEGCD_BENCH_GOROUTINES")
	if path == "" {
		return
	}
	path = strings.ReplaceAll(path, "%n", s.size)
	go func() {
		if sleep(ctx, s.cfg.ownerDelay+time.Second) != nil {
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

// rawContenders are the contenders of --raw.
func (s *ownerGCSize) rawContenders() []ownerGCContender {
	var cs []ownerGCContender
	for i, c := range s.cfg.raw {
		// The first raw contender keeps the profile's historical name.
		profile := "raw"
		if i > 0 {
			profile = "raw-" + c.slug()
		}
		run := func(ctx context.Context, round int) (gcResult, error) { return s.runRaw(ctx, round, c, profile) }
		cs = append(cs, ownerGCContender{slug: "raw-" + c.slug(), run: run})
	}
	return cs
}

// runRaw times raw contender c deleting the dependents itself.
func (s *ownerGCSize) runRaw(ctx context.Context, round int, c rawContender, profile string) (gcResult, error) {
	limiter, err := c.limiter(s.kubegcdRate, clock.RealClock{})
	if err != nil {
		return gcResult{}, err
	}
	suffix := roundSuffix(round, s.rounds)
	var beside func(context.Context, *corev1.ConfigMap) (func() error, error)
	if c.beside {
		beside = func(ctx context.Context, _ *corev1.ConfigMap) (func() error, error) {
			d, _, err := s.startKubegcd(ctx, "kubegcd-beside"+suffix)
			if err != nil {
				return nil, err
			}
			return func() error { return d.Stop(stopGrace) }, nil
		}
	}
	ownPID := func() (int, error) { return os.Getpid(), nil }
	del := func(ctx context.Context, owner *corev1.ConfigMap, begin func()) error {
		return s.deleteRaw(ctx, c, limiter, owner.Namespace, begin)
	}
	r, err := gcContender(ctx, s.kube, "gc-raw-"+c.slug()+"-"+s.nsSize+suffix, s.n, s.cfg.workers,
		s.window(round, profile, ownPID), beside, del)
	r.name, r.column = c.name(s.kubegcdRate), c.column()
	return r, err
}

// deleteRaw deletes the dependents in ns as raw contender c does.
func (s *ownerGCSize) deleteRaw(ctx context.Context, c rawContender, limiter flowcontrol.RateLimiter, ns string,
	begin func()) (err error) {
	if c.watched {
		stop, err := watchAll(ctx, s.meta)
		if err != nil {
			return err
		}
		defer stop()
	}
	var exact metadata.Interface
	if c.exact {
		noLimit := rest.CopyConfig(s.cluster.Config)
		noLimit.QPS = -1
		if exact, err = reconcile.NewMetadataClient(noLimit); err != nil {
			return err
		}
	}
	// The benchmark's watch times the deletions, as it times the
	// collectors'. The calls' own times are printed beside.
	first, last, err := rawDeletes(ctx, s.raw, exact, ns, c.workers, limiter, begin)
	if err == nil {
		fmt.Printf("  %s: first delete call returned after %s, last after %s\n", ns,
			first.Round(time.Millisecond), last.Round(time.Millisecond))
	}
	return err
}

// kcmPID finds kube-controller-manager's process.
func (s *ownerGCSize) kcmPID() (int, error) {
	return findProcess("kube-controller-manager", "--kubeconfig="+s.cluster.Kubeconfig)
}

// runKCM times kube-controller-manager collecting the dependents.
func (s *ownerGCSize) runKCM(ctx context.Context, round int) (gcResult, error) {
	r, err := gcContender(ctx, s.kube, "gc-kcm-"+s.nsSize+roundSuffix(round, s.rounds), s.n, s.cfg.workers,
		s.window(round, "", s.kcmPID), s.startKCM, deleteOwner(s.kube))
	r.name = "kube-controller-manager"
	return r, err
}

// startKCM runs kube-controller-manager's garbage collector, pinned with
// the clients, and waits until its monitors have synced.
func (s *ownerGCSize) startKCM(ctx context.Context, _ *corev1.ConfigMap) (func() error, error) {
	qps := fmt.Sprint(gcQPS)
	stop, err := s.cluster.StartControllerManager(ctx, "--controllers=garbagecollector",
		"--kube-api-qps="+qps, "--kube-api-burst="+qps)
	if err != nil {
		return nil, err
	}
	if pin := s.cfg.pin; pin != nil {
		pid, err := s.kcmPID()
		if err == nil {
			err = pin.pinClient("kube-controller-manager", pid)
		}
		if err != nil {
			return nil, errors.Join(err, stop())
		}
	}
	logPath, err := lastLog(s.cluster.Dir, "controller-manager")
	if err != nil {
		return nil, errors.Join(err, stop())
	}
	for !fileContains(logPath, kcmSyncedLog) {
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, errors.Join(err, stop())
		}
	}
	return stop, nil
}

// runRounds runs every contender in each round, in the round's own order
// (roundOrder). It returns each round's results in the contenders' order.
func runRounds(ctx context.Context, contenders []ownerGCContender, rounds int) ([][]gcResult, error) {
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
				return nil, err
			}
			byRound[round][c] = r
		}
	}
	return byRound, nil
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
// contender runs once at each position. The position in a run alone moves
// a rate by up to a fifth, and so it weighs on none of them more.
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

// namespaceSize names a size in namespace names, which take no dot: 2.5k
// is "2-5k".
func namespaceSize(n int) string { return strings.ReplaceAll(countLabel(n), ".", "-") }
