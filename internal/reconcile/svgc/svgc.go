// Package svgc is kube-controller-manager's StorageVersion garbage collector
// re-done on the mirror: when a kube-apiserver's identity Lease goes, its
// entries leave every StorageVersion; a StorageVersion naming a server
// without such a Lease loses that entry; a StorageVersion left with none is
// deleted. Two queues, one per trigger, each with its own backoff, so a
// failure on one never stalls the other.
package svgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// Name is the controller's name in flags, audit rows and metrics.
const Name = gcrules.ControllerSVGC

// Rule ids (docs/rules.md): upstream's StorageVersion GC numbers none, so
// kubegcd's own, KG-06-xx.
const (
	ruleNoLease      = "KG-06-01" // entries of servers without an identity lease go
	ruleEmpty        = "KG-06-02" // a StorageVersion left with none is deleted
	actionRemove     = "remove-entries"
	actionDelete     = "delete"
	identityLabel    = "apiserver.kubernetes.io/identity"
	identityValue    = "kube-apiserver"
	identityLeasesNS = metav1.NamespaceSystem
)

// Store is what svgc reads of the mirror; *db.DB is one.
type Store interface {
	ResourceID(ctx context.Context, group, version, resource string) (int64, error)
	ServersWithoutLease(ctx context.Context) ([]string, error)
	StorageVersionsWithoutLease(ctx context.Context) ([]db.Target, error)
	StorageVersionsOf(ctx context.Context, serverID string) ([]string, error)
}

// Options configure the controller.
type Options struct {
	DB      Store
	Applier *reconcile.Applier
	Client  kubernetes.Interface
	Logger  *slog.Logger
	// Synced reports whether the mirror is complete; nothing is decided before.
	Synced func() bool
	// ResyncPeriod is how often every StorageVersion is looked at again.
	ResyncPeriod time.Duration
	// Heartbeat beats at every scan, for the watchdog; nil for none.
	Heartbeat *liveness.Loop
	// Passes records its scans, its queues and the last item worked
	// (/status); nil records them nowhere.
	Passes     *reconcile.Passes
	Registerer prometheus.Registerer
}

// Controller is the StorageVersion garbage collector.
type Controller struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	passes  *reconcile.PassRecorder
	// leases holds the names of identity leases that may be gone;
	// storageVersions the names of StorageVersions to look at.
	leases, storageVersions workqueue.TypedRateLimitingInterface[string]
	resources               struct{ leases, storageVersions atomic.Int64 }
	rescan                  chan struct{}
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = time.Minute
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	queue := func(name string) workqueue.TypedRateLimitingInterface[string] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
	}
	if opts.Passes == nil {
		if opts.Passes, err = reconcile.NewPasses(nil); err != nil {
			return nil, err
		}
	}
	c := &Controller{opts: opts, log: opts.Logger, metrics: m, passes: opts.Passes.For(Name, opts.Logger),
		leases: queue("svgc_leases"), storageVersions: queue("svgc_storageversions"), rescan: make(chan struct{}, 1)}
	c.passes.Queue(func() int { return c.leases.Len() + c.storageVersions.Len() })
	return c, nil
}

// OnChange is the ingest subscription. A Lease deleted, or a StorageVersion
// created or changed, asks for a rescan of the mirror, which finds the
// servers without a lease and the StorageVersions naming them (as upstream,
// which watches lease deletions and StorageVersion adds and updates). Lease
// renewals, the busiest changes of a large cluster, wake nothing. It never
// blocks.
func (c *Controller) OnChange(changes []db.Change) {
	leases, svs := c.resources.leases.Load(), c.resources.storageVersions.Load()
	for _, ch := range changes {
		if leases == 0 || ch.Type == db.ChangeRelisted ||
			ch.ResourceID == leases && ch.Type == db.ChangeDeleted ||
			ch.ResourceID == svs && ch.Type == db.ChangeUpserted {
			reconcile.Wake(c.rescan)
			return
		}
	}
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.leases.ShutDown()
	defer c.storageVersions.ShutDown()
	if !reconcile.WaitSynced(ctx, c.opts.Synced) {
		return nil
	}
	if id, err := c.opts.DB.ResourceID(ctx, "coordination.k8s.io", "v1", "leases"); err == nil {
		c.resources.leases.Store(id)
	}
	if id, err := c.opts.DB.ResourceID(ctx, "internal.apiserver.k8s.io", "v1alpha1", "storageversions"); err == nil {
		c.resources.storageVersions.Store(id)
	}
	c.log.Info("starting", "dry_run", c.opts.Applier.DryRun())
	var wg sync.WaitGroup
	wg.Go(func() { c.work(ctx, c.leases, c.processLease) })
	wg.Go(func() { c.work(ctx, c.storageVersions, c.processStorageVersion) })
	t := time.NewTicker(c.opts.ResyncPeriod)
	defer t.Stop()
	for {
		c.opts.Heartbeat.Beat()
		c.scan(ctx)
		select {
		case <-ctx.Done():
			c.leases.ShutDown()
			c.storageVersions.ShutDown()
			wg.Wait()
			return nil
		case <-c.rescan:
		case <-t.C:
		}
	}
}

// scan queues the servers without an identity lease (the lease path) and
// the StorageVersions naming them (the StorageVersion path), and ends the
// pass over what is pending.
func (c *Controller) scan(ctx context.Context) {
	c.passes.Ran(time.Now())
	if err := c.scanOnce(ctx); err != nil && ctx.Err() == nil {
		c.log.Error("scanning the mirror", "err", err)
	}
	c.metrics.depth.WithLabelValues("leases").Set(float64(c.leases.Len()))
	c.metrics.depth.WithLabelValues("storageversions").Set(float64(c.storageVersions.Len()))
}

// scanOnce queues what the mirror shows without an identity Lease, then
// forgets what was pending about any other StorageVersion: one gone, or
// whose servers' Leases are back, needs nothing done any more.
func (c *Controller) scanOnce(ctx context.Context) error {
	servers, err := c.opts.DB.ServersWithoutLease(ctx)
	if err != nil {
		return err
	}
	for _, s := range servers {
		c.leases.Add(s)
	}
	svs, err := c.opts.DB.StorageVersionsWithoutLease(ctx)
	if err != nil {
		return err
	}
	candidates := make(map[string]bool, len(svs))
	for _, sv := range svs {
		c.storageVersions.Add(sv.Name)
		candidates[sv.UID] = true
	}
	return c.opts.Applier.EndPass(ctx, Name, func(uid string) bool { return candidates[uid] })
}

// work runs one queue: failures are retried with that queue's backoff.
func (c *Controller) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], process func(context.Context, string) error) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		err := process(ctx, key)
		c.passes.Worked(time.Now())
		switch {
		case err == nil:
			q.Forget(key)
		case errors.Is(err, reconcile.ErrPaused):
			q.AddAfter(key, 5*time.Second)
		default:
			if ctx.Err() == nil {
				c.log.Warn("retrying", "key", key, "err", err)
				c.metrics.errors.Inc()
			}
			q.AddRateLimited(key)
		}
		q.Done(key)
	}
}

// processLease handles a server whose identity lease is not in the mirror:
// if the API server does not have it either (it was not re-created
// meanwhile), every StorageVersion with an entry of it is queued for the
// StorageVersion path, which removes the entries. (Upstream's lease path
// writes itself; deciding every StorageVersion in one place keeps dry-run's
// record of it single.)
func (c *Controller) processLease(ctx context.Context, server string) error {
	_, err := c.opts.Client.CoordinationV1().Leases(identityLeasesNS).Get(ctx, server, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil // re-created: its entries stay
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("looking up lease %s: %w", server, err)
	}
	names, err := c.opts.DB.StorageVersionsOf(ctx, server)
	if err != nil {
		return err
	}
	for _, name := range names {
		c.storageVersions.Add(name)
	}
	return nil
}

// processStorageVersion removes the entries of servers without an identity
// lease from one StorageVersion, each lease looked up live.
func (c *Controller) processStorageVersion(ctx context.Context, name string) error {
	sv, err := c.opts.Client.InternalV1alpha1().StorageVersions().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	gone := map[string]bool{}
	for _, e := range sv.Status.StorageVersions {
		lease, err := c.opts.Client.CoordinationV1().Leases(identityLeasesNS).Get(ctx, e.APIServerID, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[e.APIServerID] = true
		case err != nil:
			// Upstream drops the entry on any error; a failed lookup is
			// not proof of absence, so retry instead.
			return fmt.Errorf("looking up lease %s: %w", e.APIServerID, err)
		case lease.Labels[identityLabel] != identityValue:
			gone[e.APIServerID] = true
		}
	}
	kept, removed := without(sv, gone)
	if len(removed) == 0 {
		return nil
	}
	return c.updateOrDelete(ctx, sv, kept, removed,
		fmt.Sprintf("entries of API servers without a kube-apiserver identity lease in kube-system (looked up live): %v", removed))
}

// without splits sv's entries into those of servers not in gone, and the
// ids of those removed.
func without(sv *apiserverinternalv1alpha1.StorageVersion, gone map[string]bool) (kept []apiserverinternalv1alpha1.ServerStorageVersion, removed []string) {
	for _, e := range sv.Status.StorageVersions {
		if gone[e.APIServerID] {
			removed = append(removed, e.APIServerID)
		} else {
			kept = append(kept, e)
		}
	}
	return kept, removed
}

// updateOrDelete writes sv with only kept entries through the status
// subresource (its resourceVersion makes the write conditional), or deletes
// it, with UID and resourceVersion preconditions, when none is left.
func (c *Controller) updateOrDelete(ctx context.Context, sv *apiserverinternalv1alpha1.StorageVersion,
	kept []apiserverinternalv1alpha1.ServerStorageVersion, removed []string, why string) error {
	target := db.Target{APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion", Name: sv.Name, UID: string(sv.UID)}
	facts := map[string]any{"removedServers": removed, "keptEntries": len(kept)}
	d := reconcile.Decision{Controller: Name, Rule: ruleNoLease, Action: actionRemove, Target: target, ResourceVersion: sv.ResourceVersion,
		Reason: why, Facts: facts, DecidedAt: time.Now()}
	if len(kept) == 0 {
		d.Rule, d.Action = ruleEmpty, actionDelete
		d.Reason = why + "; none is left, so the StorageVersion is deleted"
		_, err := c.opts.Applier.Apply(ctx, d, func(ctx context.Context) error {
			uid, rv := sv.UID, sv.ResourceVersion
			return c.opts.Client.InternalV1alpha1().StorageVersions().Delete(ctx, sv.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
		})
		c.count(err, actionDelete)
		return err
	}
	updated := sv.DeepCopy()
	updated.Status.StorageVersions = kept
	SetCommonEncodingVersion(updated, time.Now())
	if v := updated.Status.CommonEncodingVersion; v != nil {
		facts["commonEncodingVersion"] = *v
	}
	_, err := c.opts.Applier.Apply(ctx, d, func(ctx context.Context) error {
		_, err := c.opts.Client.InternalV1alpha1().StorageVersions().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		return err
	})
	c.count(err, actionRemove)
	return err
}

func (c *Controller) count(err error, action string) {
	if err == nil && !c.opts.Applier.DryRun() {
		c.metrics.writes.WithLabelValues(action).Inc()
	}
}

// SetCommonEncodingVersion recomputes status.commonEncodingVersion (set
// when every entry agrees) and the AllEncodingVersionsEqual condition, as
// k8s.io/apiserver's storageversion.SetCommonEncodingVersion does.
func SetCommonEncodingVersion(sv *apiserverinternalv1alpha1.StorageVersion, now time.Time) {
	var old *string
	if v := sv.Status.CommonEncodingVersion; v != nil {
		s := *v
		old = &s
	}
	sv.Status.CommonEncodingVersion = nil
	if len(sv.Status.StorageVersions) > 0 {
		first := sv.Status.StorageVersions[0].EncodingVersion
		agreed := true
		for _, e := range sv.Status.StorageVersions {
			if e.EncodingVersion != first {
				agreed = false
				break
			}
		}
		if agreed {
			sv.Status.CommonEncodingVersion = &first
		}
	}
	cond := apiserverinternalv1alpha1.StorageVersionCondition{
		Type: apiserverinternalv1alpha1.AllEncodingVersionsEqual, Status: apiserverinternalv1alpha1.ConditionFalse,
		ObservedGeneration: sv.Generation, LastTransitionTime: metav1.NewTime(now),
		Reason: "CommonEncodingVersionUnset", Message: "Common encoding version unset",
	}
	if sv.Status.CommonEncodingVersion != nil {
		cond.Status, cond.Reason, cond.Message = apiserverinternalv1alpha1.ConditionTrue, "CommonEncodingVersionSet", "Common encoding version set"
	}
	force := old != nil && sv.Status.CommonEncodingVersion != nil && *old != *sv.Status.CommonEncodingVersion
	for i := range sv.Status.Conditions {
		existing := &sv.Status.Conditions[i]
		if existing.Type != cond.Type {
			continue
		}
		if existing.Status != cond.Status || force {
			existing.LastTransitionTime = cond.LastTransitionTime
		}
		existing.Status, existing.Reason, existing.Message, existing.ObservedGeneration = cond.Status, cond.Reason, cond.Message, cond.ObservedGeneration
		return
	}
	sv.Status.Conditions = append(sv.Status.Conditions, cond)
}

type metrics struct {
	writes *prometheus.CounterVec
	errors prometheus.Counter
	depth  *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubegcd", Subsystem: "svgc", Name: "writes_total",
			Help: "StorageVersions written by svgc, by action: remove-entries, delete.",
		}, []string{"action"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "kubegcd", Subsystem: "svgc", Name: "errors_total",
			Help: "Work items of svgc that failed and were retried.",
		}),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "kubegcd", Subsystem: "svgc", Name: "queue_depth",
			Help: "Items waiting in svgc's queues: leases, storageversions.",
		}, []string{"queue"}),
	}
	if err := promutil.Register(reg, m.writes, m.errors, m.depth); err != nil {
		return nil, err
	}
	return m, nil
}
