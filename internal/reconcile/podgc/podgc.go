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
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// Name is the controller's name in flags, audit rows and metrics.
const Name = gcrules.ControllerPodGC

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
	actionDelete = "delete"
	// pageSize bounds how many pods one query returns: memory stays flat
	// however many terminated pods the cluster holds.
	pageSize = 500
	// A pod a delete did not remove (a finalizer holds it) is sent its next
	// delete after backoffBase, doubling up to backoffMax.
	backoffBase = time.Minute
	backoffMax  = 30 * time.Minute
)

// Store is what PodGC reads of the mirror; *db.DB is one.
type Store interface {
	CountTerminatedPods(ctx context.Context, f db.TerminatedFilter) (int, error)
	TerminatedPods(ctx context.Context, f db.TerminatedFilter, after *db.PodCursor, limit int) ([]*db.Object, *db.PodCursor, error)
	TerminatingPodsOnOutOfServiceNodes(ctx context.Context, outOfService string) ([]*db.Object, error)
	MissingNodes(ctx context.Context) ([]string, error)
	PodsOnNode(ctx context.Context, node string) ([]*db.Object, error)
	UnscheduledTerminatingPods(ctx context.Context) ([]*db.Object, error)
}

// Options configure the controller.
type Options struct {
	DB      Store
	Applier *reconcile.Applier
	Client  kubernetes.Interface
	Logger  *slog.Logger
	// Synced reports whether the mirror is complete; no pass runs before.
	Synced func() bool
	// ResourceSynced reports whether one resource's mirror is live; a pass
	// is skipped while pods or nodes are not.
	ResourceSynced func(group, resource string) bool
	// Passes records passes made and skipped (/status, the log, a metric).
	Passes *reconcile.Passes
	// Period between passes (upstream: 20s).
	Period time.Duration
	// Heartbeat beats at every pass and every pod handed to a worker, for
	// the watchdog; nil for none.
	Heartbeat *liveness.Loop
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
	Registerer prometheus.Registerer
	Now        func() time.Time
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

type backoff struct {
	sent int
	next time.Time
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Period <= 0 {
		opts.Period = 20 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = 20
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{opts: opts, log: opts.Logger, metrics: m, passes: opts.Passes.For(Name, opts.Logger),
		missingSince: map[string]time.Time{}, backoff: map[string]*backoff{}}, nil
}

// Run makes a pass every period until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	if !reconcile.WaitSynced(ctx, c.opts.Synced) {
		return nil
	}
	c.log.Info("starting", "period", c.opts.Period, "terminated_pod_gc_threshold", c.opts.TerminatedThreshold,
		"quarantine", c.opts.Quarantine, "max_age", c.opts.MaxAge, "namespace_thresholds", c.opts.NamespaceThresholds,
		"dry_run", c.opts.Applier.DryRun())
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
	err := errors.Join(c.gcTerminated(ctx, p), c.gcTerminating(ctx, p), c.gcOrphaned(ctx, p), c.gcUnscheduledTerminating(ctx, p))
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
	return c.opts.Applier.EndPass(ctx, Name, func(uid string) bool { return p.seen[uid] })
}

// job is one pod a collection chose, and why.
type job struct {
	pod   *db.Object
	rule  string
	label string // the reason label of the force-delete metrics
	why   string
	facts map[string]any
	// orphaned pods get the DisruptionTarget condition (BR-24-04).
	condition bool
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
	d := reconcile.Decision{Controller: Name, Rule: j.rule, Action: actionDelete, Target: db.TargetOf(pod),
		ResourceVersion: pod.ResourceVersion, Reason: j.why, Facts: j.facts, DecidedAt: now}
	if held, ok := c.heldUntil(pod.UID, now); ok {
		// When the next delete goes is the row's notBefore, not its reason.
		d.Reason = fmt.Sprintf("held by finalizers %v after %d delete(s); the next waits out a back-off: %s",
			pod.Finalizers, held.sent, j.why)
		if err := c.opts.Applier.Defer(ctx, d, held.next); err != nil && ctx.Err() == nil && !errors.Is(err, reconcile.ErrPaused) {
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
	case errors.Is(err, reconcile.ErrPaused) || outcome == db.OutcomeDryRun:
		return
	case err != nil:
		c.metrics.errors.WithLabelValues(j.label).Inc()
		if ctx.Err() == nil {
			c.log.Warn("force-deleting a pod failed", "pod", pod.Namespace+"/"+pod.Name, "reason", j.label, "err", err)
		}
	}
	c.metrics.deletes.WithLabelValues(j.label).Inc()
	if outcome == db.OutcomeApplied {
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

// collect pages through the terminated pods f selects, in deletion order,
// and chooses the first n.
func (c *Controller) collect(ctx context.Context, p *pass, f db.TerminatedFilter, n int, mk func(*db.Object) job) error {
	var after *db.PodCursor
	for n > 0 {
		pods, next, err := c.opts.DB.TerminatedPods(ctx, f, after, min(n, pageSize))
		if err != nil {
			return p.listed(err)
		}
		for _, pod := range pods {
			if err := p.choose(ctx, mk(pod)); err != nil {
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
		why := fmt.Sprintf("the cluster holds more terminated pods than --terminated-pod-gc-threshold=%d; "+
			"this one is among the excess (Evicted first, then the oldest)", t)
		errs = append(errs, c.collect(ctx, p, db.TerminatedFilter{}, total-t, func(pod *db.Object) job {
			return job{pod: pod, rule: ruleTerminated, label: reasonTerminated, why: why,
				facts: podFacts(pod, map[string]any{"terminatedPods": total, "threshold": t})}
		}))
	}
	if c.opts.MaxAge > 0 {
		cutoff := p.now.Add(-c.opts.MaxAge)
		f := db.TerminatedFilter{CreatedBefore: &cutoff}
		why := fmt.Sprintf("terminated, and created more than --terminated-pod-max-age=%s ago", c.opts.MaxAge)
		errs = append(errs, c.collect(ctx, p, f, math.MaxInt, func(pod *db.Object) job {
			return job{pod: pod, rule: ruleMaxAge, label: reasonTerminated, why: why,
				facts: podFacts(pod, map[string]any{"maxAge": c.opts.MaxAge.String()})}
		}))
	}
	for _, ns := range slices.Sorted(maps.Keys(c.opts.NamespaceThresholds)) {
		t := c.opts.NamespaceThresholds[ns]
		f := db.TerminatedFilter{Namespace: ns}
		total, err := c.opts.DB.CountTerminatedPods(ctx, f)
		if err != nil {
			errs = append(errs, p.listed(err))
			continue
		}
		why := fmt.Sprintf("namespace %s holds more terminated pods than its threshold of %d "+
			"(--terminated-pod-gc-threshold-namespace); this one is among the excess (Evicted first, then the oldest)", ns, t)
		errs = append(errs, c.collect(ctx, p, f, total-t, func(pod *db.Object) job {
			return job{pod: pod, rule: ruleNamespaceThreshold, label: reasonTerminated, why: why,
				facts: podFacts(pod, map[string]any{"terminatedPodsInNamespace": total, "threshold": t})}
		}))
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
	for _, pod := range pods {
		why := fmt.Sprintf("terminating on node %s, which is not Ready and is tainted %s", pod.Pod.NodeName, corev1.TaintNodeOutOfService)
		if err := p.choose(ctx, job{pod: pod, rule: ruleOutOfService, label: reasonOutOfService, why: why,
			facts: podFacts(pod, map[string]any{"nodeReady": false, "taint": corev1.TaintNodeOutOfService})}); err != nil {
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
		since, ok := c.missingSince[node]
		if !ok {
			since = p.now
			c.missingSince[node] = since
		}
		if end := since.Add(c.opts.Quarantine); p.now.Before(end) {
			errs = append(errs, c.quarantine(ctx, p, node, end))
			continue
		}
		_, err := c.opts.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		switch {
		case err == nil:
			// The mirror lags: the node exists. Quarantine afresh.
			c.metrics.nodeChecks.WithLabelValues("present").Inc()
			c.missingSince[node] = p.now
			errs = append(errs, c.quarantine(ctx, p, node, p.now.Add(c.opts.Quarantine)))
			continue
		case !apierrors.IsNotFound(err):
			c.metrics.nodeChecks.WithLabelValues("error").Inc()
			errs = append(errs, fmt.Errorf("checking node %s: %w", node, err), c.keepPodsOn(ctx, p, node))
			continue
		}
		c.metrics.nodeChecks.WithLabelValues("absent").Inc()
		pods, err := c.opts.DB.PodsOnNode(ctx, node)
		if err != nil {
			errs = append(errs, p.listed(err))
			continue
		}
		// No age in the reason: it would change every pass and make the
		// same decision a new one (another audit row, a new since). When
		// the node went missing is in the facts.
		why := fmt.Sprintf("bound to node %s, which is gone: missing from the mirror past its quarantine "+
			"(--podgc-quarantine=%s) and not found by a live GET", node, c.opts.Quarantine)
		for _, pod := range pods {
			if err := p.choose(ctx, job{pod: pod, rule: ruleOrphaned, label: reasonOrphaned, why: why, condition: true,
				facts: podFacts(pod, map[string]any{"nodeMissingSince": since.UTC(), "nodeCheck": "not found"})}); err != nil {
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
	// When the quarantine ends is the row's notBefore, not its reason.
	why := fmt.Sprintf("bound to node %s, which is missing from the mirror: in quarantine (--podgc-quarantine=%s), "+
		"then the node is looked up live", node, c.opts.Quarantine)
	var errs []error
	for _, pod := range pods {
		p.keep(pod.UID)
		d := reconcile.Decision{Controller: Name, Rule: ruleOrphaned, Action: actionDelete, Target: db.TargetOf(pod),
			ResourceVersion: pod.ResourceVersion, Reason: why}
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
	for _, pod := range pods {
		if err := p.choose(ctx, job{pod: pod, rule: ruleUnscheduled, label: reasonUnscheduled,
			why: "terminating, and bound to no node: no kubelet will ever finish it", facts: podFacts(pod, nil)}); err != nil {
			return err
		}
	}
	return nil
}

// podFacts is what every podgc decision records about the pod, plus extra.
func podFacts(pod *db.Object, extra map[string]any) map[string]any {
	f := map[string]any{"phase": pod.Pod.Phase, "node": pod.Pod.NodeName, "evicted": evicted(pod.Pod),
		"terminating": pod.DeletionTimestamp != nil}
	if pod.CreationTimestamp != nil {
		f["created"] = pod.CreationTimestamp.UTC()
	}
	maps.Copy(f, extra)
	return f
}

type metrics struct {
	deletes, errors *prometheus.CounterVec
	nodeChecks      *prometheus.CounterVec
	terminated      prometheus.Gauge
	passSeconds     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubegcd", Subsystem: "podgc", Name: "force_delete_pods_total",
			Help: "Pods PodGC force-deleted (attempts, as upstream counts them), by reason: terminated, out-of-service, orphaned, unscheduled.",
		}, []string{"reason"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubegcd", Subsystem: "podgc", Name: "force_delete_pods_errors_total",
			Help: "Force deletions by PodGC that failed, by reason.",
		}, []string{"reason"}),
		nodeChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubegcd", Subsystem: "podgc", Name: "node_checks_total",
			Help: "Live lookups of nodes missing from the mirror after their quarantine, by result: absent, present, error.",
		}, []string{"result"}),
		terminated: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "kubegcd", Subsystem: "podgc", Name: "terminated_pods",
			Help: "Terminated pods in the cluster at the last pass (when gcTerminated is on).",
		}),
		passSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "kubegcd", Subsystem: "podgc", Name: "pass_duration_seconds",
			Help:    "Time a PodGC pass takes, deletions included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
	}
	if err := promutil.Register(reg, m.deletes, m.errors, m.nodeChecks, m.terminated, m.passSeconds); err != nil {
		return nil, err
	}
	return m, nil
}

// evicted reports whether the kubelet evicted the pod (upstream's
// eviction.PodIsEvicted): such pods go first among the terminated pods,
// as the store's deletion order has them.
func evicted(p *db.Pod) bool { return p.Phase == "Failed" && p.Reason == "Evicted" }
