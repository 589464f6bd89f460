// Package svgc is kube-controller-manager's StorageVersion garbage collector
// re-done on the mirror. When a kube-apiserver's identity Lease goes, its
// entries leave every StorageVersion. A StorageVersion that names a server
// without such a Lease loses that entry. A StorageVersion left with no
// entry is deleted. There are two queues, one per trigger, each with its
// own backoff, so a failure on one never stalls the other.
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
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// Rule ids (docs/rules.md): upstream's StorageVersion GC numbers none of
// its rules, so these are kubegcd's own, KG-06-xx.
const (
	ruleNoLease      = "KG-06-01" // entries of servers without an identity lease go
	ruleEmpty        = "KG-06-02" // a StorageVersion left with none is deleted
	identityLabel    = "apiserver.kubernetes.io/identity"
	identityValue    = "kube-apiserver"
	identityLeasesNS = metav1.NamespaceSystem
)

// Store is what svgc reads of the mirror; db.SVGC is one.
type Store interface {
	ResourceID(ctx context.Context, group, version, resource string) (int64, error)
	ServersWithoutLease(ctx context.Context) ([]string, error)
	StorageVersionsWithoutLease(ctx context.Context) ([]api.Target, error)
	StorageVersionsOf(ctx context.Context, serverID string) ([]string, error)
}

// Options configure the controller.
type Options struct {
	reconcile.ControllerOptions
	DB     Store
	Client kubernetes.Interface
	// ResyncPeriod is how often every StorageVersion is looked at again.
	ResyncPeriod time.Duration
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
	b := reconcile.NewBase(api.ControllerSVGC, opts.ControllerOptions)
	opts.ControllerOptions = b.ControllerOptions
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = time.Minute
	}
	m := newMetrics(b.Metrics)
	queue := func(name string) workqueue.TypedRateLimitingInterface[string] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: m.queues})
	}
	c := &Controller{opts: opts, log: b.Log, metrics: m, passes: b.PassRecorder,
		leases: queue("leases"), storageVersions: queue("storageversions"), rescan: make(chan struct{}, 1)}
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
	id, err := c.opts.DB.ResourceID(ctx, "internal.apiserver.k8s.io", "v1alpha1", "storageversions")
	if err == nil {
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
	return c.opts.Applier.EndPass(ctx, api.ControllerSVGC, func(uid string) bool { return candidates[uid] })
}

// work runs one queue: failures are retried with that queue's backoff.
// That is the workqueue's per-item exponential rate limiter, as upstream's
// controllers use, rather than a wait.Backoff loop, which would hold the
// worker, and every other item of its queue, while it waits.
func (c *Controller) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[string],
	process func(context.Context, string) error) {
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

// processLease handles a server whose identity lease is not in the mirror.
// If the API server does not have the lease either, as it was not
// re-created meanwhile, every StorageVersion with an entry of the server
// is queued for the StorageVersion path, which removes the entries.
// Upstream's lease path writes itself. Here every StorageVersion is
// decided in one place, so that dry-run records each decision once.
func (c *Controller) processLease(ctx context.Context, server string) error {
	_, err := c.opts.Client.CoordinationV1().Leases(identityLeasesNS).Get(ctx, server, metav1.GetOptions{})
	if gone, err := leaseGone(server, err); !gone {
		return err
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

// processStorageVersion looks up live the identity lease of every server
// one StorageVersion names, lets decideStorageVersion decide, and writes.
func (c *Controller) processStorageVersion(ctx context.Context, name string) error {
	sv, err := c.opts.Client.InternalV1alpha1().StorageVersions().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	leases := map[string]*coordinationv1.Lease{}
	for _, e := range sv.Status.StorageVersions {
		if _, done := leases[e.APIServerID]; done {
			continue
		}
		lease, err := c.opts.Client.CoordinationV1().Leases(identityLeasesNS).Get(ctx, e.APIServerID,
			metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lease = nil
		case err != nil:
			// Upstream drops the entry on any error; a failed lookup is
			// not proof of absence, so retry instead.
			return fmt.Errorf("looking up lease %s: %w", e.APIServerID, err)
		}
		leases[e.APIServerID] = lease
	}
	act, ok := decideStorageVersion(sv, leases, c.opts.Now())
	if !ok {
		return nil
	}
	return c.updateOrDelete(ctx, sv, act)
}

// updateOrDelete applies act: it writes act.update through the status
// subresource (its resourceVersion makes the write conditional), or deletes
// sv, with UID and resourceVersion preconditions, when act has no update.
func (c *Controller) updateOrDelete(ctx context.Context, sv *apiserverinternalv1alpha1.StorageVersion,
	act storageVersionAction) error {
	svs := c.opts.Client.InternalV1alpha1().StorageVersions()
	if act.update == nil {
		_, err := c.opts.Applier.Apply(ctx, act.decision, func(ctx context.Context) error {
			uid, rv := sv.UID, sv.ResourceVersion
			pre := &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}
			return svs.Delete(ctx, sv.Name, metav1.DeleteOptions{Preconditions: pre})
		})
		c.count(err, api.ActionDelete)
		return err
	}
	_, err := c.opts.Applier.Apply(ctx, act.decision, func(ctx context.Context) error {
		_, err := svs.UpdateStatus(ctx, act.update, metav1.UpdateOptions{})
		return err
	})
	c.count(err, api.ActionRemoveEntries)
	return err
}

func (c *Controller) count(err error, action api.Action) {
	if err == nil && !c.opts.Applier.DryRun() {
		c.metrics.writes.WithLabelValues(string(action)).Inc()
	}
}

type metrics struct {
	writes *prometheus.CounterVec
	errors prometheus.Counter
	queues workqueue.MetricsProvider
}

func newMetrics(f promutil.Factory) *metrics {
	return &metrics{
		writes: f.CounterVec("writes_total",
			"StorageVersions written by svgc, by action: remove-entries, delete.",
			"action"),
		errors: f.Counter("errors_total", "Work items of svgc that failed and were retried."),
		queues: f.QueueDepth("Items waiting in svgc's queues: leases, storageversions.", true),
	}
}
