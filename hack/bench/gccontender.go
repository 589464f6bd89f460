package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// deleteOwner returns the act of a collector's contender: it deletes the
// owner with background propagation, as kubectl delete does, and leaves
// the dependents to the collector.
func deleteOwner(kube kubernetes.Interface) func(context.Context, *corev1.ConfigMap, func()) error {
	return func(ctx context.Context, owner *corev1.ConfigMap, begin func()) error {
		begin()
		bg := metav1.DeletePropagationBackground
		return kube.CoreV1().ConfigMaps(owner.Namespace).Delete(ctx, owner.Name,
			metav1.DeleteOptions{PropagationPolicy: &bg})
	}
}

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

// gcContender creates an owner and n dependents in namespace ns, starts the
// contender, then runs act and times the dependents' deletions from a watch.
// act calls begin right before its first deletion. The CPU and the API
// server's metrics are measured from there to the last dependent gone.
func gcContender(ctx context.Context, kube kubernetes.Interface, ns string, n, workers int, window gcWindow,
	start func(context.Context, *corev1.ConfigMap) (stop func() error, err error),
	act func(ctx context.Context, owner *corev1.ConfigMap, begin func()) error) (r gcResult, err error) {
	r.n = n
	owner, err := createDependents(ctx, kube, ns, n, workers)
	if err != nil {
		return r, err
	}
	if start != nil {
		stop, startErr := start(ctx, owner)
		if startErr != nil {
			return r, startErr
		}
		// Joined into the result: a contender that crashed is an error.
		defer func() { err = errors.Join(err, stop()) }()
	}
	dw, err := watchDeletions(ctx, kube, ns, owner.Name, n)
	if err != nil {
		return r, err
	}
	defer dw.close()
	ownPID, err := window.ownPID()
	if err != nil {
		return r, err
	}
	m := &gcMeasure{window: window, pids: []int{ownPID, window.apiserverPID, window.etcdPID}, begun: dw.begun}
	if err := act(ctx, owner, func() { m.begin(ctx) }); err != nil {
		return r, err
	}
	if m.t0.IsZero() {
		return r, fmt.Errorf("%s: the deletions never began", ns)
	}
	if m.cpuErr != nil {
		return r, m.cpuErr
	}
	wc := dw.result()
	if wc.err != nil {
		return r, wc.err
	}
	r.first, r.last = wc.first, wc.last
	if err := m.end(ctx, ns, &r); err != nil {
		return r, err
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

// createDependents creates namespace ns, an owner in it and n dependents
// of the owner, and returns the owner.
func createDependents(ctx context.Context, kube kubernetes.Interface, ns string, n, workers int) (
	*corev1.ConfigMap, error) {
	if err := createNamespace(ctx, kube, ns); err != nil {
		return nil, err
	}
	cms := kube.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	created := time.Now()
	c := &creator{kube: kube, workers: workers}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	if err := c.parallel(ctx, seq(n), func(ctx context.Context, i int) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("dep-%06d", i),
			OwnerReferences: []metav1.OwnerReference{ref},
		}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	fmt.Printf("  %s: created %d dependents in %s\n", ns, n, time.Since(created).Round(time.Millisecond))
	return owner, nil
}

// deletionWatch counts the dependents' deletions from a watch, in the
// background. The watch is read while the contender deletes, whoever it
// is, so that the API server sends every contender's events as they
// happen. Left unread while raw workers deleted, the watch filled and the
// API server dropped it; the events came again after the last delete, all
// at once.
type deletionWatch struct {
	// begun takes the time of the first deletion, from which the count
	// starts.
	begun  chan time.Time
	seen   chan watchCount
	cancel context.CancelFunc
}

// watchDeletions watches namespace ns from now on and counts the deletions
// of owner's n dependents (countDeletions).
func watchDeletions(ctx context.Context, kube kubernetes.Interface, ns, owner string, n int) (*deletionWatch, error) {
	list, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	w, err := kube.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	dw := &deletionWatch{begun: make(chan time.Time, 1), seen: make(chan watchCount, 1)}
	watchCtx, cancel := context.WithCancel(ctx)
	dw.cancel = cancel
	go func() {
		dw.seen <- countDeletions(watchCtx, kube, ns, owner, n, w, list.ResourceVersion, dw.begun)
	}()
	return dw, nil
}

// result waits for the count to end and returns it.
func (dw *deletionWatch) result() watchCount {
	c := <-dw.seen
	dw.seen = nil
	return c
}

// close stops the watch and waits for the count to end, unless result
// already has.
func (dw *deletionWatch) close() {
	dw.cancel()
	if dw.seen != nil {
		<-dw.seen
	}
}

// gcMeasure measures a collection from begin, right before its first
// deletion, to end, after its last. It reads the CPU of the contender,
// kube-apiserver and etcd (pids, in that order) and the API server's
// metrics, and profiles kube-apiserver if the window asks for it.
type gcMeasure struct {
	window gcWindow
	pids   []int
	begun  chan<- time.Time

	apiBefore apiCounts
	apiErr    error
	cpu0      []float64
	cpuErr    error
	t0        time.Time
	profiled  chan error
}

// begin starts the measurement and the count of the deletions.
func (m *gcMeasure) begin(ctx context.Context) {
	// Scraped before the CPU is read: the scrape's own cost stays out.
	m.apiBefore, m.apiErr = m.window.cp.metrics(ctx)
	if m.window.profile != "" {
		m.profiled = make(chan error, 1)
		go func() { m.profiled <- m.window.cp.profile(ctx, m.window.profileSeconds, m.window.profile) }()
	}
	m.cpu0, m.cpuErr = cpuOfPIDs(m.pids)
	m.t0 = time.Now()
	m.begun <- m.t0
}

// end reads the CPU used since begin and what the API server's metrics
// counted into r. It reports, without failing, a profile or metrics it
// could not get.
func (m *gcMeasure) end(ctx context.Context, ns string, r *gcResult) error {
	cpu, err := cpuOfPIDs(m.pids)
	if err != nil {
		return err
	}
	r.cpu, r.apiserverCPU, r.etcdCPU = cpu[0]-m.cpu0[0], cpu[1]-m.cpu0[1], cpu[2]-m.cpu0[2]
	if m.profiled != nil {
		// Waited for before the scrape, which the profile would count, and
		// before the next contender.
		if err := <-m.profiled; err != nil {
			fmt.Printf("  %s: kube-apiserver's CPU profile not written: %v\n", ns, err)
		} else {
			fmt.Printf("  %s: kube-apiserver's CPU profile over the first %d s: %s\n",
				ns, m.window.profileSeconds, m.window.profile)
		}
	}
	apiAfter, scrapeErr := m.window.cp.metrics(ctx)
	if scrapeErr = errors.Join(m.apiErr, scrapeErr); scrapeErr != nil {
		fmt.Printf("  %s: kube-apiserver's metrics not read: %v\n", ns, scrapeErr)
	} else {
		r.api = apiAfter.since(m.apiBefore)
	}
	return nil
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
func countDeletions(ctx context.Context, kube kubernetes.Interface, ns, owner string, n int,
	w watch.Interface, rv string, begun <-chan time.Time) (c watchCount) {
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
