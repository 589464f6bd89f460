package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// Target of the restart benchmark: start → first deletion of garbage made
// while the collector was down.
const (
	targetRestartFirst = 10 * time.Second
	restartTimeout     = 10 * time.Minute
	// restartGarbage: dependents of an owner deleted while the collector
	// was down, and as many again naming an owner that never existed.
	restartGarbage = 5
)

// restartResult is one contender's restart.
type restartResult struct {
	name  string
	first time.Duration // start → first garbage deletion seen by a watch
	all   time.Duration // start → every garbage object gone
	ready time.Duration // start → /readyz 200 (kubegcd only)
	// relists and resumes: kubegcd's kubegcd_ingest_relists_total and
	// kubegcd_ingest_resumes_total once all garbage was gone (-1: not
	// exported).
	relists, resumes float64
	cpu              float64 // CPU seconds of the contender, start → all gone
}

// runRestart fills the cluster with n objects, syncs kubegcd on them and
// stops it. Then, for each contender, it makes garbage while nothing
// collects and times a start to the first deletion of that garbage.
func runRestart(ctx context.Context, cfg config, cluster *testcluster.Cluster, kube kubernetes.Interface,
	dir string) error {
	n := cfg.restartObjects
	fmt.Printf("\n== restart: %s ConfigMaps (every %dth owned), kubegcd synced then stopped; garbage made while down\n",
		countLabel(n), ownerEvery)
	bin, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}
	c := &creator{kube: kube, workers: cfg.workers}
	if err := c.createNamespaces(ctx); err != nil {
		return err
	}
	begin := time.Now()
	if err := cfg.pin.unpinned(cluster, func() error { return c.createUpTo(ctx, n) }); err != nil {
		return err
	}
	fmt.Printf("  created %d ConfigMaps in %s\n", n, time.Since(begin).Round(time.Millisecond))
	// Right after the creates, kube-apiserver is still busy with them.
	_, apiserver, err := clusterPIDs(cluster)
	if err != nil {
		return err
	}
	if _, err := settledCPU(ctx, apiserver); err != nil {
		return err
	}

	// kubegcd restarts three times. First it resumes its watches where the
	// database says, as it does. Then it is made to list everything again,
	// as when the API server no longer has those resourceVersions. Then it
	// starts cold, on no database, as after the database was lost.
	contenders := []string{"kubegcd", "kubegcd, relisting", "kubegcd, cold"}
	if cfg.kcm {
		contenders = append(contenders, "kube-controller-manager")
	}
	// Each contender's garbage lives in its own namespace. Its owners are
	// made while kubegcd runs, so that the mirror knows them, and deleted
	// later.
	scenes := map[string]*restartScene{}
	for _, name := range contenders {
		s, err := newRestartScene(ctx, kube, "restart-"+shortName(name))
		if err != nil {
			return err
		}
		scenes[name] = s
	}
	rb := &restartBench{cluster: cluster, bin: bin, dir: dir, dbPath: filepath.Join(dir, "kubegcd-restart.db")}
	if err := rb.firstSync(ctx); err != nil {
		return err
	}

	var results []restartResult
	for i, name := range contenders {
		s := scenes[name]
		if err := s.makeGarbage(ctx); err != nil {
			return err
		}
		switch name {
		case "kubegcd, relisting":
			if err := forgetResumePoints(ctx, rb.dbPath); err != nil {
				fmt.Printf("  %s: skipped: %v\n", name, err)
				continue
			}
		case "kubegcd, cold":
			if err := removeDB(rb.dbPath); err != nil {
				return err
			}
		}
		r, err := rb.restart(ctx, s, name, i)
		if err != nil {
			return err
		}
		r.name = name
		results = append(results, r)
	}
	reportRestart(n, results)
	return nil
}

// restartBench starts the collectors of the restart benchmark. Every
// kubegcd runs on one database.
type restartBench struct {
	cluster     *testcluster.Cluster
	bin, dir    string
	dbPath      string
	kubegcdArgs []string // of the first kubegcd
}

// firstSync syncs kubegcd on an empty database and stops it.
func (rb *restartBench) firstSync(ctx context.Context) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	rb.kubegcdArgs = []string{"run", "--kubeconfig", rb.cluster.Kubeconfig, "--db", rb.dbPath, "--listen", addr,
		"--log-level", "info", "--dry-run=false", "--kube-api-qps=5000", "--kube-api-burst=5000"}
	begin := time.Now()
	d, err := testcluster.StartKubegcd(rb.bin, filepath.Join(rb.dir, "kubegcd-restart-0.log"), rb.kubegcdArgs...)
	if err != nil {
		return err
	}
	if err := d.WaitReady(ctx, "http://"+addr+"/readyz", readyPoll, readyTimeout); err != nil {
		return errors.Join(err, d.Stop(stopGrace))
	}
	fmt.Printf("  kubegcd: first sync on an empty database in %s\n", time.Since(begin).Round(time.Millisecond))
	return d.Stop(stopGrace)
}

// restart times contender name, the i-th, collecting scene s's garbage.
func (rb *restartBench) restart(ctx context.Context, s *restartScene, name string, i int) (restartResult, error) {
	if strings.HasPrefix(name, "kubegcd") {
		return s.time(ctx, "kubegcd", func(ctx context.Context, res *restartResult) (func() error, error) {
			return rb.startKubegcd(ctx, res, i)
		})
	}
	return s.time(ctx, "kube-controller-manager", func(ctx context.Context, res *restartResult) (func() error, error) {
		return rb.cluster.StartControllerManager(ctx, "--controllers=garbagecollector",
			"--kube-api-qps=5000", "--kube-api-burst=5000")
	})
}

// startKubegcd starts kubegcd again on the database, listening on an
// address of its own. Its stop function records in res when kubegcd was
// ready and how often it listed and resumed its watches.
func (rb *restartBench) startKubegcd(ctx context.Context, res *restartResult, i int) (func() error, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append(rb.kubegcdArgs[:len(rb.kubegcdArgs):len(rb.kubegcdArgs)], "--listen", addr)
	t0 := time.Now()
	d, err := testcluster.StartKubegcd(rb.bin, filepath.Join(rb.dir, fmt.Sprintf("kubegcd-restart-%d.log", i+1)), args...)
	if err != nil {
		return nil, err
	}
	base := "http://" + addr
	readyCh := make(chan time.Duration, 1)
	go func() {
		if d.WaitReady(ctx, base+"/readyz", readyPoll, readyTimeout) == nil {
			readyCh <- time.Since(t0)
		}
		close(readyCh)
	}()
	return func() error {
		res.ready = <-readyCh
		res.relists = metricSum(ctx, base, "kubegcd_ingest_relists_total")
		res.resumes = metricSum(ctx, base, "kubegcd_ingest_resumes_total")
		return d.Stop(stopGrace)
	}, nil
}

// reportRestart prints the restart benchmark's table and kubegcd's
// verdicts.
func reportRestart(n int, results []restartResult) {
	fmt.Printf("\nRestart with %s objects in the cluster: start → first deletion of garbage made while down "+
		"(%d dependents of an owner deleted while down, %d naming an owner that never existed)\n",
		countLabel(n), restartGarbage, restartGarbage)
	fmt.Printf("%-24s %9s %9s %9s %8s %8s %8s\n",
		"contender", "first s", "all s", "ready s", "CPU s", "relists", "resumes")
	for _, r := range results {
		ready, relists, resumes := "-", "-", "-"
		if r.ready > 0 {
			ready = fmt.Sprintf("%.2f", r.ready.Seconds())
		}
		if r.relists >= 0 && r.name != "kube-controller-manager" {
			relists = fmt.Sprintf("%.0f", r.relists)
		}
		if r.resumes >= 0 && r.name != "kube-controller-manager" {
			resumes = fmt.Sprintf("%.0f", r.resumes)
		}
		fmt.Printf("%-24s %9.2f %9.2f %9s %8.1f %8s %8s\n",
			r.name, r.first.Seconds(), r.all.Seconds(), ready, r.cpu, relists, resumes)
	}
	for _, r := range results {
		if r.name != "kube-controller-manager" {
			fmt.Printf("%s: first deletion after %s (target ≤ %s) %s\n",
				r.name, r.first.Round(time.Millisecond), targetRestartFirst, verdict(r.first <= targetRestartFirst))
		}
	}
}

func shortName(contender string) string {
	switch contender {
	case "kubegcd":
		return "kubegcd"
	case "kubegcd, relisting":
		return "relist"
	case "kubegcd, cold":
		return "cold"
	}
	return "kcm"
}

// forgetResumePoints clears the resourceVersions kubegcd stored to resume
// its watches from, so that its next start lists every resource (the
// driver is registered by internal/db, which reads.go imports).
func forgetResumePoints(ctx context.Context, path string) error {
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `UPDATE resources SET resume_resource_version = ''`)
	return err
}

// restartScene is one contender's namespace: an owner with dependents
// that is deleted while nothing collects, dependents naming an owner that
// never existed, and a dependent of a live owner that must survive.
type restartScene struct {
	kube    kubernetes.Interface
	ns      string
	owner   *corev1.ConfigMap
	keeper  *corev1.ConfigMap // owned by a live owner
	garbage map[string]bool   // names
}

func newRestartScene(ctx context.Context, kube kubernetes.Interface, ns string) (*restartScene, error) {
	s := &restartScene{kube: kube, ns: ns, garbage: map[string]bool{}}
	if err := createNamespace(ctx, kube, ns); err != nil {
		return nil, err
	}
	var err error
	if s.owner, err = s.create(ctx, "owner", ""); err != nil {
		return nil, err
	}
	for i := range restartGarbage {
		name := fmt.Sprintf("dep-orphaned-%d", i)
		if _, err := s.create(ctx, name, s.owner.UID); err != nil {
			return nil, err
		}
		s.garbage[name] = true
	}
	live, err := s.create(ctx, "live-owner", "")
	if err != nil {
		return nil, err
	}
	s.keeper, err = s.create(ctx, "keep", live.UID)
	return s, err
}

func (s *restartScene) create(ctx context.Context, name string, owner types.UID) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if owner != "" {
		ownerName := "owner"
		if name == "keep" {
			ownerName = "live-owner"
		}
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: ownerName, UID: owner}}
	}
	return s.kube.CoreV1().ConfigMaps(s.ns).Create(ctx, cm, metav1.CreateOptions{})
}

// makeGarbage runs while no collector does: the owner goes, its
// dependents stay; new dependents name an owner that never existed.
func (s *restartScene) makeGarbage(ctx context.Context) error {
	if err := s.kube.CoreV1().ConfigMaps(s.ns).Delete(ctx, s.owner.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	for i := range restartGarbage {
		name := fmt.Sprintf("dep-dangling-%d", i)
		uid := types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: "never-existed", UID: uid,
		}}}}
		if _, err := s.kube.CoreV1().ConfigMaps(s.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		s.garbage[name] = true
	}
	return nil
}

// time starts the contender and times, from a watch of the scene's
// namespace, the first and the last garbage deletion; then checks that the
// dependent of the live owner survived.
func (s *restartScene) time(ctx context.Context, proc string,
	start func(context.Context, *restartResult) (stop func() error, err error)) (r restartResult, err error) {
	list, err := s.kube.CoreV1().ConfigMaps(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return r, err
	}
	w, err := s.kube.CoreV1().ConfigMaps(s.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return r, err
	}
	defer w.Stop()

	cpu0 := cpuOf(proc)
	t0 := time.Now()
	stop, err := start(ctx, &r)
	if err != nil {
		return r, err
	}
	defer func() { err = errors.Join(err, stop()) }()
	deadline := time.After(restartTimeout)
	gone := 0
	for gone < len(s.garbage) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return r, fmt.Errorf("%s: the watch closed after %d of %d deletions", s.ns, gone, len(s.garbage))
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM || ev.Type != watch.Deleted {
				continue
			}
			if !s.garbage[cm.Name] {
				return r, fmt.Errorf("%s: %s, which is not garbage, was deleted", s.ns, cm.Name)
			}
			if gone++; gone == 1 {
				r.first = time.Since(t0)
			}
		case <-deadline:
			return r, fmt.Errorf("%s: only %d of %d garbage objects gone after %s", s.ns, gone, len(s.garbage), restartTimeout)
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	r.all = time.Since(t0)
	r.cpu = cpuOf(proc) - cpu0
	if _, err := s.kube.CoreV1().ConfigMaps(s.ns).Get(ctx, s.keeper.Name, metav1.GetOptions{}); err != nil {
		return r, fmt.Errorf("%s: the dependent of a live owner: %w", s.ns, err)
	}
	fmt.Printf("  %s: first garbage gone after %s, all %d after %s\n",
		proc, r.first.Round(time.Millisecond), len(s.garbage), r.all.Round(time.Millisecond))
	return r, nil
}

// metricSum sums every series of a counter in kubegcd's /metrics (0 when
// it has none: a counter vector shows no series before its first count);
// -1 when the scrape fails.
func metricSum(ctx context.Context, base, name string) float64 {
	body, err := testcluster.HTTPGet(ctx, base+"/metrics")
	if err != nil {
		return -1
	}
	sum := 0.0
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += f
		}
	}
	return sum
}
