// Package podgc is kube-controller-manager's PodGC controller re-done on the
// SQLite mirror: every period it force-deletes terminated pods beyond a
// threshold, terminating pods on out-of-service nodes, pods bound to nodes
// that are gone (after a quarantine and a live check), and terminating pods
// that were never scheduled — marking each Failed first, as upstream does.
// Beyond upstream, and off by default, it can delete terminated pods past an
// age and hold namespaces to thresholds of their own.
package podgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// Rule ids (docs/rules.md): BR-24-xx name upstream PodGC's rules; KG-24-xx
// number what upstream leaves unnumbered (gcUnscheduledTerminating) and
// what kubegcd adds.
const (
	ruleTerminated         = "BR-24-01"
	ruleOutOfService       = "BR-24-02"
	ruleOrphaned           = "BR-24-03"
	ruleUnscheduled        = "KG-24-01"
	ruleMaxAge             = "KG-24-02"
	ruleNamespaceThreshold = "KG-24-03"
)

// Reasons, the label of the deletion metrics.
const (
	reasonTerminated   = "terminated"
	reasonOutOfService = "out-of-service"
	reasonOrphaned     = "orphaned"
	reasonUnscheduled  = "unscheduled"
)

const (
	// pageSize bounds how many pods one query returns: memory stays flat
	// however many terminated pods the cluster holds.
	pageSize = 500
	// A pod a delete did not remove (a finalizer holds it) is sent its next
	// delete after backoffBase, doubling up to backoffMax.
	backoffBase = time.Minute
	backoffMax  = 30 * time.Minute
)

// Store is what PodGC reads of the mirror; db.PodGC is one.
type Store interface {
	CountTerminatedPods(ctx context.Context, f db.TerminatedFilter) (int, error)
	TerminatedPods(ctx context.Context, f db.TerminatedFilter, after *db.PodCursor,
		limit int) ([]*db.Object, *db.PodCursor, error)
	TerminatingPodsOnOutOfServiceNodes(ctx context.Context, outOfService string) ([]*db.Object, error)
	MissingNodes(ctx context.Context) ([]string, error)
	PodsOnNode(ctx context.Context, node string) ([]*db.Object, error)
	UnscheduledTerminatingPods(ctx context.Context) ([]*db.Object, error)
}

// Options configure the controller.
type Options struct {
	reconcile.ControllerOptions
	DB     Store
	Client kubernetes.Interface
	// ResourceSynced reports whether one resource's mirror is live; a pass
	// is skipped while pods or nodes are not.
	ResourceSynced func(group, resource string) bool
	// Period between passes (upstream: 20s).
	Period time.Duration
	// TerminatedThreshold is how many terminated pods the cluster keeps;
	// 0 disables gcTerminated.
	TerminatedThreshold int
	// NamespaceThresholds hold namespaces to thresholds of their own.
	NamespaceThresholds map[string]int
	// MaxAge, when set, deletes terminated pods created longer ago.
	MaxAge time.Duration
	// Quarantine is how long a node must be missing from the mirror before
	// its absence is checked live (upstream: 40s).
	Quarantine time.Duration
	Workers    int
}

// Controller is PodGC.
type Controller struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	passes  *reconcile.PassRecorder

	// missingSince: node name → when the mirror was first seen without it.
	missingSince map[string]time.Time

	mu      sync.Mutex
	backoff map[string]*backoff // pod uid → deletes sent that left it in place
	applied reconcile.AppliedWrites
}

// backoff paces the deletes of one pod a finalizer holds. It is not
// client-go's flowcontrol.Backoff, which neither counts the deletes sent
// (the reason gives their number) nor lists its entries, so a pass could
// not forget the pods it no longer holds.
type backoff struct {
	sent int
	next time.Time
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	b := reconcile.NewBase(api.ControllerPodGC, opts.ControllerOptions)
	opts.ControllerOptions = b.ControllerOptions
	if opts.Period <= 0 {
		opts.Period = 20 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = 20
	}
	return &Controller{opts: opts, log: b.Log, metrics: newMetrics(b.Metrics), passes: b.PassRecorder,
		missingSince: map[string]time.Time{}, backoff: map[string]*backoff{}}, nil
}

// Run makes a pass every period until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	if !reconcile.WaitSynced(ctx, c.opts.Synced) {
		return nil
	}
	c.log.Info("starting", "period", c.opts.Period, "terminated_pod_gc_threshold", c.opts.TerminatedThreshold,
		"quarantine", c.opts.Quarantine, "max_age", c.opts.MaxAge,
		"namespace_thresholds", c.opts.NamespaceThresholds, "dry_run", c.opts.Applier.DryRun())
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("pass failed", "err", err)
		}
	}, c.opts.Period)
	return nil
}

// Pass runs the four collections once, then forgets pending decisions no
// longer held. It is skipped, and says so, while the mirror of pods or
// nodes is not live: a node missing from a stale mirror is not gone.
func (c *Controller) Pass(ctx context.Context) error {
	c.opts.Heartbeat.Beat()
	start := c.opts.Now()
	for _, r := range []string{"pods", "nodes"} {
		if !c.opts.ResourceSynced("", r) {
			c.passes.Skipped(start, reconcile.SkipMirrorNotSynced, "the mirror of "+r+" is not live")
			return nil
		}
	}
	c.passes.Ran(start)
	defer func() { c.metrics.passSeconds.Observe(time.Since(start).Seconds()) }()
	p := c.newPass(ctx, start)
	err := errors.Join(c.gcTerminated(ctx, p), c.gcTerminating(ctx, p), c.gcOrphaned(ctx, p),
		c.gcUnscheduledTerminating(ctx, p))
	p.wait()
	if p.incomplete {
		// Some pods went unlisted: what is pending about them is not
		// stale, only unseen. It waits for a pass that lists them all.
		return err
	}
	return errors.Join(err, c.forgetStale(ctx, p))
}

// forgetStale clears pending rows and back-offs of pods this pass did not
// look at: they were deleted, or no longer qualify.
func (c *Controller) forgetStale(ctx context.Context, p *pass) error {
	c.mu.Lock()
	maps.DeleteFunc(c.backoff, func(uid string, _ *backoff) bool { return !p.seen[uid] })
	c.mu.Unlock()
	return c.opts.Applier.EndPass(ctx, api.ControllerPodGC, func(uid string) bool { return p.seen[uid] })
}

// pass is one pass's state: the pods it has chosen (a pod is handled once
// per pass, by the first collection choosing it) and its workers.
type pass struct {
	now  time.Time
	seen map[string]bool
	// incomplete: a listing of pods failed, so seen may lack pods still of
	// interest.
	incomplete bool
	jobs       chan job
	wg         sync.WaitGroup
	beat       *liveness.Loop
}

func (c *Controller) newPass(ctx context.Context, now time.Time) *pass {
	p := &pass{now: now, seen: map[string]bool{}, jobs: make(chan job), beat: c.opts.Heartbeat}
	for range c.opts.Workers {
		p.wg.Go(func() {
			for j := range p.jobs {
				c.handle(ctx, p.now, j)
			}
		})
	}
	return p
}

// choose hands a pod to the workers unless this pass already chose it.
func (p *pass) choose(ctx context.Context, j job) error {
	if p.seen[j.pod.UID] {
		return nil
	}
	p.seen[j.pod.UID] = true
	select {
	case p.jobs <- j:
		// A long pass (thousands of pods behind the client's rate
		// limit) is progress too, as long as the workers take pods.
		p.beat.Beat()
		return nil
	case <-ctx.Done():
		return p.listed(ctx.Err())
	}
}

// keep marks a pod as still of interest without handing it to a worker
// (its pending row stays).
func (p *pass) keep(uid string) { p.seen[uid] = true }

// listed notes a listing's error, if any, and returns it: a pass that
// could not list some pods must not forget what it holds about them.
func (p *pass) listed(err error) error {
	if err != nil {
		p.incomplete = true
	}
	return err
}

func (p *pass) wait() {
	close(p.jobs)
	p.wg.Wait()
}

// handle deletes one pod, unless a finalizer held it after an earlier
// delete and its back-off has not run out.
func (c *Controller) handle(ctx context.Context, now time.Time, j job) {
	pod := j.pod
	d := reconcile.Decision{Controller: api.ControllerPodGC, Rule: j.rule, Action: api.ActionDelete,
		Target: db.TargetOf(pod), ResourceVersion: pod.ResourceVersion, Reason: j.why, Facts: j.facts,
		DecidedAt: now}
	if held, ok := c.heldUntil(pod.UID, now); ok {
		d.Reason = heldWhy(pod, held.sent, j.why)
		err := c.opts.Applier.Defer(ctx, d, held.next)
		if err != nil && ctx.Err() == nil && !errors.Is(err, reconcile.ErrPaused) {
			c.log.Error("recording a held pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
		return
	}
	if c.applied.WrittenAt(pod.UID, pod.ResourceVersion) {
		// Deleted already; the mirror has not caught up yet.
		return
	}
	j.facts["finalizers"] = pod.Finalizers
	outcome, err := c.opts.Applier.Apply(ctx, d, func(ctx context.Context) error {
		return c.markFailedAndDelete(ctx, pod, j.condition, now)
	})
	switch {
	case errors.Is(err, reconcile.ErrPaused) || outcome == api.OutcomeDryRun:
		return
	case err != nil:
		c.metrics.errors.WithLabelValues(j.label).Inc()
		if ctx.Err() == nil {
			c.log.Warn("force-deleting a pod failed", "pod", pod.Namespace+"/"+pod.Name,
				"reason", j.label, "err", err)
		}
	}
	c.metrics.deletes.WithLabelValues(j.label).Inc()
	if outcome == api.OutcomeApplied {
		c.applied.Record(pod.UID, pod.ResourceVersion)
		if len(pod.Finalizers) > 0 {
			c.deleteSent(pod.UID, now)
		}
	}
}

// heldUntil reports whether a pod's back-off still holds its next delete.
func (c *Controller) heldUntil(uid string, now time.Time) (backoff, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.backoff[uid]
	if b == nil || !now.Before(b.next) {
		return backoff{}, false
	}
	return *b, true
}

// deleteSent starts or doubles the back-off of a pod a finalizer holds:
// backoffBase, twice that, … up to backoffMax.
func (c *Controller) deleteSent(uid string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.backoff[uid]
	if b == nil {
		b = &backoff{}
		c.backoff[uid] = b
	}
	b.sent++
	wait := backoffBase
	for i := 1; i < b.sent && wait < backoffMax; i++ {
		wait *= 2
	}
	b.next = now.Add(min(wait, backoffMax))
}

// collect pages through the terminated pods the sweep's filter selects, in
// deletion order, and chooses the first s.n.
func (c *Controller) collect(ctx context.Context, p *pass, s sweep) error {
	var after *db.PodCursor
	for n := s.n; n > 0; {
		pods, next, err := c.opts.DB.TerminatedPods(ctx, s.filter, after, min(n, pageSize))
		if err != nil {
			return p.listed(err)
		}
		for _, j := range s.take(pods, n) {
			if err := p.choose(ctx, j); err != nil {
				return err
			}
		}
		n -= len(pods)
		if len(pods) < pageSize {
			return nil
		}
		after = next
	}
	return nil
}

// gcTerminated deletes the terminated pods beyond the threshold, Evicted
// first, then the oldest (BR-24-01); then, when configured, those past the
// maximum age and those beyond their namespace's threshold.
func (c *Controller) gcTerminated(ctx context.Context, p *pass) error {
	var errs []error
	if t := c.opts.TerminatedThreshold; t > 0 {
		total, err := c.opts.DB.CountTerminatedPods(ctx, db.TerminatedFilter{})
		if err != nil {
			return p.listed(err)
		}
		c.metrics.terminated.Set(float64(total))
		errs = append(errs, c.collect(ctx, p, overThreshold(total, t)))
	}
	errs = append(errs, c.collect(ctx, p, pastMaxAge(c.opts.MaxAge, p.now)))
	for _, ns := range namespaces(c.opts.NamespaceThresholds) {
		total, err := c.opts.DB.CountTerminatedPods(ctx, db.TerminatedFilter{Namespace: ns})
		if err != nil {
			errs = append(errs, p.listed(err))
			continue
		}
		sweep := overNamespaceThreshold(ns, total, c.opts.NamespaceThresholds[ns])
		errs = append(errs, c.collect(ctx, p, sweep))
	}
	return errors.Join(errs...)
}

// gcTerminating deletes terminating pods on nodes that are not Ready and
// carry the out-of-service taint (BR-24-02).
func (c *Controller) gcTerminating(ctx context.Context, p *pass) error {
	pods, err := c.opts.DB.TerminatingPodsOnOutOfServiceNodes(ctx, corev1.TaintNodeOutOfService)
	if err != nil {
		return p.listed(err)
	}
	for _, j := range terminatingOutOfService(pods) {
		if err := p.choose(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

// gcOrphaned deletes pods bound to nodes that are gone: a node missing from
// the mirror is quarantined, then checked live; only a node the API server
// does not know either orphans its pods (BR-24-03), which get the
// DisruptionTarget condition (BR-24-04).
func (c *Controller) gcOrphaned(ctx context.Context, p *pass) error {
	missing, err := c.opts.DB.MissingNodes(ctx)
	if err != nil {
		return p.listed(err)
	}
	stillMissing := map[string]bool{}
	var errs []error
	for _, node := range missing {
		stillMissing[node] = true
		m := missingNode(c.missingSince[node], p.now, c.opts.Quarantine, unchecked)
		var checkErr error
		if m.step == checkLive {
			_, checkErr = c.opts.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			check := checkOf(checkErr)
			c.metrics.nodeChecks.WithLabelValues(string(check)).Inc()
			m = missingNode(m.since, p.now, c.opts.Quarantine, check)
		}
		c.missingSince[node] = m.since
		switch m.step {
		case inQuarantine:
			errs = append(errs, c.quarantine(ctx, p, node, m.until))
			continue
		case keepPods:
			errs = append(errs, fmt.Errorf("checking node %s: %w", node, checkErr),
				c.keepPodsOn(ctx, p, node))
			continue
		}
		pods, err := c.opts.DB.PodsOnNode(ctx, node)
		if err != nil {
			errs = append(errs, p.listed(err))
			continue
		}
		for _, j := range orphans(node, pods, m.since, c.opts.Quarantine) {
			if err := p.choose(ctx, j); err != nil {
				return err
			}
		}
	}
	for node := range c.missingSince {
		if !stillMissing[node] {
			delete(c.missingSince, node)
		}
	}
	return errors.Join(errs...)
}

// quarantine records, as pending, the pods of a missing node and when
// their node's absence will be checked.
func (c *Controller) quarantine(ctx context.Context, p *pass, node string, end time.Time) error {
	pods, err := c.opts.DB.PodsOnNode(ctx, node)
	if err != nil {
		return p.listed(err)
	}
	var errs []error
	for _, j := range quarantined(node, pods, c.opts.Quarantine) {
		p.keep(j.pod.UID)
		d := reconcile.Decision{Controller: api.ControllerPodGC, Rule: j.rule, Action: api.ActionDelete,
			Target: db.TargetOf(j.pod), ResourceVersion: j.pod.ResourceVersion, Reason: j.why}
		err := c.opts.Applier.Defer(ctx, d, end)
		if errors.Is(err, reconcile.ErrPaused) {
			return nil // a later pass records them, once the audit history can be written
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// keepPodsOn keeps the pending rows of a node's pods when its check failed.
func (c *Controller) keepPodsOn(ctx context.Context, p *pass, node string) error {
	pods, err := c.opts.DB.PodsOnNode(ctx, node)
	if err != nil {
		return p.listed(fmt.Errorf("listing the pods of node %s: %w", node, err))
	}
	for _, pod := range pods {
		p.keep(pod.UID)
	}
	return nil
}

// gcUnscheduledTerminating deletes terminating pods bound to no node.
func (c *Controller) gcUnscheduledTerminating(ctx context.Context, p *pass) error {
	pods, err := c.opts.DB.UnscheduledTerminatingPods(ctx)
	if err != nil {
		return p.listed(err)
	}
	for _, j := range unscheduledTerminating(pods) {
		if err := p.choose(ctx, j); err != nil {
			return err
		}
	}
	return nil
}

type metrics struct {
	deletes, errors *prometheus.CounterVec
	nodeChecks      *prometheus.CounterVec
	terminated      prometheus.Gauge
	passSeconds     prometheus.Histogram
}

func newMetrics(f promutil.Factory) *metrics {
	return &metrics{
		deletes: f.CounterVec("force_delete_pods_total",
			"Pods PodGC force-deleted (attempts, as upstream counts them), by reason: "+
				"terminated, out-of-service, orphaned, unscheduled.",
			"reason"),
		errors: f.CounterVec("force_delete_pods_errors_total",
			"Force deletions by PodGC that failed, by reason.",
			"reason"),
		nodeChecks: f.CounterVec("node_checks_total",
			"Live lookups of nodes missing from the mirror after their quarantine, by result: "+
				"absent, present, error.",
			"result"),
		terminated: f.Gauge("terminated_pods",
			"Terminated pods in the cluster at the last pass (when gcTerminated is on)."),
		passSeconds: f.Histogram("pass_duration_seconds",
			"Time a PodGC pass takes, deletions included.",
			prometheus.ExponentialBuckets(0.001, 4, 10)),
	}
}
