package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// The scale benchmark: a cluster of real size, its nodes and pods
// simulated by kwok (make bench builds it into the bin directory, with the
// stage files of the same release in kwok-stages/): nodes go Ready, renew
// their Leases every 10 s and report their status, pods run and Jobs' pods
// complete. kubegcd and kube-controller-manager (the same controllers)
// watch it side by side through the heartbeat period; then each, one after
// the other, collects the ReplicaSets and pods of 20 Deployments of its own
// (those pods are not scheduled: see chains).
const (
	// Targets.
	scaleRSSTarget  = 150 * mib
	scaleRSSGrowth  = 10 * mib // over the heartbeat period: "flat"
	scaleCPUTarget  = 10.0     // % of one core during the heartbeat period
	scaleNamespaces = 50
	cascadeNS       = "scale-cascade"     // collected by kubegcd
	kcmCascadeNS    = "scale-cascade-kcm" // collected by kube-controller-manager

	podsPerDeployment = 25
	podsPerJob        = 5
	annotationBytes   = 1024
	kwokLeaseSeconds  = 40 // kwok renews every quarter: 10 s
	scaleSample       = 30 * time.Second
	kwokSettleTimeout = 10 * time.Minute
	// scaleReadyTimeout bounds kubegcd's initial sync, which took over 5
	// minutes (readyTimeout) in the first full run, under heartbeats.
	scaleReadyTimeout = 15 * time.Minute
	cascadeTimeout    = 10 * time.Minute
)

// kcmScaleControllers are kube-controller-manager's counterparts of
// kubegcd's default controllers (ownergc, podgc, ttl, svgc).
var kcmScaleControllers = "--controllers=garbage-collector-controller,pod-garbage-collector-controller," +
	"ttl-controller,storageversion-garbage-collector-controller"

var widgets = schema.GroupVersionResource{Group: "bench.kubegcd.io", Version: "v1", Resource: "widgets"}

// scaleConfig sizes the scenario; the benchmark's is fullScale.
type scaleConfig struct {
	nodes, pods, others int
	// cascadeDeployments Deployments with cascadePods pods behind them, in
	// a namespace of their own, are deleted at the end.
	cascadeDeployments, cascadePods int
	heartbeat                       time.Duration
	workers, gcWorkers              int
}

// cascadesPods counts the pods of both cascades, which no node runs.
func (sc scaleConfig) cascadesPods() int { return 2 * sc.cascadePods }

// runPods counts the other pods, which kwok runs.
func (sc scaleConfig) runPods() int { return sc.pods - sc.cascadesPods() }

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
	fmt.Printf("\n== scale: %d kwok nodes, %d pods (%d behind %d Deployments to cascade, twice), %d other objects; heartbeats %s\n",
		sc.nodes, sc.pods, sc.cascadePods, sc.cascadeDeployments, sc.others, sc.heartbeat)
	var r scaleResult
	r.phases.begin()
	// No client-side rate limit: the API server is the limit.
	restCfg := rest.CopyConfig(cluster.Config)
	restCfg.QPS, restCfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	// Protobuf costs the API server less than JSON to decode.
	restCfg.ContentType = "application/vnd.kubernetes.protobuf"
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	b := &scaleBuilder{kube: kube, dyn: dyn, c: &creator{kube: kube, workers: sc.workers}, sc: sc}
	// The objects no node runs come first, on a quiet API server: created
	// after the nodes, beside kwok's 200 Lease renewals a second and
	// kube-controller-manager's informers, they went at 215–307/s and took
	// 5–8 minutes of the run; the benchmark must fit in 20.
	if err := b.namespacesAndCRD(ctx); err != nil {
		return err
	}
	if err := b.otherObjects(ctx); err != nil {
		return err
	}
	r.phases.done(fmt.Sprintf("namespaces, CRD, %d other objects created", sc.others))
	// So are the cascades' pods, which no node runs: beside kwok they
	// shared the API server with its status patches of the others.
	if err := b.cascades(ctx); err != nil {
		return err
	}
	r.phases.done(fmt.Sprintf("%d pods of the cascades created, not scheduled", sc.cascadesPods()))
	if err := b.nodes(ctx); err != nil {
		return err
	}
	r.phases.done(fmt.Sprintf("%d nodes created", sc.nodes))
	// kube-controller-manager watches the cluster grow, as it would in a
	// real one: by the time kubegcd has synced, its graph holds everything
	// and its memory has settled (started after the build, it took more
	// than the 2 minutes settledRSS allows to stop growing). Its initial
	// sync is timed when it starts again for its cascade.
	stopKCM, kcmPid, err := startScaleKCM(ctx, cluster)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopKCM()) }()
	// kwok starts as soon as the nodes exist and runs each pod as it is
	// created, instead of listing 50,000 pods node by node once they all
	// exist (8m40s after a 3-minute creation in the first runs). Its pod
	// status patches and Lease renewals slow the creation down: the API
	// server is the limit either way.
	kwok, err := startKwok(cluster, dir)
	if err != nil {
		return err
	}
	defer kwok.stop()
	if err := b.workloads(ctx); err != nil {
		return err
	}
	r.phases.done(fmt.Sprintf("%d pods created, kwok running beside", sc.runPods()))
	if err := waitKwok(ctx, kube, "", sc.nodes); err != nil {
		return err
	}
	r.phases.done("kwok: the last pods running and Jobs' pods complete")
	fmt.Printf("  kwok: nodes Ready, pods running and Jobs' pods complete; cluster built in %s\n",
		r.phases.since().Round(time.Second))

	bin, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}
	d, base, err := startScaleKubegcd(ctx, bin, cluster, dir, sc, &r)
	if err != nil {
		return err
	}
	stopKubegcd := func() error {
		if d == nil {
			return nil
		}
		err := d.Stop(stopGrace)
		d = nil
		return err
	}
	defer func() { err = errors.Join(err, stopKubegcd()) }()
	dbPath := filepath.Join(dir, "kubegcd-scale.db")
	if r.memSynced, err = readMemory(d.Pid()); err != nil {
		return err
	}
	r.rssSynced = r.memSynced.RSS
	r.dbSynced = dbSize(dbPath)
	r.phases.done(fmt.Sprintf("kubegcd: initial sync, %s settle", settleDelay))
	fmt.Printf("  kubegcd: synced %d objects in %s (%.0f objects/s); RSS %.1f MB (anonymous %.1f, file-backed %.1f), PSS %.1f MB, database %.1f MB\n",
		r.objects, r.sync.Round(time.Millisecond), float64(r.objects)/r.sync.Seconds(), mb(r.rssSynced),
		mb(r.memSynced.Anon), mb(r.memSynced.File), mb(r.memSynced.PSS), float64(r.dbSynced)/mib)

	if err := waitKCMSynced(ctx, cluster); err != nil {
		return err
	}
	if r.kcmRSSSynced, err = settledRSS(ctx, kcmPid); err != nil {
		return err
	}
	r.phases.done("kube-controller-manager: RSS settled")
	fmt.Printf("  kube-controller-manager (running since the nodes were created): RSS %.1f MB\n", mb(r.kcmRSSSynced))
	// After its sync kubegcd looks at every candidate once (55,000 at this
	// size) and counts the whole mirror's lint findings: the steady state
	// the heartbeat period measures begins after that.
	if r.settled, err = settledCPU(ctx, d.Pid()); err != nil {
		return err
	}
	r.phases.done("kubegcd: CPU settled after its sync")
	fmt.Printf("  kubegcd: CPU settled %s after its sync\n", r.settled.Round(time.Second))

	if err := heartbeatPeriod(ctx, sc.heartbeat, d.Pid(), kcmPid, base, &r); err != nil {
		return err
	}
	r.dbEnd = dbSize(dbPath)
	if err := stopKCM(); err != nil {
		return err
	}
	r.phases.done("heartbeats (measured)")

	// Each collector has a cascade of its own, built with the rest: the
	// one kube-controller-manager collects stays while kubegcd collects
	// its own, and no second build and kwok settle are needed.
	fmt.Println("  cascade: kubegcd")
	if r.cascadeFirst, r.cascade, err = timeCascade(ctx, kube, cascadeNS, sc); err != nil {
		return fmt.Errorf("kubegcd: %w", err)
	}
	r.phases.done("cascade: kubegcd")
	if err := stopKubegcd(); err != nil {
		return err
	}
	kcmBegin := time.Now()
	stop2, _, err := startScaleKCM(ctx, cluster)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop2()) }()
	if err := waitKCMSynced(ctx, cluster); err != nil {
		return err
	}
	r.kcmSync = time.Since(kcmBegin)
	r.phases.done("kubegcd stopped; kube-controller-manager started again, synced")
	fmt.Printf("  kube-controller-manager: synced in %s\n", r.kcmSync.Round(time.Millisecond))
	fmt.Println("  cascade: kube-controller-manager")
	if r.kcmCascadeFst, r.kcmCascade, err = timeCascade(ctx, kube, kcmCascadeNS, sc); err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	r.phases.done("cascade: kube-controller-manager")
	fmt.Printf("  scale benchmark took %s\n", r.phases.since().Round(time.Second))
	reportScale(sc, r)
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

// startKwok runs kwok on every node with the stage files of its release.
func startKwok(cluster *testcluster.Cluster, dir string) (*kwokProcess, error) {
	binDir, err := testcluster.BinDir()
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(binDir, "kwok")
	stages, _ := filepath.Glob(filepath.Join(binDir, "kwok-stages", "*.yaml"))
	if _, err := os.Stat(bin); err != nil || len(stages) == 0 {
		return nil, fmt.Errorf("kwok and its stage files not found in %s (`make bin/kwok` builds them)", binDir)
	}
	// kwok's own options (its client has no rate limit of its own): more
	// parallel stage players than its default 4, each waiting on one
	// request at a time, and more than one lister of the pods of a node
	// it starts to manage.
	conf := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(conf, []byte(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 64
  nodePlayStageParallelism: 8
  nodeLeaseParallelism: 8
  podsOnNodeSyncParallelism: 4
`), 0o644); err != nil {
		return nil, err
	}
	// --v=WARN: a line per pod update costs kwok more CPU than the update.
	args := []string{"--kubeconfig", cluster.Kubeconfig, "--manage-all-nodes=true", "--v=WARN",
		"--node-lease-duration-seconds=" + strconv.Itoa(kwokLeaseSeconds), "--config", conf}
	for _, s := range stages {
		args = append(args, "--config", s)
	}
	logPath := filepath.Join(dir, "kwok.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group (Ctrl-C reaches the benchmark, which stops it),
	// and killed should the benchmark die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	k := &kwokProcess{cmd: cmd, done: make(chan struct{})}
	go func() { k.err = cmd.Wait(); close(k.done) }()
	select {
	case <-k.done:
		return nil, fmt.Errorf("kwok exited at start (%w); see %s", k.err, logPath)
	case <-time.After(2 * time.Second):
		return k, nil
	}
}

// kwokProcess is a running kwok.
type kwokProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// stop sends SIGTERM and waits; SIGKILL after stopGrace.
func (k *kwokProcess) stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
		return
	case <-time.After(stopGrace):
	}
	_ = k.cmd.Process.Kill()
	<-k.done
}

// scaleBuilder creates the scenario's objects.
type scaleBuilder struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
	c    *creator
	sc   scaleConfig
	seq  atomic.Int64 // tells apart the names of each chains call's Deployments
}

// nodes creates the nodes.
func (b *scaleBuilder) nodes(ctx context.Context) error {
	start := time.Now()
	if err := b.c.parallel(ctx, seq(b.sc.nodes), b.createNode); err != nil {
		return err
	}
	fmt.Printf("  %d nodes created in %s\n", b.sc.nodes, time.Since(start).Round(time.Millisecond))
	return nil
}

// cascades creates the two cascades' Deployments, ReplicaSets and pods,
// one for each collector.
func (b *scaleBuilder) cascades(ctx context.Context) error {
	start := time.Now()
	per := (b.sc.cascadePods + b.sc.cascadeDeployments - 1) / b.sc.cascadeDeployments
	for _, ns := range []string{cascadeNS, kcmCascadeNS} {
		if err := b.chains(ctx, ns, b.sc.cascadePods, per); err != nil {
			return err
		}
	}
	printPodsCreated("of the cascades, with their Deployments and ReplicaSets,", b.sc.cascadesPods(), start)
	return nil
}

// workloads creates the other Deployments, ReplicaSets, Jobs and their
// pods, which kwok runs.
func (b *scaleBuilder) workloads(ctx context.Context) error {
	start := time.Now()
	rest := b.sc.runPods()
	jobs := rest / 4 / podsPerJob
	if err := b.chains(ctx, "scale", rest-jobs*podsPerJob, podsPerDeployment); err != nil {
		return err
	}
	if err := b.jobs(ctx, jobs); err != nil {
		return err
	}
	printPodsCreated("with their Deployments, ReplicaSets and Jobs", rest, start)
	return nil
}

// printPodsCreated prints how many pods were created since start, and at
// what rate.
func printPodsCreated(what string, pods int, start time.Time) {
	took := time.Since(start)
	fmt.Printf("  %d pods %s created in %s (%.0f pods/s)\n", pods, what, took.Round(time.Millisecond), float64(pods)/took.Seconds())
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func scaleNamespace(i int) string { return fmt.Sprintf("scale-%d", i%scaleNamespaces) }

func (b *scaleBuilder) namespacesAndCRD(ctx context.Context) error {
	names := []string{cascadeNS, kcmCascadeNS}
	for i := range scaleNamespaces {
		names = append(names, scaleNamespace(i))
	}
	for _, n := range names {
		_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Pods need their namespace's default ServiceAccount, which no
		// controller makes here.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		if _, err := b.kube.CoreV1().ServiceAccounts(n).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": widgets.Resource + "." + widgets.Group},
		"spec": map[string]any{
			"group": widgets.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": widgets.Resource, "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": widgets.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := b.dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return pollUntil(ctx, time.Minute, func() (bool, error) {
		_, err := b.dyn.Resource(widgets).Namespace(cascadeNS).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}

func ptrTo[T any](v T) *T { return &v }

// meta is the realistic metadata of a workload or object: the labels
// tools put on everything, and one 1 KB annotation (last-applied
// configuration, say).
func meta(name, ns, app string, i int) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: ns,
		Labels: map[string]string{
			"app.kubernetes.io/name":       app,
			"app.kubernetes.io/instance":   fmt.Sprintf("%s-%d", app, i%50),
			"app.kubernetes.io/part-of":    "scale",
			"app.kubernetes.io/managed-by": "bench",
			"team":                         fmt.Sprintf("team-%d", i%7),
		},
		Annotations: map[string]string{"bench.kubegcd.io/config": bigAnnotation},
	}
}

var bigAnnotation = strings.Repeat("x", annotationBytes)

func (b *scaleBuilder) createNode(ctx context.Context, i int) error {
	name := fmt.Sprintf("kwok-node-%04d", i)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
				"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{}, Capacity: corev1.ResourceList{}},
	}
	_, err := createRetrying(ctx, func() (*corev1.Node, error) { return b.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}) },
		func() (*corev1.Node, error) { return b.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}) })
	return err
}

func nodeName(i, nodes int) string { return fmt.Sprintf("kwok-node-%04d", i%nodes) }

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// chains creates Deployments → ReplicaSets → pods in ns, pods in all,
// per a Deployment, as the deployment controller would have: every
// reference a controller reference that blocks its owner's deletion.
func (b *scaleBuilder) chains(ctx context.Context, ns string, pods, per int) error {
	n := (pods + per - 1) / per
	gen := b.seq.Add(1)
	// The cascades time the collectors: their pods are not scheduled, so
	// they go at their deletion instead of waiting for kwok, playing the
	// kubelet, to end them (that round trip paced both collectors at
	// 74–93 pods/s and took 4 minutes of the run), and kwok does not run
	// them (its status patches for 20,000 pods took minutes of the build).
	scheduled := ns == "scale"
	return b.c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		namespace := ns
		if scheduled {
			namespace = scaleNamespace(i)
		}
		name := fmt.Sprintf("web-%d-%d", gen, i)
		labels := map[string]string{"app": name}
		tmpl := podTemplate(labels)
		dep := &appsv1.Deployment{ObjectMeta: meta(name, namespace, "web", i), Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(int32(per)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
		created, err := createRetrying(ctx,
			func() (*appsv1.Deployment, error) {
				return b.kube.AppsV1().Deployments(namespace).Create(ctx, dep, metav1.CreateOptions{})
			},
			func() (*appsv1.Deployment, error) {
				return b.kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			})
		if err != nil {
			return err
		}
		rsName := name + "-7d4b9c8f6"
		rsLabels := map[string]string{"app": name, "pod-template-hash": "7d4b9c8f6"}
		rsTmpl := podTemplate(rsLabels)
		rs := &appsv1.ReplicaSet{ObjectMeta: meta(rsName, namespace, "web", i), Spec: appsv1.ReplicaSetSpec{
			Replicas: ptrTo(int32(per)), Selector: &metav1.LabelSelector{MatchLabels: rsLabels}, Template: rsTmpl}}
		rs.Labels = rsLabels
		rs.OwnerReferences = []metav1.OwnerReference{controllerRef("apps/v1", "Deployment", name, created.UID)}
		createdRS, err := createRetrying(ctx,
			func() (*appsv1.ReplicaSet, error) {
				return b.kube.AppsV1().ReplicaSets(namespace).Create(ctx, rs, metav1.CreateOptions{})
			},
			func() (*appsv1.ReplicaSet, error) {
				return b.kube.AppsV1().ReplicaSets(namespace).Get(ctx, rsName, metav1.GetOptions{})
			})
		if err != nil {
			return err
		}
		count := min(per, pods-i*per)
		ref := controllerRef("apps/v1", "ReplicaSet", rsName, createdRS.UID)
		for j := range count {
			node := ""
			if scheduled {
				node = nodeName(i*per+j, b.sc.nodes)
			}
			if err := b.createPod(ctx, namespace, fmt.Sprintf("%s-%05d", rsName, j), rsTmpl, ref, node); err != nil {
				return err
			}
		}
		return nil
	})
}

// jobs creates n Jobs of podsPerJob pods each; kwok completes the pods.
func (b *scaleBuilder) jobs(ctx context.Context, n int) error {
	return b.c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		namespace, name := scaleNamespace(i), fmt.Sprintf("batch-%d", i)
		tmpl := podTemplate(map[string]string{"job": name})
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
		job := &batchv1.Job{ObjectMeta: meta(name, namespace, "batch", i), Spec: batchv1.JobSpec{
			Completions: ptrTo(int32(podsPerJob)), Parallelism: ptrTo(int32(podsPerJob)), Template: tmpl}}
		created, err := createRetrying(ctx,
			func() (*batchv1.Job, error) {
				return b.kube.BatchV1().Jobs(namespace).Create(ctx, job, metav1.CreateOptions{})
			},
			func() (*batchv1.Job, error) {
				return b.kube.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
			})
		if err != nil {
			return err
		}
		// The API server filled in the selector's labels; the pods carry
		// them, as the job controller's would.
		podTmpl := created.Spec.Template
		ref := controllerRef("batch/v1", "Job", name, created.UID)
		for j := range podsPerJob {
			if err := b.createPod(ctx, namespace, fmt.Sprintf("%s-%d", name, j), podTmpl, ref, nodeName(i*podsPerJob+j, b.sc.nodes)); err != nil {
				return err
			}
		}
		return nil
	})
}

func controllerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid,
		Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{}}}},
	}
}

// createPod creates a pod already bound to the kwok node node, as the
// scheduler would have, so that kwok runs it; not scheduled when node is
// "".
func (b *scaleBuilder) createPod(ctx context.Context, ns, name string, tmpl corev1.PodTemplateSpec, ref metav1.OwnerReference, node string) error {
	pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name, pod.Namespace = name, ns
	pod.OwnerReferences = []metav1.OwnerReference{ref}
	pod.Spec.NodeName = node
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	_, err := createRetrying(ctx, func() (*corev1.Pod, error) { return b.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}) },
		func() (*corev1.Pod, error) { return b.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}) })
	return err
}

// otherObjects creates ConfigMaps (40 %), Secrets (30 %), headless
// Services (10 %) and Widgets (20 %), spread over the namespaces.
func (b *scaleBuilder) otherObjects(ctx context.Context) error {
	start := time.Now()
	n := b.sc.others
	cms, secrets, services := n*4/10, n*3/10, n/10
	err := b.c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		ns := scaleNamespace(i)
		switch {
		case i < cms:
			cm := &corev1.ConfigMap{ObjectMeta: meta(fmt.Sprintf("config-%06d", i), ns, "config", i), Data: map[string]string{"key": "value"}}
			_, err := createRetrying(ctx, func() (*corev1.ConfigMap, error) {
				return b.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			},
				func() (*corev1.ConfigMap, error) {
					return b.kube.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
				})
			return err
		case i < cms+secrets:
			s := &corev1.Secret{ObjectMeta: meta(fmt.Sprintf("secret-%06d", i), ns, "secret", i), StringData: map[string]string{"token": "s3cr3t"}}
			_, err := createRetrying(ctx, func() (*corev1.Secret, error) {
				return b.kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
			},
				func() (*corev1.Secret, error) {
					return b.kube.CoreV1().Secrets(ns).Get(ctx, s.Name, metav1.GetOptions{})
				})
			return err
		case i < cms+secrets+services:
			// Headless: the test cluster's service range has 254 addresses.
			svc := &corev1.Service{ObjectMeta: meta(fmt.Sprintf("svc-%06d", i), ns, "svc", i), Spec: corev1.ServiceSpec{
				ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
			_, err := createRetrying(ctx, func() (*corev1.Service, error) {
				return b.kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
			},
				func() (*corev1.Service, error) {
					return b.kube.CoreV1().Services(ns).Get(ctx, svc.Name, metav1.GetOptions{})
				})
			return err
		default:
			m := meta(fmt.Sprintf("widget-%06d", i), ns, "widget", i)
			w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "bench.kubegcd.io/v1", "kind": "Widget",
				"spec": map[string]any{"size": int64(i % 10)}}}
			w.SetName(m.Name)
			w.SetNamespace(ns)
			w.SetLabels(m.Labels)
			w.SetAnnotations(m.Annotations)
			client := b.dyn.Resource(widgets).Namespace(ns)
			_, err := createRetrying(ctx, func() (*unstructured.Unstructured, error) { return client.Create(ctx, w, metav1.CreateOptions{}) },
				func() (*unstructured.Unstructured, error) { return client.Get(ctx, w.GetName(), metav1.GetOptions{}) })
			return err
		}
	})
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("  %d ConfigMaps, Secrets, Services and Widgets created in %s (%.0f/s)\n",
		n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	return nil
}

// createRetrying creates with create, retrying transient failures; an
// object an earlier, timed-out attempt did create is read back.
func createRetrying[T any](ctx context.Context, create, get func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		obj, err := create()
		if apierrors.IsAlreadyExists(err) && attempt > 1 {
			obj, err = get()
		}
		if err == nil || attempt == createRetries || !transient(err) || ctx.Err() != nil {
			return obj, err
		}
		if err := sleep(ctx, time.Duration(attempt)*100*time.Millisecond); err != nil {
			return obj, err
		}
	}
}

// waitKwok waits until kwok has made every node Ready (nodes > 0), started
// every pod in ns ("": all) and completed the Jobs' pods.
func waitKwok(ctx context.Context, kube kubernetes.Interface, ns string, nodes int) error {
	none := func(opts metav1.ListOptions) bool {
		opts.Limit = 1
		l, err := kube.CoreV1().Pods(ns).List(ctx, opts)
		return err == nil && len(l.Items) == 0
	}
	err := pollUntil(ctx, kwokSettleTimeout, func() (bool, error) {
		if nodes > 0 {
			l, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil || len(l.Items) < nodes {
				return false, nil
			}
			for _, n := range l.Items {
				if !nodeReady(n) {
					return false, nil
				}
			}
		}
		return none(metav1.ListOptions{FieldSelector: "status.phase=Pending,spec.nodeName!="}) &&
			none(metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name", FieldSelector: "status.phase!=Succeeded"}), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kwok: %w", err)
	}
	return nil
}

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

// startScaleKubegcd runs kubegcd, enforcing, with its default controllers
// and times its initial sync.
func startScaleKubegcd(ctx context.Context, bin string, cluster *testcluster.Cluster, dir string, sc scaleConfig, r *scaleResult) (*testcluster.Kubegcd, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	begin := time.Now()
	d, err := testcluster.StartKubegcd(bin, filepath.Join(dir, "kubegcd-scale.log"),
		"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, "kubegcd-scale.db"), "--listen", addr,
		"--log-level", "warn", "--dry-run=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
		"--max-deletions-per-minute=0", "--profiling", fmt.Sprintf("--gc-workers=%d", sc.gcWorkers))
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

func startScaleKCM(ctx context.Context, cluster *testcluster.Cluster) (func() error, int, error) {
	stop, err := cluster.StartControllerManager(ctx, kcmScaleControllers, "--kube-api-qps=5000", "--kube-api-burst=5000",
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

// kcmProceedLog: at this size the garbage collector gives up waiting for
// its monitors (after 15 s in the first full run) and starts with what it
// has, never logging kcmSyncedLog.
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
		if now.Sub(anchorAt) >= kcmStable || now.After(deadline) {
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

func rssOf(pid int) (uint64, error) {
	m, err := readMemory(pid)
	return m.RSS, err
}

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
		fmt.Printf("    %4.0fs: kubegcd RSS %.1f MB (PSS %.1f), CPU %.1f %%; kube-controller-manager RSS %.1f MB\n", time.Since(start).Seconds(),
			mb(m), mb(mem.PSS), 100*(c-lastCPU)/now.Sub(lastAt).Seconds(), mb(k))
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
	return nil
}

// profileWindows writes CPU profiles of kubegcd in consecutive windows of
// 25 s (HTTPGet waits 30 s at most) to path.0, path.1, ... until ctx ends,
// so a burst within the heartbeat period can be read on its own
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

// procCPU is the CPU seconds pid has used so far.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(fields[11], 10, 64)
	st, _ := strconv.ParseUint(fields[12], 10, 64)
	return float64(u+st) / 100
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

// timeCascade deletes the Deployments of the cascade namespace ns
// (background propagation, as kubectl delete does) and times owner
// deleted → first and last of their pods gone.
func timeCascade(ctx context.Context, kube kubernetes.Interface, ns string, sc scaleConfig) (first, last time.Duration, err error) {
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

func reportScale(sc scaleConfig, r scaleResult) {
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Printf("\nScale: %d kwok nodes, %d pods, %d other objects; kubegcd (enforcing, default controllers) beside "+
		"kube-controller-manager (%s); MB = 2^20 bytes\n", sc.nodes, sc.pods, sc.others, strings.TrimPrefix(kcmScaleControllers, "--controllers="))
	fmt.Printf("%-52s %14s %14s %s\n", "figure", "kubegcd", "kcm", "target")
	row := func(name, k, kcm, target string) { fmt.Printf("%-52s %14s %14s %s\n", name, k, kcm, target) }
	f := func(format string, v float64) string { return fmt.Sprintf(format, v) }
	row("objects mirrored", strconv.FormatInt(r.objects, 10), "", "")
	row("initial sync s (start → /readyz; kcm: monitors synced)", f("%.2f", r.sync.Seconds()), f("%.2f", r.kcmSync.Seconds()), "")
	row("initial sync objects/s", f("%.0f", float64(r.objects)/r.sync.Seconds()), "", "")
	row("RSS MB after sync", f("%.1f", mb(r.rssSynced)), f("%.1f", mb(r.kcmRSSSynced)), "")
	row(fmt.Sprintf("RSS MB after %s of heartbeats", r.period.Round(time.Second)), f("%.1f", mb(r.rssEnd)), f("%.1f", mb(r.kcmRSSEnd)), "")
	row("  of it anonymous MB, after sync / heartbeats", fmt.Sprintf("%.1f / %.1f", mb(r.memSynced.Anon), mb(r.memEnd.Anon)), "", "")
	row("  of it database pages mapped MB, after sync / heartbeats", fmt.Sprintf("%.1f / %.1f", mb(r.memSynced.File), mb(r.memEnd.File)), "", "")
	row("PSS MB after sync (each page once)", f("%.1f", mb(r.memSynced.PSS)), "",
		fmt.Sprintf("≤ %d %s", scaleRSSTarget/mib, verdict(r.memSynced.PSS <= scaleRSSTarget)))
	row(fmt.Sprintf("PSS MB after %s of heartbeats, highest", r.period.Round(time.Second)),
		fmt.Sprintf("%.1f, %.1f", mb(r.memEnd.PSS), mb(r.pssMax)), "",
		fmt.Sprintf("≤ %d %s", scaleRSSTarget/mib, verdict(r.pssMax <= scaleRSSTarget)))
	row("RSS MB, highest sample during heartbeats", f("%.1f", mb(r.rssMax)), f("%.1f", mb(r.kcmRSSMax)), "")
	row("RSS MB at the heartbeats' start (CPU settled "+r.settled.Round(time.Second).String()+" after sync)", f("%.1f", mb(r.rssStart)), "", "")
	growth := float64(r.rssEnd) - float64(r.rssStart)
	row("RSS growth MB over the heartbeats", f("%+.1f", growth/mib), f("%+.1f", (float64(r.kcmRSSEnd)-float64(r.kcmRSSSynced))/mib),
		fmt.Sprintf("≤ %d (flat) %s", scaleRSSGrowth/mib, verdict(growth <= scaleRSSGrowth)))
	row("database MB after sync", f("%.1f", float64(r.dbSynced)/mib), "", "")
	row(fmt.Sprintf("database MB after %s of heartbeats", r.period.Round(time.Second)), f("%.1f", float64(r.dbEnd)/mib), "", "")
	row("CPU % of one core during heartbeats", f("%.2f", r.cpu), f("%.2f", r.kcmCPU),
		fmt.Sprintf("< %.0f %s", scaleCPUTarget, verdict(r.cpu < scaleCPUTarget)))
	row("  Lease renewals mirrored per 10 s", f("%.0f", r.leaseRenewals/r.period.Seconds()*10), "", "")
	row("  Node updates mirrored", f("%.0f", r.nodeUpdates), "", "")
	row(fmt.Sprintf("cascade s: %d Deployments, %d pods (first pod gone)", sc.cascadeDeployments, sc.cascadePods),
		f("%.3f", r.cascadeFirst.Seconds()), f("%.3f", r.kcmCascadeFst.Seconds()), "")
	row("cascade s: owner deleted → last pod gone", f("%.2f", r.cascade.Seconds()), f("%.2f", r.kcmCascade.Seconds()), "")
	fmt.Printf("cascade: kubegcd %.2f× kube-controller-manager's speed\n", r.kcmCascade.Seconds()/r.cascade.Seconds())
	fmt.Printf("\n%-72s %9s\n", "phase (wall time; the control plane's start before it)", "took")
	var total time.Duration
	for _, p := range r.phases.steps {
		fmt.Printf("%-72s %9s\n", p.name, p.took.Round(time.Second))
		total += p.took
	}
	fmt.Printf("%-72s %9s\n", "total", total.Round(time.Second))
}
