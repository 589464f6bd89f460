package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// The coldstart benchmark measures kubegcd's cold start against the floor
// no mirror can beat (issue 51). One control plane is filled once per size
// with ConfigMaps, every tenth owned, as the ingest benchmark fills it.
// Each round then runs, in its own order:
//
//   - list: this process lists every resource kubegcd lists, as
//     PartialObjectMetadata, at kubegcd's page size, one goroutine per
//     resource as kubegcd has, and drops each page once decoded;
//   - watchlist: the same resources through WatchList (sendInitialEvents),
//     when the API server serves it, up to each one's initial-events-end
//     bookmark;
//   - kube-controller-manager: its garbage collector alone, start → its
//     log line that every resource monitor has synced;
//   - kubegcd: a fresh database, start → /readyz.
//
// The floors are in coldstartfloor.go, the table in coldstartreport.go.
// After the rounds one more kubegcd start runs under strace, to count its
// fsyncs, and, with KUBEGCD_BENCH_CPUPROFILE set, one more with pprof
// (coldstartprofile.go).

const (
	// coldstartPageSize is kubegcd's list page size: the default of
	// ingest.Options.PageSize, which kubegcd run does not change.
	coldstartPageSize = 500
	// targetColdstartVsList: kubegcd's cold start, start → /readyz, may
	// take at most this many times the bare paginated list.
	targetColdstartVsList = 1.5
	// kcmInitialSyncTimeout is how long kube-controller-manager's garbage
	// collector waits for its informers at start before it proceeds
	// without them (syncPeriod in cmd/kube-controller-manager/app/core.go).
	kcmInitialSyncTimeout = 30 * time.Second
	kcmLogPoll            = 100 * time.Millisecond
)

// coldResult is one contender's cold start in one round.
type coldResult struct {
	elapsed time.Duration // start → synced (the floors: first request → last page or bookmark)
	objects int64         // objects listed or mirrored; 0: not known
	// cpu: CPU seconds of the contender's process from its start (the
	// floors: this process's). serverCPU: kube-apiserver's and etcd's over
	// the same window.
	cpu, serverCPU float64
	hwm            uint64 // the contender's peak RSS (0: not measured, as for the floors)
	io             procIO // kubegcd's /proc/PID/io at /readyz
	dbBytes        int64  // kubegcd's database and WAL at /readyz
	note           string // what the figure means when it is not a full sync
	// api is what kube-apiserver's metrics counted meanwhile (nil: they
	// could not be read).
	api *apiListCounts
}

// coldstartSize is one size's results: byRound[round][contender], in
// the contenders' order.
type coldstartSize struct {
	n           int
	resources   int
	formats     string // which resources the server lists as protobuf, which as JSON
	watchList   string // "" when the server serves WatchList, else why not
	contenders  []coldContender
	byRound     [][]coldResult
	fsyncs      fsyncCount
	profile     string // what the profiled start wrote ("": none)
	pinned, dbs string // how the processes were placed, where the databases were
}

// coldContender is one contender of the benchmark.
type coldContender struct {
	slug, name string
	run        func(ctx context.Context, n, round int) (coldResult, error)
}

// coldstartBench is what every size shares.
type coldstartBench struct {
	cfg     config
	cluster *testcluster.Cluster
	meta    metadata.Interface // no client-side rate limit
	raw     rest.Interface     // for the probe of each resource's format
	disc    discovery.DiscoveryInterface
	bin     string
	dir     string // logs and strace's output
	dbDir   string // kubegcd's databases

	etcdPID, apiserverPID int
	resources             []schema.GroupVersionResource // what kubegcd lists
}

// runColdstart runs the benchmark at each of cfg.coldstartObjects.
func runColdstart(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	bin, dir string) error {
	fmt.Printf("\n== coldstart: sizes %v, %d round(s); floors, kube-controller-manager and kubegcd on the same objects\n",
		cfg.coldstartObjects, max(cfg.rounds, 1))
	b, err := newColdstartBench(cfg, cluster, bin, dir)
	if err != nil {
		return err
	}
	c := &creator{kube: kube, workers: cfg.workers}
	if err := c.createNamespaces(ctx); err != nil {
		return err
	}
	for _, n := range cfg.coldstartObjects {
		s, err := b.at(ctx, c, n)
		if err != nil {
			return err
		}
		s.report()
	}
	return nil
}

func newColdstartBench(cfg config, cluster *testcluster.Cluster, bin, dir string) (*coldstartBench, error) {
	b := &coldstartBench{cfg: cfg, cluster: cluster, bin: bin, dir: dir, dbDir: cmp.Or(cfg.kubegcdDBDir, dir)}
	noLimit := rest.CopyConfig(cluster.Config)
	noLimit.QPS = -1 // client-go builds no rate limiter for a negative QPS
	noLimit.WarningHandler = rest.NoWarnings{}
	var err error
	if b.meta, err = metadata.NewForConfig(noLimit); err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(noLimit)
	if err != nil {
		return nil, err
	}
	b.raw, b.disc = kube.CoreV1().RESTClient(), kube.Discovery()
	if b.etcdPID, b.apiserverPID, err = clusterPIDs(cluster); err != nil {
		return nil, err
	}
	return b, nil
}

// at fills the cluster up to n ConfigMaps and runs every contender, round
// after round, then the counted and the profiled kubegcd starts.
func (b *coldstartBench) at(ctx context.Context, c *creator, n int) (*coldstartSize, error) {
	fmt.Printf("\n== coldstart: %s ConfigMaps (every %dth owned)\n", countLabel(n), ownerEvery)
	from, begin := len(c.uids), time.Now()
	if err := b.cfg.pin.unpinned(b.cluster, func() error { return c.createUpTo(ctx, n) }); err != nil {
		return nil, err
	}
	fmt.Printf("  created %d ConfigMaps in %s\n", n-from, time.Since(begin).Round(time.Millisecond))
	// Right after the creates, kube-apiserver is still busy with them: a
	// first list then took ten times as long as later ones.
	settled, err := settledCPU(ctx, b.apiserverPID)
	if err != nil {
		return nil, err
	}
	fmt.Printf("  kube-apiserver settled after %s\n", settled.Round(time.Second))
	s := &coldstartSize{n: n, dbs: b.dbDir}
	if pin := b.cfg.pin; pin != nil {
		s.pinned = fmt.Sprintf("etcd and kube-apiserver pinned to CPU %d; this process, kube-controller-manager "+
			"and kubegcd to CPU %d", pin.controlPlane, pin.clients)
	}
	if err = b.discover(ctx); err != nil {
		return nil, err
	}
	s.resources = len(b.resources)
	if s.formats, err = b.formats(ctx); err != nil {
		return nil, err
	}
	s.watchList = b.watchListServed(ctx)
	fmt.Printf("  %d resources kubegcd lists; their metadata lists come as %s\n", s.resources, s.formats)
	if s.watchList != "" {
		fmt.Printf("  WatchList: %s\n", s.watchList)
	}

	s.contenders = []coldContender{{slug: "list", name: "floor A: paginated list", run: b.runList}}
	if s.watchList == "" {
		s.contenders = append(s.contenders, coldContender{slug: "watchlist", name: "floor B: WatchList", run: b.runWatchList})
	}
	s.contenders = append(s.contenders,
		coldContender{slug: "kcm", name: "kube-controller-manager", run: b.runKCM},
		coldContender{slug: "kubegcd", name: "kubegcd", run: b.runKubegcd})
	rounds := max(b.cfg.rounds, 1)
	s.byRound = make([][]coldResult, rounds)
	for round := range rounds {
		s.byRound[round] = make([]coldResult, len(s.contenders))
		order := roundOrder(len(s.contenders), round)
		slugs := make([]string, len(order))
		for i, k := range order {
			slugs[i] = s.contenders[k].slug
		}
		fmt.Printf("  round %d of %d: %s\n", round+1, rounds, strings.Join(slugs, ", "))
		for _, k := range order {
			before := b.apiListCounts(ctx)
			r, err := s.contenders[k].run(ctx, n, round)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.contenders[k].name, err)
			}
			if after := b.apiListCounts(ctx); before != nil && after != nil {
				r.api = &apiListCounts{watchLists: after.watchLists - before.watchLists,
					cacheLists: after.cacheLists - before.cacheLists, cacheFetched: after.cacheFetched - before.cacheFetched,
					expired: after.expired - before.expired}
			}
			s.byRound[round][k] = r
			fmt.Printf("    %s: %s\n", s.contenders[k].slug, r.summary())
		}
	}
	if s.fsyncs, err = b.countFsyncs(ctx, n); err != nil {
		return nil, fmt.Errorf("kubegcd under strace: %w", err)
	}
	if s.profile, err = b.profile(ctx, n); err != nil {
		return nil, fmt.Errorf("kubegcd profiled: %w", err)
	}
	return s, nil
}

// serverCPU is the CPU seconds kube-apiserver and etcd have used so far.
func (b *coldstartBench) serverCPU() float64 {
	return procCPU(b.apiserverPID) + procCPU(b.etcdPID)
}

// runKCM times kube-controller-manager's garbage collector from its start
// to the log line that its informers have synced, read from the line's
// own timestamp.
func (b *coldstartBench) runKCM(ctx context.Context, n, _ int) (r coldResult, err error) {
	srv0 := b.serverCPU()
	begin := time.Now()
	stop, err := b.cluster.StartControllerManager(ctx, "--controllers=garbagecollector",
		fmt.Sprintf("--kube-api-qps=%d", gcQPS), fmt.Sprintf("--kube-api-burst=%d", gcQPS))
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	pid, err := findProcess("kube-controller-manager", "--kubeconfig="+b.cluster.Kubeconfig)
	if err != nil {
		return r, err
	}
	if err := b.cfg.pin.pinClient("kube-controller-manager", pid); err != nil {
		return r, err
	}
	logPath, err := lastLog(b.cluster.Dir, "controller-manager")
	if err != nil {
		return r, err
	}
	deadline := begin.Add(coldstartTimeout(n))
	for {
		line, proceeded := kcmSyncLine(logPath)
		if line != "" {
			now := time.Now()
			if err := b.readProcess(&r, pid, srv0); err != nil {
				return r, err
			}
			r.elapsed = now.Sub(begin)
			if t, ok := klogTime(line, begin); ok && t.After(begin) && !t.After(now) {
				r.elapsed = t.Sub(begin)
			}
			if proceeded {
				r.note = fmt.Sprintf("its informers had not synced after %s: it went on without them", kcmInitialSyncTimeout)
			}
			return r, nil
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("no %q in %s after %s", kcmSyncedLog, logPath, coldstartTimeout(n))
		}
		if err := sleep(ctx, kcmLogPoll); err != nil {
			return r, err
		}
	}
}

// kcmSyncLine returns the garbage collector's line that ends its initial
// wait for its informers, and whether it went on without them.
func kcmSyncLine(logPath string) (line string, proceeded bool) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.ToLower(sc.Text())
		switch {
		case strings.Contains(l, kcmProceedLog):
			return sc.Text(), true
		case strings.Contains(l, kcmSyncedLog):
			return sc.Text(), false
		}
	}
	return "", false
}

// klogTime reads the time of a klog line ("I1129 10:35:01.123456 …"),
// which has no year: the year is ref's. klog writes local time.
func klogTime(line string, ref time.Time) (time.Time, bool) {
	const layout = "0102 15:04:05.000000"
	if len(line) < 1+len(layout) {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation(layout, line[1:1+len(layout)], ref.Location())
	if err != nil {
		return time.Time{}, false
	}
	return t.AddDate(ref.Year(), 0, 0), true
}

// coldstartTimeout bounds one contender's cold start at n objects.
func coldstartTimeout(n int) time.Duration {
	return readyTimeout + time.Duration(n)*time.Millisecond
}

// kubegcdArgs are the arguments of a kubegcd that starts cold on db, as
// the ingest benchmark runs it.
func (b *coldstartBench) kubegcdArgs(db, addr string, extra ...string) []string {
	return append([]string{"run", "--kubeconfig", b.cluster.Kubeconfig, "--db", db, "--listen", addr,
		"--log-level", "warn"}, extra...)
}

// startKubegcd starts kubegcd on a fresh database named name, pinned with
// the clients. It returns kubegcd, its base URL, the database's path and
// when it started.
func (b *coldstartBench) startKubegcd(name string, extra ...string) (*testcluster.Kubegcd, string, string,
	time.Time, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", "", time.Time{}, err
	}
	db := filepath.Join(b.dbDir, name+".db")
	if err := removeDB(db); err != nil {
		return nil, "", "", time.Time{}, err
	}
	begin := time.Now()
	d, err := testcluster.StartKubegcd(b.bin, filepath.Join(b.dir, name+".log"), b.kubegcdArgs(db, addr, extra...)...)
	if err != nil {
		return nil, "", "", time.Time{}, err
	}
	if err := b.cfg.pin.pinClient("kubegcd", d.Pid()); err != nil {
		return nil, "", "", time.Time{}, errors.Join(err, d.Stop(stopGrace))
	}
	return d, "http://" + addr, db, begin, nil
}

// runKubegcd times kubegcd's start on a fresh database to /readyz and
// reads, at that moment, its CPU, peak RSS and writes.
func (b *coldstartBench) runKubegcd(ctx context.Context, n, round int) (r coldResult, err error) {
	srv0 := b.serverCPU()
	d, base, db, begin, err := b.startKubegcd(fmt.Sprintf("coldstart-%s-r%d", namespaceSize(n), round+1))
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, d.Stop(stopGrace), removeDB(db)) }()
	if err := d.WaitReady(ctx, base+"/readyz", readyPoll, coldstartTimeout(n)); err != nil {
		return r, err
	}
	r.elapsed = time.Since(begin)
	pid := d.Pid()
	if err := b.readProcess(&r, pid, srv0); err != nil {
		return r, err
	}
	if r.io, err = readIO(strconv.Itoa(pid)); err != nil {
		return r, err
	}
	r.dbBytes = fileSize(db) + fileSize(db+"-wal")

	// What follows reads kubegcd after the figures are taken: a scrape of
	// /metrics counts the mirror.
	st, err := testcluster.GetKubegcdStatus(ctx, base)
	if err != nil {
		return r, err
	}
	r.objects = st.Objects
	for _, res := range st.Resources {
		if res.Group == "" && res.Resource == "configmaps" && res.Objects < int64(n) {
			return r, fmt.Errorf("kubegcd is ready but mirrors %d ConfigMaps; %d exist", res.Objects, n)
		}
	}
	m, err := scrapeMetrics(ctx, base)
	if err != nil {
		fmt.Printf("    kubegcd's writer: not read: %v\n", err)
		return r, nil
	}
	fmt.Printf("    kubegcd's writer: %s\n", sqliteSummary(m, metricSum(ctx, base, "go_gc_duration_seconds_count"),
		metricSum(ctx, base, "go_memstats_alloc_bytes_total")))
	return r, nil
}

// sqliteSummary says what kubegcd's database writer did, from kubegcd's
// /metrics: its requests by operation, each timed from its queueing to its
// commit (a request grouped with others counts the whole group), its
// commits and checkpoints; and what Go's collector did.
func sqliteSummary(m map[string]float64, gcs, allocated float64) string {
	const prefix = `kubegcd_db_write_duration_seconds_sum{operation="`
	var ops []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		op, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		op = strings.TrimSuffix(op, `"}`)
		count := m[`kubegcd_db_write_duration_seconds_count{operation="`+op+`"}`]
		ops = append(ops, fmt.Sprintf("%s %.0f × %.1f ms", op, count, 1000*m[k]/max(count, 1)))
	}
	return fmt.Sprintf("writer requests, queued → committed: %s; %.0f commits; %.0f checkpoints, %.2f s; "+
		"%.0f Go GCs, %.0f MB allocated",
		strings.Join(ops, ", "), m["kubegcd_db_writes_per_commit_count"],
		m["kubegcd_db_checkpoint_duration_seconds_count"], m["kubegcd_db_checkpoint_duration_seconds_sum"],
		gcs, allocated/1e6)
}

// summary is one line of a contender's figures in a round.
func (r coldResult) summary() string {
	s := fmt.Sprintf("%.2f s", r.elapsed.Seconds())
	if r.objects > 0 {
		s += fmt.Sprintf(", %d objects", r.objects)
	}
	s += fmt.Sprintf("; CPU %.2f s, kube-apiserver and etcd %.2f s", r.cpu, r.serverCPU)
	if r.hwm > 0 {
		s += fmt.Sprintf("; peak RSS %.1f MB", mb(r.hwm))
	}
	if r.io.wchar > 0 {
		s += fmt.Sprintf("; wrote %.1f MB (%.1f MB to storage), database and WAL %.1f MB",
			float64(r.io.wchar)/1e6, float64(r.io.writeBytes)/1e6, float64(r.dbBytes)/1e6)
	}
	if a := r.api; a != nil && (a.watchLists > 0 || a.cacheLists > 0) {
		s += fmt.Sprintf("; kube-apiserver served meanwhile %.0f WatchLists and %.0f lists from its cache, "+
			"which went through %.0f cached objects", a.watchLists, a.cacheLists, a.cacheFetched)
		if a.expired > 0 {
			s += fmt.Sprintf(", and refused %.0f lists as expired (410)", a.expired)
		}
	}
	if r.note != "" {
		s += " (" + r.note + ")"
	}
	return s
}

// removeDB removes a kubegcd database and the files beside it (its WAL,
// shared memory and lock).
func removeDB(db string) error {
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm", ".lock"} {
		if err := os.Remove(db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// readProcess reads into r the CPU and peak RSS of the contender pid, and
// what kube-apiserver and etcd used since srv0.
func (b *coldstartBench) readProcess(r *coldResult, pid int, srv0 float64) error {
	r.serverCPU = b.serverCPU() - srv0
	var err error
	if r.cpu, err = pidCPU(pid); err != nil {
		return err
	}
	mem, err := readMemory(pid)
	if err != nil {
		return err
	}
	r.hwm = mem.HWM
	return nil
}
