// Package ttl is kube-controller-manager's TTL controller re-done on the
// SQLite mirror. It sets the node.alpha.kubernetes.io/ttl annotation, which
// says how long kubelets may cache objects, on every node. The TTL comes
// from the size of the cluster, in five bands that overlap, so that a
// cluster near a band's edge does not flap. The band moves with every node
// add and delete, as upstream's does (band.go), so the path the count took
// counts. Upstream re-annotates a node only on that node's next update.
// Here a change of the desired TTL reaches every node at once, and the
// band survives a restart.
package ttl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// sizeBand is one band of cluster sizes and its TTL (BR-19-01…05 in docs/rules.md).
type sizeBand struct {
	sizeMin, sizeMax int
	ttlSeconds       int
}

var sizeBands = []sizeBand{
	{sizeMin: 0, sizeMax: 100, ttlSeconds: 0},
	{sizeMin: 90, sizeMax: 500, ttlSeconds: 15},
	{sizeMin: 450, sizeMax: 1000, ttlSeconds: 30},
	{sizeMin: 900, sizeMax: 2000, ttlSeconds: 60},
	{sizeMin: 1800, sizeMax: 1<<31 - 1, ttlSeconds: 300},
}

// rule is the id of a band's rule: BR-19-01 … BR-19-05.
func rule(band int) string { return fmt.Sprintf("BR-19-%02d", band+1) }

// Store is what the TTL controller reads of the mirror; db.TTL is one.
type Store interface {
	ResourceID(ctx context.Context, group, version, resource string) (int64, error)
	NodeUIDs(ctx context.Context) ([]string, error)
	NodeTTLCounts(ctx context.Context) (map[string]int, error)
	NodesNotAtTTL(ctx context.Context, ttl string) ([]db.NodeTTL, error)
}

// Options configure the controller.
type Options struct {
	reconcile.ControllerOptions
	DB     Store
	Client kubernetes.Interface
	// ResourceSynced reports whether one resource's mirror is live; a
	// reconcile is skipped while nodes are not.
	ResourceSynced func(group, resource string) bool
	Workers        int
	// ResyncPeriod is how often every node is looked at without a change.
	ResyncPeriod time.Duration
}

// Controller is the TTL controller.
type Controller struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	passes  *reconcile.PassRecorder
	wake    chan struct{}
	// nodesResource is the mirror's id of the nodes resource, once known;
	// until then every change wakes the controller.
	nodesResource atomic.Int64

	tracker bandTracker
	band    int // the band of the last reconcile, to log a change
	applied reconcile.AppliedWrites
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	b := reconcile.NewBase(api.ControllerTTL, opts.ControllerOptions)
	opts.ControllerOptions = b.ControllerOptions
	if opts.Workers <= 0 {
		opts.Workers = 20
	}
	if opts.ResyncPeriod <= 0 {
		opts.ResyncPeriod = time.Minute
	}
	return &Controller{opts: opts, log: b.Log, metrics: newMetrics(b.Metrics), passes: b.PassRecorder,
		wake: make(chan struct{}, 1)}, nil
}

// OnChange is the ingest subscription: a change to a node moves the band
// and wakes the controller. It never blocks.
//
// A node's status update that leaves its readiness, taints and TTL
// annotation as they were (Change.TypedChanged false) changes nothing the
// controller decides on, and wakes nothing. Upstream checks that node's
// annotation again; here the mirror tells whether it changed. A large
// cluster's nodes update their status every few seconds each: woken by
// each, the controller read every node ten times a second.
func (c *Controller) OnChange(changes []db.Change) {
	id := c.nodesResource.Load()
	if id == 0 {
		// Before Run knows the nodes resource: the band is loaded from
		// the mirror later, which holds these changes.
		reconcile.Wake(c.wake)
		return
	}
	var nodes []db.Change
	wake := false
	for _, ch := range changes {
		if ch.ResourceID == id {
			nodes = append(nodes, ch)
			wake = wake || ch.Type != db.ChangeUpserted || ch.TypedChanged
		}
	}
	if len(nodes) > 0 {
		c.tracker.observe(nodes)
	}
	if wake {
		reconcile.Wake(c.wake)
	}
}

// Run reconciles on node changes and every resync period until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	if !reconcile.WaitSynced(ctx, c.opts.Synced) {
		return nil
	}
	if id, err := c.opts.DB.ResourceID(ctx, "", "v1", "nodes"); err == nil {
		c.nodesResource.Store(id)
	}
	c.log.Info("starting", "dry_run", c.opts.Applier.DryRun())
	t := time.NewTicker(c.opts.ResyncPeriod)
	defer t.Stop()
	for {
		c.opts.Heartbeat.Beat()
		// A failed reconcile is tried again at the next node change or
		// resync, not on a wait.Backoff: each reconcile reads the mirror
		// afresh, and a back-off would only delay the band's next TTL.
		if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("reconcile failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.wake:
			// Let a burst of node changes settle into one reconcile.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
		case <-t.C:
		}
	}
}

// Reconcile brings the band up to date with the node count and every node's
// annotation to the band's TTL. It is skipped, and says so, while the
// mirror of nodes is not live: a stale count could move the band.
func (c *Controller) Reconcile(ctx context.Context) error {
	if !c.opts.ResourceSynced("", "nodes") {
		c.passes.Skipped(time.Now(), reconcile.SkipMirrorNotSynced, "the mirror of nodes is not live")
		return nil
	}
	c.passes.Ran(time.Now())
	if c.tracker.needsLoad() {
		if err := c.loadBand(ctx); err != nil {
			c.tracker.abortLoad()
			return err
		}
	}
	prev := c.band
	var count int
	c.band, count = c.tracker.current()
	b := sizeBands[c.band]
	if c.band != prev {
		c.log.Info("cluster size band changed", "nodes", count, "from_step", prev, "to_step", c.band,
			"ttl_seconds", b.ttlSeconds)
	}
	c.metrics.ttl.Set(float64(b.ttlSeconds))
	c.metrics.nodes.Set(float64(count))

	candidates, err := c.opts.DB.NodesNotAtTTL(ctx, strconv.Itoa(b.ttlSeconds))
	if err != nil {
		return err
	}
	p := decide(c.band, count, candidates, c.applied.WrittenAt)
	stillWrong := func(uid string) bool { return p.wrong[uid] }
	if err := c.opts.Applier.EndPass(ctx, api.ControllerTTL, stillWrong); err != nil {
		return err
	}
	work := make(chan annotation)
	var wg sync.WaitGroup
	for range min(c.opts.Workers, len(p.annotate)) {
		wg.Go(func() {
			for a := range work {
				c.annotate(ctx, a, p.want)
			}
		})
	}
	for _, a := range p.annotate {
		work <- a
		c.opts.Heartbeat.Beat() // a long reconcile of many nodes is progress too
	}
	close(work)
	wg.Wait()
	return nil
}

// loadBand (re)loads the band's node set from the mirror: at the first
// reconcile, and after nodes were listed again.
func (c *Controller) loadBand(ctx context.Context) error {
	uids, err := c.opts.DB.NodeUIDs(ctx)
	if err != nil {
		return err
	}
	carried, err := c.opts.DB.NodeTTLCounts(ctx)
	if err != nil {
		return err
	}
	first := !c.tracker.isLoaded()
	c.tracker.load(uids, carried)
	if first {
		band, n := c.tracker.current()
		c.band = band
		c.log.Info("band recovered from the mirror", "nodes", n, "band", band,
			"ttl_seconds", sizeBands[band].ttlSeconds)
	}
	return nil
}

// annotate applies one decision of decide: a merge patch of the node's
// annotation to want, naming the node's UID.
func (c *Controller) annotate(ctx context.Context, a annotation, want string) {
	n, d := a.node, a.decision
	// Stamped as a worker takes the node: decision_to_apply_seconds
	// measures the write, not the wait for a worker.
	d.DecidedAt = time.Now()
	outcome, err := c.opts.Applier.Apply(ctx, d, func(ctx context.Context) error {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": n.UID, "annotations": map[string]string{corev1.ObjectTTLAnnotationKey: want}}})
		if err != nil {
			return err
		}
		_, err = c.opts.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch,
			metav1.PatchOptions{})
		return err
	})
	if outcome == api.OutcomeApplied {
		c.applied.Record(n.UID, n.ResourceVersion)
		c.metrics.patches.Inc()
	}
	if err != nil && ctx.Err() == nil && !errors.Is(err, reconcile.ErrPaused) {
		c.log.Warn("annotating a node failed; retried at the next reconcile", "node", n.Name, "err", err)
	}
}

type metrics struct {
	ttl, nodes prometheus.Gauge
	patches    prometheus.Counter
}

func newMetrics(f promutil.Factory) *metrics {
	return &metrics{
		ttl: f.Gauge("seconds",
			"The node.alpha.kubernetes.io/ttl every node should carry, from the cluster's size band."),
		nodes: f.Gauge("nodes",
			"Nodes the TTL controller counted at its last reconcile."),
		patches: f.Counter("patches_total",
			"Nodes whose node.alpha.kubernetes.io/ttl annotation was patched."),
	}
}
