package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// The scale benchmark builds a cluster of real size. kwok simulates its
// nodes and pods: make bench builds kwok into the bin directory, with the
// stage files of the same release in kwok-stages/. Nodes go Ready, renew
// their Leases every 10 s and report their status; pods run and Jobs' pods
// complete. kubegcd and kube-controller-manager, with the same controllers,
// watch it side by side through the heartbeat period. Then each in turn
// collects the ReplicaSets and pods of 20 Deployments of its own. Those
// pods are not scheduled: see chains.
//
// The targets are kubegcd's.
const (
	scaleRSSTarget = 150 * mib
	scaleRSSGrowth = 10 * mib // over the heartbeat period: "flat"
	scaleCPUTarget = 10.0     // % of one core during the heartbeat period
)

// kcmScaleControllers are kube-controller-manager's counterparts of
// kubegcd's default controllers (ownergc, podgc, ttl, svgc).
var kcmScaleControllers = "--controllers=garbage-collector-controller,pod-garbage-collector-controller," +
	"ttl-controller,storageversion-garbage-collector-controller"

// scaleConfig sizes the scenario; the benchmark's is fullScale.
type scaleConfig struct {
	nodes, pods, others int
	// Each collector's cascade is cascadeDeployments Deployments with
	// cascadePods pods behind them, in a namespace of its own. The
	// Deployments are deleted at the end.
	cascadeDeployments, cascadePods int
	heartbeat                       time.Duration
	workers, gcWorkers              int
}

// cascadesPods counts the pods of both cascades, which no node runs.
func (sc scaleConfig) cascadesPods() int { return 2 * sc.cascadePods }

// runPods counts the other pods, which kwok runs.
func (sc scaleConfig) runPods() int { return sc.pods - sc.cascadesPods() }

// fullScale is the scenario of the benchmark: 2,000 nodes, 50,000 pods and
// 100,000 other objects.
func fullScale(cfg config) scaleConfig {
	return scaleConfig{nodes: 2000, pods: 50_000, others: 100_000, cascadeDeployments: 20, cascadePods: 10_000,
		heartbeat: cfg.heartbeat, workers: cfg.workers, gcWorkers: cfg.gcWorkers}
}

// scaleResult is what the table prints.
type scaleResult struct {
	objects                     int64
	sync                        time.Duration
	rssSynced, rssEnd, rssMax   uint64
	rssStart                    uint64        // when the heartbeat period began
	settled                     time.Duration // after sync, until kubegcd's CPU settled
	memSynced, memEnd           memory        // kubegcd's, split into anonymous and file-backed
	pssMax                      uint64
	dbSynced, dbEnd             int64
	cpu                         float64 // % of one core over the heartbeat period
	kcmRSSSynced, kcmRSSEnd     uint64
	kcmRSSMax                   uint64
	kcmCPU                      float64
	kcmSync                     time.Duration
	leaseRenewals, nodeUpdates  float64
	period                      time.Duration
	cascade, kcmCascade         time.Duration
	cascadeFirst, kcmCascadeFst time.Duration
	phases                      phases
}

// runScale builds the cluster, measures, and prints the table.
func runScale(ctx context.Context, sc scaleConfig, cluster *testcluster.Cluster, dir string) (err error) {
	fmt.Printf("\n== scale: %d kwok nodes, %d pods (%d behind %d Deployments to cascade, twice), "+
		"%d other objects; heartbeats %s\n",
		sc.nodes, sc.pods, sc.cascadePods, sc.cascadeDeployments, sc.others, sc.heartbeat)
	s := &scaleRun{sc: sc, cluster: cluster, dir: dir}
	s.r.phases.begin()
	defer func() { err = errors.Join(err, s.stop()) }()
	if err := s.build(ctx); err != nil {
		return err
	}
	if err := s.syncKubegcd(ctx); err != nil {
		return err
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	if err := s.heartbeats(ctx); err != nil {
		return err
	}
	if err := s.cascades(ctx); err != nil {
		return err
	}
	fmt.Printf("  scale benchmark took %s\n", s.r.phases.since().Round(time.Second))
	reportScale(sc, s.r)
	return nil
}

// scaleRun is one run of the scale benchmark. It holds the clients, the
// processes it started and what it has measured so far.
type scaleRun struct {
	sc      scaleConfig
	cluster *testcluster.Cluster
	dir     string
	kube    kubernetes.Interface
	r       scaleResult

	// stopKCM stops the kube-controller-manager that watches the cluster
	// grow; kcmPid is its process.
	stopKCM func() error
	kcmPid  int
	// kubegcd is the running kubegcd (nil once stopped), and base its URL.
	kubegcd *testcluster.Kubegcd
	base    string
	// stops are called in reverse order when the run ends.
	stops []func() error
}

// onStop adds f to what the run stops when it ends.
func (s *scaleRun) onStop(f func() error) { s.stops = append(s.stops, f) }

// stop stops what the run started, the last started first.
func (s *scaleRun) stop() error {
	var err error
	for i := len(s.stops) - 1; i >= 0; i-- {
		err = errors.Join(err, s.stops[i]())
	}
	return err
}

func (s *scaleRun) dbPath() string { return filepath.Join(s.dir, "kubegcd-scale.db") }

// build creates the cluster's objects, starts kube-controller-manager and
// kwok beside, and waits until kwok runs every pod.
func (s *scaleRun) build(ctx context.Context) error {
	b, err := s.newBuilder()
	if err != nil {
		return err
	}
	if err := s.createUnscheduled(ctx, b); err != nil {
		return err
	}
	// kube-controller-manager watches the cluster grow, as it would in a
	// real one. By the time kubegcd has synced, its graph holds everything
	// and its memory has settled. Started after the build, it took more
	// than the 2 minutes settledRSS allows to stop growing. Its initial
	// sync is timed when it starts again for its cascade.
	if s.stopKCM, s.kcmPid, err = startScaleKCM(ctx, s.cluster); err != nil {
		return err
	}
	s.onStop(s.stopKCM)
	// kwok starts as soon as the nodes exist and runs each pod as it is
	// created. Listing 50,000 pods node by node once they all existed took
	// 8m40s after a 3-minute creation in the first runs. Its pod status
	// patches and Lease renewals slow the creation down: the API server is
	// the limit either way.
	kwok, err := startKwok(s.cluster, s.dir)
	if err != nil {
		return err
	}
	s.onStop(func() error { kwok.stop(); return nil })
	if err := b.workloads(ctx); err != nil {
		return err
	}
	s.r.phases.done(fmt.Sprintf("%d pods created, kwok running beside", s.sc.runPods()))
	if err := waitKwok(ctx, s.kube, "", s.sc.nodes); err != nil {
		return err
	}
	s.r.phases.done("kwok: the last pods running and Jobs' pods complete")
	fmt.Printf("  kwok: nodes Ready, pods running and Jobs' pods complete; cluster built in %s\n",
		s.r.phases.since().Round(time.Second))
	return nil
}

// newBuilder makes the clients that build the cluster. They have no
// client-side rate limit: the API server is the limit.
func (s *scaleRun) newBuilder() (*scaleBuilder, error) {
	restCfg := rest.CopyConfig(s.cluster.Config)
	restCfg.QPS, restCfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	// Protobuf costs the API server less than JSON to decode.
	restCfg.ContentType = "application/vnd.kubernetes.protobuf"
	if s.kube, err = kubernetes.NewForConfig(restCfg); err != nil {
		return nil, err
	}
	return &scaleBuilder{kube: s.kube, dyn: dyn, c: &creator{kube: s.kube, workers: s.sc.workers}, sc: s.sc}, nil
}

// createUnscheduled creates the objects no node runs, then the nodes.
// They come first, on a quiet API server. Created after the nodes, beside
// kwok's 200 Lease renewals a second and kube-controller-manager's
// informers, they went at 215–307/s and took 5–8 minutes of the run. The
// benchmark must fit in 20 minutes.
func (s *scaleRun) createUnscheduled(ctx context.Context, b *scaleBuilder) error {
	if err := b.namespacesAndCRD(ctx); err != nil {
		return err
	}
	if err := b.otherObjects(ctx); err != nil {
		return err
	}
	s.r.phases.done(fmt.Sprintf("namespaces, CRD, %d other objects created", s.sc.others))
	// The cascades' pods come early too: beside kwok, they shared the API
	// server with kwok's status patches of the other pods.
	if err := b.cascades(ctx); err != nil {
		return err
	}
	s.r.phases.done(fmt.Sprintf("%d pods of the cascades created, not scheduled", s.sc.cascadesPods()))
	if err := b.nodes(ctx); err != nil {
		return err
	}
	s.r.phases.done(fmt.Sprintf("%d nodes created", s.sc.nodes))
	return nil
}

// syncKubegcd starts kubegcd on the built cluster, times its initial sync
// and reads its memory and database once synced.
func (s *scaleRun) syncKubegcd(ctx context.Context) error {
	bin, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}
	if s.kubegcd, s.base, err = s.startKubegcd(ctx, bin); err != nil {
		return err
	}
	s.onStop(s.stopKubegcd)
	r := &s.r
	if r.memSynced, err = readMemory(s.kubegcd.Pid()); err != nil {
		return err
	}
	r.rssSynced = r.memSynced.RSS
	r.dbSynced = dbSize(s.dbPath())
	r.phases.done(fmt.Sprintf("kubegcd: initial sync, %s settle", settleDelay))
	fmt.Printf("  kubegcd: synced %d objects in %s (%.0f objects/s); "+
		"RSS %.1f MB (anonymous %.1f, file-backed %.1f), PSS %.1f MB, database %.1f MB\n",
		r.objects, r.sync.Round(time.Millisecond), float64(r.objects)/r.sync.Seconds(), mb(r.rssSynced),
		mb(r.memSynced.Anon), mb(r.memSynced.File), mb(r.memSynced.PSS), float64(r.dbSynced)/mib)
	return nil
}

// stopKubegcd stops kubegcd if it still runs.
func (s *scaleRun) stopKubegcd() error {
	if s.kubegcd == nil {
		return nil
	}
	err := s.kubegcd.Stop(stopGrace)
	s.kubegcd = nil
	return err
}

// settle waits for kube-controller-manager's sync and memory to settle,
// then for kubegcd's CPU.
func (s *scaleRun) settle(ctx context.Context) error {
	r := &s.r
	if err := waitKCMSynced(ctx, s.cluster); err != nil {
		return err
	}
	var err error
	if r.kcmRSSSynced, err = settledRSS(ctx, s.kcmPid); err != nil {
		return err
	}
	r.phases.done("kube-controller-manager: RSS settled")
	fmt.Printf("  kube-controller-manager (running since the nodes were created): RSS %.1f MB\n", mb(r.kcmRSSSynced))
	// After its sync kubegcd looks at every candidate once (55,000 at this
	// size) and counts the whole mirror's lint findings. The steady state
	// that the heartbeat period measures begins after that.
	if r.settled, err = settledCPU(ctx, s.kubegcd.Pid()); err != nil {
		return err
	}
	r.phases.done("kubegcd: CPU settled after its sync")
	fmt.Printf("  kubegcd: CPU settled %s after its sync\n", r.settled.Round(time.Second))
	return nil
}

// heartbeats measures both collectors through the heartbeat period, then
// stops kube-controller-manager.
func (s *scaleRun) heartbeats(ctx context.Context) error {
	if err := heartbeatPeriod(ctx, s.sc.heartbeat, s.kubegcd.Pid(), s.kcmPid, s.base, &s.r); err != nil {
		return err
	}
	s.r.dbEnd = dbSize(s.dbPath())
	if err := s.stopKCM(); err != nil {
		return err
	}
	s.r.phases.done("heartbeats (measured)")
	return nil
}

// cascades times kubegcd collecting its cascade, then stops it and times
// a new kube-controller-manager collecting the other. Each collector has a
// cascade of its own, built with the rest. The one kube-controller-manager
// collects stays while kubegcd collects its own, so no second build and
// kwok settle are needed.
func (s *scaleRun) cascades(ctx context.Context) error {
	r := &s.r
	fmt.Println("  cascade: kubegcd")
	var err error
	if r.cascadeFirst, r.cascade, err = timeCascade(ctx, s.kube, cascadeNS, s.sc); err != nil {
		return fmt.Errorf("kubegcd: %w", err)
	}
	r.phases.done("cascade: kubegcd")
	if err := s.stopKubegcd(); err != nil {
		return err
	}
	kcmBegin := time.Now()
	stop, _, err := startScaleKCM(ctx, s.cluster)
	if err != nil {
		return err
	}
	s.onStop(stop)
	if err := waitKCMSynced(ctx, s.cluster); err != nil {
		return err
	}
	r.kcmSync = time.Since(kcmBegin)
	r.phases.done("kubegcd stopped; kube-controller-manager started again, synced")
	fmt.Printf("  kube-controller-manager: synced in %s\n", r.kcmSync.Round(time.Millisecond))
	fmt.Println("  cascade: kube-controller-manager")
	if r.kcmCascadeFst, r.kcmCascade, err = timeCascade(ctx, s.kube, kcmCascadeNS, s.sc); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	r.phases.done("cascade: kube-controller-manager")
	return nil
}

// phases are the benchmark's steps and their wall time, in order.
type phases struct {
	start, last time.Time
	steps       []phase
}

type phase struct {
	name string
	took time.Duration
}

func (p *phases) begin() { p.start = time.Now(); p.last = p.start }

// done ends the step that began when the last one ended.
func (p *phases) done(name string) {
	now := time.Now()
	p.steps = append(p.steps, phase{name, now.Sub(p.last)})
	p.last = now
}

func (p *phases) since() time.Duration { return time.Since(p.start) }
