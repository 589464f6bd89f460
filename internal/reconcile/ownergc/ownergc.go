// Package ownergc is the ownership garbage collector. It deletes objects
// whose owners are all gone, removes dangling ownerReferences, and carries
// out foreground and orphan deletion, as kube-controller-manager's garbage
// collector does. It decides from the SQLite mirror, confirms every
// suspected absence with a live GET, and writes with preconditions.
package ownergc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// Store is what ownergc reads of the mirror; db.OwnerGC is one. What it holds
// pending is the applier's.
type Store interface {
	OwnerGCCandidates(ctx context.Context) ([]string, error)
	GetObject(ctx context.Context, uid string) (*db.Object, error)
	ObjectMeta(ctx context.Context, uid string) (*db.Object, error)
	DependentsOf(ctx context.Context, ownerUID string) ([]db.Dependent, error)
	DependentObjects(ctx context.Context, ownerUID string, fn func(*db.Object) error) error
	ResourceForKind(ctx context.Context, group, kind string) (*db.Resource, error)
}

// Options configure the controller.
type Options struct {
	reconcile.ControllerOptions
	DB Store
	// Client makes the live GETs, deletes and patches (metadata only).
	Client   metadata.Interface
	Recorder record.EventRecorder
	// CaughtUp reports whether no part of the mirror is behind the
	// cluster, as it is after an outage until every watch has resumed.
	// Nothing is decided while it reports false. Nil means always caught
	// up.
	CaughtUp func() bool
	Workers  int
	// ResyncPeriod is how often every candidate is looked at again.
	ResyncPeriod time.Duration
	// UnknownKindRetry is how long to wait before retrying an owner kind
	// the API does not serve, or a resource path it answers 404 for (the
	// next discovery refresh).
	UnknownKindRetry time.Duration
}

// Controller is the ownership garbage collector.
type Controller struct {
	opts   Options
	log    *slog.Logger
	queue  workqueue.TypedRateLimitingInterface[item]
	absent *absentCache
	// ownerGets shares the live GET of an owner missing from the mirror
	// among the workers that need it at once.
	ownerGets singleflight.Group
	metrics   *metrics
	passes    *reconcile.PassRecorder
	// overlay tracks, in dry-run, what enforce would already have changed,
	// so dry-run reaches the same decisions; nil when enforcing.
	overlay *overlay
	applied reconcile.AppliedWrites
	// snapshots holds the dependents read when their owner went
	// (enforcing only).
	snapshots snapshots
	kinds     kindCache
	// conflicts spaces out the retries of an item whose write was refused
	// (409). stale knows the versions refused, so that those objects are
	// read live.
	conflicts workqueue.TypedRateLimiter[item]
	stale     staleVersions

	resync chan struct{}
	// drained is woken each time a worker finishes an item, for a full
	// pass waiting for room in the queue.
	drained chan struct{}
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	b := reconcile.NewBase(api.ControllerOwnerGC, opts.ControllerOptions)
	opts.ControllerOptions = b.ControllerOptions
	if opts.Workers <= 0 {
		opts.Workers = 20
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = time.Minute
	}
	if opts.UnknownKindRetry <= 0 {
		opts.UnknownKindRetry = 30 * time.Second
	}
	m := newMetrics(b.Metrics)
	c := &Controller{
		opts:      opts,
		log:       b.Log,
		absent:    newAbsentCache(10000),
		metrics:   m,
		passes:    b.PassRecorder,
		resync:    make(chan struct{}, 1),
		drained:   make(chan struct{}, 1),
		conflicts: newConflictBackoff(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{
				Name: string(api.ControllerOwnerGC), MetricsProvider: m.queue}),
	}
	if opts.Applier.DryRun() {
		c.overlay = newOverlay()
	}
	c.passes.Queue(c.queue.Len)
	return c, nil
}

// OnChange is the ingest subscription: enqueue what a committed change may
// have affected. It never blocks. Before the mirror has synced, items only
// wait in the queue: no worker runs until then.
func (c *Controller) OnChange(changes []db.Change) {
	for _, ch := range changes {
		switch ch.Type {
		case db.ChangeRelisted:
			reconcile.Wake(c.resync)
		case db.ChangeDeleted:
			// An object that nothing names as an owner and that has no
			// decision pending leaves nothing to do when it goes. Most
			// objects that go are such: the dependents this collector
			// deletes.
			if !ch.Examined || ch.HasDependents ||
				c.opts.Applier.HasPending(api.ControllerOwnerGC, ch.UID) {
				c.queue.Add(item{kind: itemGone, uid: ch.UID})
			} else {
				c.stale.forget(ch.UID)
			}
			// Owners in foreground deletion may have been waiting for it.
			// Only owners being deleted can wait. When enforcing, an
			// examined change names those owners, and only they are woken.
			// Dry-run deletes owners in its overlay only, so it wakes
			// every owner.
			owners := ch.Owners
			if ch.Examined && c.overlay == nil {
				owners = ch.DeletingOwners
			}
			for _, o := range owners {
				c.queue.Add(item{kind: itemWake, uid: o})
			}
		default:
			// As upstream's graph builder: an update that changes none of
			// the facts decided on (a status, a label, a Lease renewal)
			// changes no decision, and is not looked at.
			if ch.OwnershipChanged {
				c.queue.Add(item{uid: ch.UID})
			}
		}
	}
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	c.log.Info("waiting for the mirror to sync")
	if !reconcile.WaitSynced(ctx, c.opts.Synced) {
		return nil
	}
	c.log.Info("starting", "workers", c.opts.Workers, "dry_run", c.opts.Applier.DryRun())

	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	c.opts.Heartbeat.Beat()
	made := c.fullPass(ctx)
	t := time.NewTicker(c.opts.ResyncPeriod)
	defer t.Stop()
	for {
		// A skipped pass is tried again soon, not a resync period later.
		var retry <-chan time.Time
		if !made {
			retry = time.After(skippedPassRetry)
		}
		select {
		case <-ctx.Done():
			c.queue.ShutDown()
			wg.Wait()
			return nil
		case <-t.C:
		case <-c.resync:
		case <-retry:
		}
		c.opts.Heartbeat.Beat()
		made = c.fullPass(ctx)
	}
}

// skippedPassRetry is how soon a full pass skipped while the mirror was
// behind is tried again.
const skippedPassRetry = time.Second

// caughtUp reports whether every part of the mirror is live (Options.CaughtUp).
func (c *Controller) caughtUp() bool { return c.opts.CaughtUp == nil || c.opts.CaughtUp() }

// fullPass enqueues every candidate the mirror shows, a few at a time. At
// most resyncBacklog of them wait in the queue at once. So the work that a
// change brings, such as an owner's deletion and its dependents, waits
// behind those few rather than behind every candidate of a large mirror.
// A mirror of 157,000 objects had 55,000 candidates, which took the
// workers 40 s.
//
// While part of the mirror is behind the cluster, the pass is skipped and
// says so. The workers decide nothing then either, and the candidates
// would only wait in the queue. fullPass reports whether it made the pass.
func (c *Controller) fullPass(ctx context.Context) bool {
	start := time.Now()
	if !c.caughtUp() {
		c.passes.Skipped(start, reconcile.SkipMirrorNotSynced, "part of the mirror is behind the cluster "+
			"(a watch has not resumed): nothing is decided until it has caught up")
		return false
	}
	c.passes.Ran(start)
	uids, err := c.opts.DB.OwnerGCCandidates(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("listing candidates", "err", err)
		}
		return true
	}
	c.metrics.candidates.Set(float64(len(uids)))
	backlog := resyncBacklog(c.opts.Workers)
	for _, uid := range uids {
		for c.queue.Len() >= backlog {
			select {
			case <-ctx.Done():
				return true
			case <-c.drained:
				// A worker finished an item: the pass makes progress.
				c.opts.Heartbeat.Beat()
			}
		}
		c.queue.Add(item{uid: uid})
	}
	return true
}

// resyncBacklog is how many items a full pass lets wait in the queue: a
// few for each worker, so that none idles while the pass feeds them.
func resyncBacklog(workers int) int { return 4 * workers }

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	it, quit := c.queue.Get()
	if quit {
		return false
	}
	// Done first (deferred calls run last in, first out), then the wake.
	defer reconcile.Wake(c.drained)
	defer c.queue.Done(it)
	// Some watches resume before others: the item waits until every part
	// of the mirror has caught up, as at start.
	if c.opts.CaughtUp != nil && !reconcile.WaitSynced(ctx, c.opts.CaughtUp) {
		return false
	}
	err := c.sync(ctx, it)
	c.passes.Worked(time.Now())
	switch {
	case err == nil:
		c.queue.Forget(it)
		c.conflicts.Forget(it)
	case errors.Is(err, errConflict):
		// Not a failure: the cluster is ahead of the copy decided on. The
		// delay gives the watch time to catch up; the next attempt reads the
		// object live if the mirror has not (see current).
		c.log.Debug("write refused: the object changed; retrying", "item", it, "err", err)
		c.queue.AddAfter(it, c.conflicts.When(it))
	case isUnknownKind(err):
		// Never taken for an absent owner or a gone object. The item is
		// retried once discovery may have caught up.
		c.log.Debug("kind or resource not served; retrying later", "item", it, "err", err)
		c.queue.Forget(it)
		c.queue.AddAfter(it, c.opts.UnknownKindRetry)
	case errors.Is(err, reconcile.ErrPaused):
		c.queue.AddAfter(it, 5*time.Second)
	default:
		if ctx.Err() == nil {
			c.log.Warn("sync failed; retrying", "item", it, "err", err)
			c.metrics.errors.Inc()
		}
		c.queue.AddRateLimited(it)
	}
	return true
}

// errConflict says that a write was refused (409) because the object
// changed since the copy it was decided on.
var errConflict = errors.New("the object changed since the copy decided on")

// Retries of an item whose writes keep being refused: 200 ms (the watch is
// almost always caught up by then), doubling to at most 5 minutes.
const (
	conflictBaseDelay = 200 * time.Millisecond
	conflictMaxDelay  = 5 * time.Minute
)

func newConflictBackoff() workqueue.TypedRateLimiter[item] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[item](conflictBaseDelay, conflictMaxDelay)
}

// sync is level-based: it looks at the item's object as the mirror shows
// it now (or as the cluster does, when the mirror is known to be behind).
func (c *Controller) sync(ctx context.Context, it item) error {
	switch it.kind {
	case itemWake:
		return c.wakeOwner(ctx, it.uid)
	case itemGone:
		return c.gone(ctx, it.uid)
	}
	uid := it.uid
	obj, ok := c.snapshots.take(uid)
	var err error
	if !ok {
		obj, err = c.opts.DB.GetObject(ctx, uid)
	}
	if errors.Is(err, db.ErrNotFound) {
		return c.gone(ctx, uid)
	}
	if err != nil {
		return err
	}
	if c.overlay.isDeleted(uid) {
		return nil
	}
	obj, err = c.current(ctx, obj)
	if err != nil {
		return err
	}
	if obj == nil {
		// Gone from the cluster; the mirror will follow.
		return c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, uid)
	}
	if c.beingDeleted(obj) {
		switch gcrules.Plan(gcrules.Object{Deleting: true, Finalizers: c.finalizers(obj)}).Action {
		case api.ActionOrphanDependents:
			return c.orphanDependents(ctx, obj)
		case api.ActionDeleteDependents:
			return c.deleteDependents(ctx, obj)
		}
		// Someone else deleted it, and it waits on other finalizers. It is
		// never sent a second delete. Owners waiting on it are woken when
		// it goes.
		return c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, uid)
	}
	if len(c.refs(obj)) == 0 {
		return c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, uid)
	}
	return c.attemptToDelete(ctx, obj)
}

// item is what the queue holds: an object to look at, and why.
type item struct {
	kind itemKind
	uid  string
}

// itemKind says why an object is queued.
type itemKind uint8

const (
	// itemLook asks for a decision about an object that changed or that
	// a pass found.
	itemLook itemKind = iota
	// itemWake only asks an owner to look again at its foreground
	// deletion because one of its dependents went. Unlike itemLook, it
	// never fans out to the owner's remaining dependents: a thousand
	// dependents going one by one must not queue the rest a thousand
	// times.
	itemWake
	// itemGone says that the mirror saw the object deleted. Only its
	// dependents need a look.
	itemGone
)

// String is the item as logs show it: the UID, after "wake:" or "gone:".
func (it item) String() string {
	switch it.kind {
	case itemWake:
		return "wake:" + it.uid
	case itemGone:
		return "gone:" + it.uid
	}
	return it.uid
}

func (c *Controller) wakeOwner(ctx context.Context, uid string) error {
	obj, err := c.object(ctx, uid)
	if err != nil || obj == nil {
		return err
	}
	if c.beingDeleted(obj) && c.hasFinalizer(obj, gcrules.FinalizerForeground) &&
		!c.hasFinalizer(obj, gcrules.FinalizerOrphan) {
		return c.deleteDependents(ctx, obj)
	}
	return nil
}

// gone handles an object that left the mirror: its dependents may now be
// garbage.
func (c *Controller) gone(ctx context.Context, uid string) error {
	c.stale.forget(uid)
	if err := c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, uid); err != nil {
		return err
	}
	if c.overlay == nil {
		// Enforcing, the dependents are read whole in one query and
		// handed each to its worker. A copy that turns stale meanwhile
		// costs one write refused by its resourceVersion precondition,
		// then a fresh read. Dry-run has no precondition to catch a stale
		// copy, so it reads each dependent when it decides.
		return c.opts.DB.DependentObjects(ctx, uid, func(d *db.Object) error {
			c.snapshots.put(d)
			c.queue.Add(item{uid: d.UID})
			return nil
		})
	}
	deps, err := c.opts.DB.DependentsOf(ctx, uid)
	if err != nil {
		return err
	}
	for _, d := range deps {
		c.queue.Add(item{uid: d.UID})
	}
	return nil
}

// snapshots holds dependents read together when their owner went, until a
// worker takes each. It is bounded, so that memory does not grow with the
// number of dependents. Beyond the bound, workers read them one by one.
type snapshots struct {
	mu sync.Mutex
	m  map[string]*db.Object
}

const maxSnapshots = 20000

func (s *snapshots) put(o *db.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*db.Object{}
	}
	if len(s.m) < maxSnapshots {
		s.m[o.UID] = o
	}
}

func (s *snapshots) take(uid string) (*db.Object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.m[uid]
	if ok {
		delete(s.m, uid)
	}
	return o, ok
}

func (c *Controller) beingDeleted(o *db.Object) bool {
	return o.DeletionTimestamp != nil || c.overlay.isForeground(o.UID)
}

func (c *Controller) hasFinalizer(o *db.Object, f string) bool {
	return slices.Contains(c.finalizers(o), f)
}

// finalizers returns o's finalizers as enforce would have left them: less
// those dry-run has removed, plus foregroundDeletion once dry-run began
// deleting it in the foreground.
func (c *Controller) finalizers(o *db.Object) []string {
	return c.overlay.finalizers(o.UID, o.Finalizers)
}

// refs returns obj's owner references, less those dry-run has removed.
func (c *Controller) refs(o *db.Object) []api.OwnerRef {
	if c.overlay == nil {
		return o.OwnerReferences
	}
	var out []api.OwnerRef
	for _, r := range o.OwnerReferences {
		if !c.overlay.refRemoved(o.UID, r.UID) {
			if c.overlay.refUnblocked(o.UID, r.UID) {
				r.BlockOwnerDeletion = new(false)
			}
			out = append(out, r)
		}
	}
	return out
}

// gvrFor maps an object's identity to the resource to call.
func (c *Controller) gvrFor(ctx context.Context, apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, errUnknownKind{apiVersion: apiVersion, kind: kind}
	}
	r, err := c.kinds.lookup(ctx, c.opts.DB, gv.Group, kind)
	if errors.Is(err, db.ErrNotFound) {
		return schema.GroupVersionResource{}, false, errUnknownKind{apiVersion: apiVersion, kind: kind}
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}, r.Namespaced, nil
}

// kindCache maps group/kind to the resource serving it for a few seconds:
// the mapping changes only with discovery, and every decision needs it.
type kindCache struct {
	mu sync.Mutex
	m  map[[2]string]kindEntry
}

type kindEntry struct {
	r   *db.Resource
	err error
	at  time.Time
}

const kindCacheTTL = 2 * time.Second

func (k *kindCache) lookup(ctx context.Context, store Store, group, kind string) (*db.Resource, error) {
	key := [2]string{group, kind}
	k.mu.Lock()
	e, ok := k.m[key]
	k.mu.Unlock()
	if ok && time.Since(e.at) < kindCacheTTL {
		return e.r, e.err
	}
	r, err := store.ResourceForKind(ctx, group, kind)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return nil, err
	}
	k.mu.Lock()
	if k.m == nil {
		k.m = map[[2]string]kindEntry{}
	}
	k.m[key] = kindEntry{r: r, err: err, at: time.Now()}
	k.mu.Unlock()
	return r, err
}

type errUnknownKind struct{ apiVersion, kind string }

func (e errUnknownKind) Error() string {
	return fmt.Sprintf("the API does not serve kind %s in %s", e.kind, e.apiVersion)
}

// isUnknownKind reports whether err says the API does not serve a kind or
// its resource path.
func isUnknownKind(err error) bool {
	var u errUnknownKind
	var p errUnservedPath
	return errors.As(err, &u) || errors.As(err, &p)
}
