package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// The rules benchmark times a cleanup rule that deletes: N ConfigMaps past
// their TTL (kubegcd.io/ttl: 1s), deleted by the built-in ttl-expired set
// to action delete. Its floor is a raw client that does what each of the
// rule's deletions must: a GET of the object, then a DELETE on its UID and
// resourceVersion.
//
// The built-in rule, not a SELECT of the benchmark's own, is measured: it
// is the rule users turn to delete, and its query runs in the pass. Each
// contender deletes in a namespace of its own, one after the other, so at
// kubegcd's turn the rule matches its namespace's ConfigMaps alone; the
// benchmark checks that it matches exactly N.
//
// kubegcd starts with the rule in report mode and an hour between passes.
// Once it has served /readyz and a pass has matched the N objects, the
// rule file is replaced by one that says delete, every second. The runner
// reads its directory again every 5 s, so the write → first deletion time
// holds that wait, the reload and the pass that stores the matches. The
// rate is taken from the first deletion the benchmark's watch sees to the
// last, and kubegcd's CPU and writes over the whole window.

const (
	// rulesRawWorkers is the raw client's parallel GET-then-DELETE workers.
	rulesRawWorkers = 32
	// targetRulesVsRaw is the least kubegcd's deletions/s may be, as a
	// share of the raw client's.
	targetRulesVsRaw = 0.9
	// rulesRuleID is the rule the benchmark sets to delete.
	rulesRuleID = "ttl-expired"
	// rulesPassTimeout bounds the wait for the report pass that matches
	// every object.
	rulesPassTimeout = 3 * time.Minute
	// rulesProfileSeconds is the default length of kubegcd's CPU profile,
	// from the rule file's write.
	rulesProfileSeconds = "20"
)

// rulesResult is one contender's deletion of the rule's N objects.
type rulesResult struct {
	// gcResult's first and last are from the contender's start signal: the
	// rule file's write for kubegcd, the first GET for the raw client. Its
	// CPU is over the same window.
	gcResult
	// span is what the rate is over: from the first deletion the watch saw
	// to the last for kubegcd, from the first GET to the last deletion for
	// the raw client.
	span time.Duration
	// io is what the contender's process wrote over the window.
	io procIO
	// raw marks the raw client, which has no write → first.
	raw bool
}

func (r rulesResult) rate() float64 { return float64(r.n) / r.span.Seconds() }

// kbPer returns bytes in KB (2^10) per deleted object.
func (r rulesResult) kbPer(b uint64) float64 { return float64(b) / 1024 / float64(r.n) }

// procIO is what /proc/PID/io counts of a process's writes. wchar is every
// byte passed to write calls, sockets and tmpfs included; writeBytes only
// what reached the block layer, so nothing on tmpfs.
type procIO struct {
	wchar, writeBytes uint64
}

func (a procIO) since(b procIO) procIO {
	return procIO{wchar: a.wchar - b.wchar, writeBytes: a.writeBytes - b.writeBytes}
}

// readIO reads wchar and write_bytes of process pid ("self": this one).
func readIO(pid string) (procIO, error) {
	b, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return procIO{}, err
	}
	return parseIO(bytes.NewReader(b))
}

func parseIO(r io.Reader) (procIO, error) {
	var p procIO
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		var dst *uint64
		switch key {
		case "wchar":
			dst = &p.wchar
		case "write_bytes":
			dst = &p.writeBytes
		}
		if !ok || dst == nil {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return procIO{}, fmt.Errorf("/proc/PID/io: %s: %w", key, err)
		}
		*dst = v
		seen++
	}
	if seen != 2 {
		return procIO{}, errors.New("/proc/PID/io: no wchar and write_bytes lines")
	}
	return p, sc.Err()
}

// rulesBench is the rules benchmark on one control plane.
type rulesBench struct {
	cfg     config
	cluster *testcluster.Cluster
	// kube creates and watches; dyn is the raw client's, in JSON as
	// kubegcd's dynamic client, with no client-side limit.
	kube   kubernetes.Interface
	dyn    dynamic.Interface
	dir    string
	window gcWindow
	n      int
	size   string // n for people: "20k"
	nsSize string // n in namespace names
	rounds int
}

// rulesContender is one contender: run deletes the rule's objects in a
// namespace of its own for the round (from 0).
type rulesContender struct {
	slug string
	run  func(ctx context.Context, round int) (rulesResult, error)
}

// runRules runs the rules benchmark: kubegcd, the baseline binary when
// cfg.ruleBaseline is set, and the raw client, each cfg.rounds times in
// rotated order.
func runRules(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	bin, dir string) error {
	n := cfg.ruleObjects
	b := &rulesBench{cfg: cfg, cluster: cluster, kube: kube, dir: dir, n: n, size: countLabel(n),
		nsSize: namespaceSize(n), rounds: max(cfg.rounds, 1)}
	rawCfg := rest.CopyConfig(cluster.Config)
	rawCfg.QPS = -1 // client-go builds no rate limiter for a negative QPS
	var err error
	if b.dyn, err = dynamic.NewForConfig(rawCfg); err != nil {
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
	b.window = gcWindow{cp: cp, etcdPID: etcdPID, apiserverPID: apiserverPID, pin: cfg.pin}

	fmt.Printf("\n== rules: %s ConfigMaps annotated kubegcd.io/ttl: 1s, deleted by the rule %s "+
		"(action delete, occurrences 1, no cap, every 1s); kubegcd at QPS/burst %d, no blast-radius cap; "+
		"raw: %d workers, each a GET then a DELETE on its UID and resourceVersion, in JSON, no client-side limit\n",
		b.size, rulesRuleID, gcQPS, rulesRawWorkers)
	if cfg.kubegcdDBDir != "" {
		fmt.Printf("   kubegcd's databases in %s\n", cfg.kubegcdDBDir)
	}
	contenders := []rulesContender{{slug: "kubegcd", run: func(ctx context.Context, round int) (rulesResult, error) {
		return b.runKubegcd(ctx, round, "kubegcd", bin)
	}}}
	if cfg.ruleBaseline != "" {
		contenders = append(contenders, rulesContender{slug: "baseline",
			run: func(ctx context.Context, round int) (rulesResult, error) {
				return b.runKubegcd(ctx, round, "baseline", cfg.ruleBaseline)
			}})
	}
	contenders = append(contenders, rulesContender{slug: "raw", run: b.runRaw})
	byRound := make([][]rulesResult, b.rounds)
	for round := range b.rounds {
		byRound[round] = make([]rulesResult, len(contenders))
		order := roundOrder(len(contenders), round)
		if b.rounds > 1 {
			slugs := make([]string, len(order))
			for i, c := range order {
				slugs[i] = contenders[c].slug
			}
			fmt.Printf("  round %d of %d: %s\n", round+1, b.rounds, strings.Join(slugs, ", "))
		}
		for _, c := range order {
			r, err := contenders[c].run(ctx, round)
			if err != nil {
				return fmt.Errorf("rules: %s: %w", contenders[c].slug, err)
			}
			byRound[round][c] = r
		}
	}
	b.report(os.Stdout, byRound)
	return nil
}

// createFixture creates namespace ns and n ConfigMaps in it, each past
// its TTL a second after it is made.
func (b *rulesBench) createFixture(ctx context.Context, ns string) error {
	if err := createNamespace(ctx, b.kube, ns); err != nil {
		return err
	}
	begin := time.Now()
	cms := b.kube.CoreV1().ConfigMaps(ns)
	c := &creator{kube: b.kube, workers: b.cfg.workers}
	err := c.parallel(ctx, seq(b.n), func(ctx context.Context, i int) error {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ttl-%06d", i),
				Annotations: map[string]string{"kubegcd.io/ttl": "1s"}},
			Data: map[string]string{"key": fmt.Sprintf("value-%d", i)},
		}
		_, err := createRetrying(ctx, func() (*corev1.ConfigMap, error) {
			return cms.Create(ctx, cm, metav1.CreateOptions{})
		}, func() (*corev1.ConfigMap, error) { return cms.Get(ctx, cm.Name, metav1.GetOptions{}) })
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("  %s: created %d ConfigMaps in %s\n", ns, b.n, time.Since(begin).Round(time.Millisecond))
	return nil
}

// ruleFile is the rules file that sets ttl-expired to mode, a pass every
// interval.
func ruleFile(mode string, interval time.Duration) string {
	return fmt.Sprintf("rules:\n- id: %s\n  action: %s\n  occurrences: 1\n  interval: %s\n",
		rulesRuleID, mode, interval)
}

// writeRuleFile replaces dir/rules.yaml at once: the runner never reads
// half a file.
func writeRuleFile(dir, text string) error {
	tmp := filepath.Join(dir, ".rules.yaml.tmp") // hidden: the runner skips it
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "rules.yaml"))
}

// runKubegcd times bin's rule deleting the objects: name is "kubegcd" or
// "baseline".
func (b *rulesBench) runKubegcd(ctx context.Context, round int, name, bin string) (r rulesResult, err error) {
	r.n, r.name = b.n, name
	if name == "baseline" {
		r.name = "baseline (" + filepath.Base(bin) + ")"
	}
	suffix := roundSuffix(round, b.rounds)
	ns := fmt.Sprintf("rules-%s-%s%s", name, b.nsSize, suffix)
	if err := b.createFixture(ctx, ns); err != nil {
		return r, err
	}
	rulesDir := filepath.Join(b.dir, "rules-"+name+suffix)
	if err := os.MkdirAll(rulesDir, 0o755); err != nil {
		return r, err
	}
	// A pass a second: the first may run before the objects' TTL has passed.
	if err := writeRuleFile(rulesDir, ruleFile("report", time.Second)); err != nil {
		return r, err
	}
	d, addr, stop, err := b.startKubegcd(ctx, bin, name+suffix, rulesDir)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	base := "http://" + addr
	if err := waitRuleMatches(ctx, base, b.n); err != nil {
		return r, err
	}

	dw, err := watchDeletions(ctx, b.kube, ns, "", b.n)
	if err != nil {
		return r, err
	}
	defer dw.close()
	pid := d.Pid()
	m := &gcMeasure{window: b.window, pids: []int{pid, b.window.apiserverPID, b.window.etcdPID}, begun: dw.begun}
	io0, err := readIO(strconv.Itoa(pid))
	if err != nil {
		return r, err
	}
	m.begin(ctx)
	if m.cpuErr != nil {
		return r, m.cpuErr
	}
	if err := writeRuleFile(rulesDir, ruleFile("delete", time.Second)); err != nil {
		return r, err
	}
	if round == 0 && name == "kubegcd" {
		// Waited for before kubegcd stops, which would cut them short.
		defer b.profileKubegcd(ctx, base)()
		defer b.dumpGoroutines(ctx, base)()
	}
	wc := dw.result()
	if wc.err != nil {
		return r, wc.err
	}
	io1, err := readIO(strconv.Itoa(pid))
	if err != nil {
		return r, err
	}
	if err := m.end(ctx, ns, &r.gcResult); err != nil {
		return r, err
	}
	r.first, r.last, r.span, r.io = wc.first, wc.last, wc.last-wc.first, io1.since(io0)
	fmt.Printf("  %s: rule file written → first ConfigMap gone after %s, last after %s; first → last %s (%.0f/s)\n",
		ns, r.first.Round(time.Millisecond), r.last.Round(time.Millisecond), r.span.Round(time.Millisecond), r.rate())
	fmt.Printf("  %s: deletions the watch saw, second by second: %s\n", ns, strings.Trim(fmt.Sprint(wc.perSecond), "[]"))
	if wc.rewatches > 0 {
		fmt.Printf("  %s: the API server dropped the benchmark's watch %d times\n", ns, wc.rewatches)
	}
	return r, nil
}

// startKubegcd runs bin enforcing, with the rules of rulesDir, pinned
// with the clients, and waits for its /readyz. Its stop function prints
// what kubegcd's database writer did, stops it and removes its database.
func (b *rulesBench) startKubegcd(ctx context.Context, bin, name, rulesDir string) (
	*testcluster.Kubegcd, string, func() error, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", nil, err
	}
	qps := fmt.Sprint(gcQPS)
	db := filepath.Join(cmp.Or(b.cfg.kubegcdDBDir, b.dir), fmt.Sprintf("rules-%s-%d.db", name, b.n))
	args := []string{"run", "--kubeconfig", b.cluster.Kubeconfig, "--db", db, "--listen", addr,
		"--log-level", "warn", "--dry-run=false", "--kube-api-qps=" + qps, "--kube-api-burst=" + qps,
		"--max-deletions-per-minute=0", "--rules-dir", rulesDir, "--profiling"}
	logPath := filepath.Join(b.dir, fmt.Sprintf("rules-%s-%d.log", name, b.n))
	d, err := testcluster.StartKubegcd(bin, logPath, append(args, b.cfg.kubegcdArgs...)...)
	if err != nil {
		return nil, "", nil, err
	}
	stop := func() error {
		m, err := scrapeMetrics(ctx, "http://"+addr)
		if err == nil {
			writerReport(m)
		}
		if body, scrapeErr := testcluster.HTTPGet(ctx, "http://"+addr+"/metrics"); scrapeErr == nil {
			fmt.Printf("  kubegcd's rule: %s\n", ruleMetricsReport(string(body)))
		}
		err = errors.Join(err, d.Stop(stopGrace))
		// tmpfs holds the databases in memory: each goes with its run.
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if rmErr := os.Remove(db + suffix); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
				err = errors.Join(err, rmErr)
			}
		}
		return err
	}
	if err := b.cfg.pin.pinClient("kubegcd", d.Pid()); err != nil {
		return nil, "", nil, errors.Join(err, stop())
	}
	if err := d.WaitReady(ctx, "http://"+addr+"/readyz", readyPoll, readyTimeout); err != nil {
		return nil, "", nil, errors.Join(err, stop())
	}
	return d, addr, stop, nil
}

// getRules reads kubegcd's GET /rules.
func getRules(ctx context.Context, base string) (api.RuleList, error) {
	var list api.RuleList
	body, err := testcluster.HTTPGet(ctx, base+"/rules")
	if err != nil {
		return list, err
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return list, fmt.Errorf("GET /rules: %w", err)
	}
	return list, nil
}

// ruleInfo returns the rule the benchmark sets, as GET /rules shows it.
func ruleInfo(ctx context.Context, base string) (api.RuleInfo, error) {
	list, err := getRules(ctx, base)
	if err != nil {
		return api.RuleInfo{}, err
	}
	for _, e := range list.Errors {
		return api.RuleInfo{}, fmt.Errorf("GET /rules: a rule file is refused: %s", e.Message)
	}
	for _, info := range list.Items {
		if info.ID == rulesRuleID {
			return info, nil
		}
	}
	return api.RuleInfo{}, fmt.Errorf("GET /rules: no rule %s", rulesRuleID)
}

// waitRuleMatches waits for a pass of the rule that matched n objects. One
// that matched more fails: something else in the cluster is past a TTL.
func waitRuleMatches(ctx context.Context, base string, n int) error {
	deadline := time.Now().Add(rulesPassTimeout)
	for {
		info, err := ruleInfo(ctx, base)
		if err != nil {
			return err
		}
		if p := info.LastPass; p != nil {
			switch {
			case p.Error != "":
				return fmt.Errorf("the rule's pass failed: %s", p.Error)
			case p.Matches == n:
				return nil
			case p.Matches > n:
				return fmt.Errorf("the rule matched %d objects, more than the benchmark's %d", p.Matches, n)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no pass of the rule matched the %d objects within %s", n, rulesPassTimeout)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// ruleMetricsReport says, from kubegcd's /metrics, what the rules'
// deletions came to: each outcome, the matches left alone, the passes that
// could not act on every match, and the mean time from a decision (before
// its live GET) to its delete done. The last is the time per object of a
// pass that acts on its matches one after the other.
func ruleMetricsReport(exposition string) string {
	outcomes := map[string]float64{}
	var skipped []string
	var actErrors, latencySum, latencyCount float64
	for line := range strings.SplitSeq(exposition, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(series, `kubegcd_reconcile_actions_total{`) && strings.Contains(series, `controller="rules"`):
			outcomes[labelValue(series, "outcome")] += v
		case strings.HasPrefix(series, `kubegcd_rule_skipped_total{`) && v > 0:
			skipped = append(skipped, fmt.Sprintf("%s %.0f", labelValue(series, "reason"), v))
		case strings.HasPrefix(series, `kubegcd_rule_errors_total{`) && labelValue(series, "reason") == "act":
			actErrors += v
		case series == `kubegcd_reconcile_decision_to_apply_seconds_sum{controller="rules"}`:
			latencySum = v
		case series == `kubegcd_reconcile_decision_to_apply_seconds_count{controller="rules"}`:
			latencyCount = v
		}
	}
	var parts []string
	for _, o := range slices.Sorted(maps.Keys(outcomes)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", o, outcomes[o]))
	}
	out := "deletions " + cmp.Or(strings.Join(parts, ", "), "none")
	out += "; matches left alone: " + cmp.Or(strings.Join(skipped, ", "), "none")
	out += fmt.Sprintf("; passes that could not act on every match: %.0f", actErrors)
	if latencyCount > 0 {
		out += fmt.Sprintf("; decision → delete done %.2f ms (mean of %.0f)", 1000*latencySum/latencyCount, latencyCount)
	}
	return out
}

// labelValue returns the value of label name in a series such as
// kubegcd_x{a="1",b="2"}; "" when it has none.
func labelValue(series, name string) string {
	_, rest, ok := strings.Cut(series, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// profileKubegcd writes a CPU profile of kubegcd from the rule file's
// write to KUBEGCD_BENCH_CPUPROFILE (%n: the size), lasting
// KUBEGCD_BENCH_CPUPROFILE_SECONDS (default 20). The wait for the runner's
// next look at its directory costs no CPU, so it adds nothing. It returns
// a function that waits for the profile.
func (b *rulesBench) profileKubegcd(ctx context.Context, base string) (wait func()) {
	path := os.Getenv("KUBEGCD_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	path = strings.ReplaceAll(path, "%n", b.size)
	seconds := cmp.Or(os.Getenv("KUBEGCD_BENCH_CPUPROFILE_SECONDS"), rulesProfileSeconds)
	done := make(chan struct{})
	go func() {
		defer close(done)
		body, err := testcluster.HTTPGet(ctx, base+"/debug/pprof/profile?seconds="+seconds)
		if err == nil {
			err = os.WriteFile(path, body, 0o644)
		}
		if err != nil {
			fmt.Printf("  kubegcd's CPU profile not written: %v\n", err)
			return
		}
		fmt.Printf("  kubegcd's CPU profile over %s s from the rule file's write: %s\n", seconds, path)
	}()
	return func() { <-done }
}

// dumpGoroutines writes twenty goroutine dumps of kubegcd half a second
// apart to KUBEGCD_BENCH_GOROUTINES (%n: the size, %i: the dump), from 6 s
// after the rule file's write: after the runner's next look. It returns a
// function that waits for the dumps.
func (b *rulesBench) dumpGoroutines(ctx context.Context, base string) (wait func()) {
	path := os.Getenv("KUBEGCD_BENCH_GOROUTINES")
	if path == "" {
		return func() {}
	}
	path = strings.ReplaceAll(path, "%n", b.size)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if sleep(ctx, 6*time.Second) != nil {
			return
		}
		for i := range 20 {
			if body, err := testcluster.HTTPGet(ctx, base+"/debug/pprof/goroutine?debug=1"); err == nil {
				_ = os.WriteFile(strings.ReplaceAll(path, "%i", fmt.Sprint(i)), body, 0o644)
			}
			if sleep(ctx, 500*time.Millisecond) != nil {
				return
			}
		}
	}()
	return func() { <-done }
}

// runRaw times the raw client: rulesRawWorkers workers, each a GET of an
// object then a DELETE with the UID and resourceVersion it read, with the
// rule's propagation (Background).
func (b *rulesBench) runRaw(ctx context.Context, round int) (r rulesResult, err error) {
	r.n, r.raw = b.n, true
	r.name = fmt.Sprintf("raw GET+DELETE (%d workers)", rulesRawWorkers)
	r.column = "raw"
	ns := fmt.Sprintf("rules-raw-%s%s", b.nsSize, roundSuffix(round, b.rounds))
	if err := b.createFixture(ctx, ns); err != nil {
		return r, err
	}
	var names []string
	for cont := ""; ; {
		l, err := b.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 5000, Continue: cont})
		if err != nil {
			return r, err
		}
		for _, cm := range l.Items {
			names = append(names, cm.Name)
		}
		if cont = l.Continue; cont == "" {
			break
		}
	}
	dw, err := watchDeletions(ctx, b.kube, ns, "", b.n)
	if err != nil {
		return r, err
	}
	defer dw.close()
	m := &gcMeasure{window: b.window, pids: []int{os.Getpid(), b.window.apiserverPID, b.window.etcdPID},
		begun: dw.begun}
	io0, err := readIO("self")
	if err != nil {
		return r, err
	}
	cms := b.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	bg := metav1.DeletePropagationBackground
	// A GET or DELETE the API server times out or refuses for load is sent
	// again, as kubegcd's applier retries it: on a loaded machine one
	// timeout must not end the run.
	getDelete := func(ctx context.Context, name string) error {
		for attempt := 1; ; attempt++ {
			obj, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				uid, rv := obj.GetUID(), obj.GetResourceVersion()
				err = cms.Delete(ctx, name, metav1.DeleteOptions{
					Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
					PropagationPolicy: &bg,
				})
			}
			if err == nil || apierrors.IsNotFound(err) || !transient(err) || attempt == createRetries || ctx.Err() != nil {
				return err
			}
			if err := sleep(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
				return err
			}
		}
	}
	m.begin(ctx)
	if m.cpuErr != nil {
		return r, m.cpuErr
	}
	first, last, err := deleteAll(ctx, clock.RealClock{}, names, rulesRawWorkers, nil, getDelete)
	if err != nil {
		return r, err
	}
	wc := dw.result()
	if wc.err != nil {
		return r, wc.err
	}
	io1, err := readIO("self")
	if err != nil {
		return r, err
	}
	if err := m.end(ctx, ns, &r.gcResult); err != nil {
		return r, err
	}
	r.first, r.last, r.span, r.io = wc.first, wc.last, wc.last, io1.since(io0)
	fmt.Printf("  %s: first GET → DELETE pair returned after %s, last after %s; last ConfigMap gone after %s (%.0f/s)\n",
		ns, first.Round(time.Millisecond), last.Round(time.Millisecond), r.last.Round(time.Millisecond), r.rate())
	fmt.Printf("  %s: deletions the watch saw, second by second: %s\n", ns, strings.Trim(fmt.Sprint(wc.perSecond), "[]"))
	return r, nil
}

// report prints the results of every round, the API server's accounting
// and the verdicts.
func (b *rulesBench) report(w io.Writer, byRound [][]rulesResult) {
	pinned := ""
	if pin := b.cfg.pin; pin != nil {
		pinned = fmt.Sprintf("; etcd and kube-apiserver pinned to CPU %d, the rest to CPU %d", pin.controlPlane, pin.clients)
	}
	fmt.Fprintf(w, "\nRules: %s ConfigMaps past their TTL deleted by %s (action delete)%s\n", b.size, rulesRuleID, pinned)
	rulesTable(w, byRound)
	fmt.Fprintln(w)
	merged := make([][]gcResult, len(byRound))
	for i, results := range byRound {
		for _, r := range results {
			merged[i] = append(merged[i], r.gcResult)
		}
	}
	accountingTable(w, mergeRounds(merged))
	fmt.Fprintln(w, "(for every contender, one watch event per deletion goes to this benchmark's own watch)")
	rulesVerdicts(w, b.size, byRound)
}

// rulesTable writes a row per contender and round, each round in the
// order it ran.
func rulesTable(w io.Writer, byRound [][]rulesResult) {
	fmt.Fprintln(w, "kubegcd: from the rule file's write, its rate from the first deletion to the last; "+
		"raw: from its first GET (after its list). CPU in ms and writes in KB per deletion, over the whole window")
	fmt.Fprintf(w, "%-34s %9s %8s %12s %8s %10s %8s %9s %10s %9s\n", "contender", "write→1st", "span s",
		"deletions/s", "own CPU", "apiserver", "etcd", "control", "written KB", "wchar KB")
	for round, results := range byRound {
		if len(byRound) > 1 {
			fmt.Fprintf(w, "round %d\n", round+1)
		}
		for _, c := range roundOrder(len(results), round) {
			r := results[c]
			first := fmt.Sprintf("%9.2f", r.first.Seconds())
			if r.raw {
				first = fmt.Sprintf("%9s", "—")
			}
			fmt.Fprintf(w, "%-34s %s %8.2f %12.0f %8.2f %10.2f %8.2f %9.2f %10.2f %9.2f\n",
				r.name, first, r.span.Seconds(), r.rate(), r.msPer(r.cpu), r.msPer(r.apiserverCPU), r.msPer(r.etcdCPU),
				r.controlPlaneMs(), r.kbPer(r.io.writeBytes), r.kbPer(r.io.wchar))
		}
	}
}

// rulesVerdicts writes the verdict of kubegcd (contender 0) against the
// raw client (the last), its own cost per object, and, with a baseline
// (contender 1 of 3), the difference between the two binaries. Ratios and
// costs are medians over the rounds.
func rulesVerdicts(w io.Writer, size string, byRound [][]rulesResult) {
	last := len(byRound[0]) - 1
	asGC := make([][]gcResult, len(byRound))
	for i, results := range byRound {
		for _, r := range results {
			g := r.gcResult
			g.last = r.span // gcResult.rate is n/last
			asGC[i] = append(asGC[i], g)
		}
	}
	rawName := byRound[0][last].name
	vsRaw, of := medianRatio(asGC, func(rs []gcResult) float64 { return rs[0].rate() / rs[last].rate() })
	fmt.Fprintf(w, "%s: kubegcd's rule vs %s: %.2f× (%starget ≥ %.1f×) %s\n",
		size, rawName, vsRaw, of, targetRulesVsRaw, verdict(vsRaw >= targetRulesVsRaw))
	costs := func(i int) (cpu, written, wchar, first float64) {
		var cs, ws, wcs, fs []float64
		for _, results := range byRound {
			r := results[i]
			cs, ws = append(cs, r.msPer(r.cpu)), append(ws, r.kbPer(r.io.writeBytes))
			wcs, fs = append(wcs, r.kbPer(r.io.wchar)), append(fs, r.first.Seconds())
		}
		return median(cs), median(ws), median(wcs), median(fs)
	}
	medianOf := ""
	if len(byRound) > 1 {
		medianOf = fmt.Sprintf(" (medians of %d rounds)", len(byRound))
	}
	cpu, written, wchar, first := costs(0)
	fmt.Fprintf(w, "%s: kubegcd per deleted object%s: CPU %.2f ms, %.2f KB written to disk (write_bytes), "+
		"%.2f KB through write calls (wchar: database, log, requests); rule file written → first deletion %.2f s\n",
		size, medianOf, cpu, written, wchar, first)
	if last != 2 {
		return
	}
	vsBase, of := medianRatio(asGC, func(rs []gcResult) float64 { return rs[0].rate() / rs[1].rate() })
	bCPU, bWritten, bWchar, _ := costs(1)
	fmt.Fprintf(w, "%s: kubegcd vs %s: %.2f× the deletions/s (%sno target); per object, CPU %+.2f ms, "+
		"written %+.2f KB, wchar %+.2f KB: what kubegcd does that the baseline does not (such as keeping copies)\n",
		size, byRound[0][1].name, vsBase, of, cpu-bCPU, written-bWritten, wchar-bWchar)
}
