// Package lcgc is kube-apiserver's LeaseCandidate garbage collector re-done
// on the mirror: every period, the candidates whose spec.renewTime is unset
// or older than ValidFor are found by SQL, each is read live, and one still
// expired is deleted with UID and resourceVersion preconditions. It is idle
// while the API does not serve LeaseCandidates.
package lcgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// Rule ids (docs/rules.md): upstream's LeaseCandidate GC numbers none of
// its rules, so these are kubegcd's own, KG-04-xx.
const (
	ruleExpired = "KG-04-01" // an expired candidate, read live, is deleted
	kind        = "LeaseCandidate"
	group       = "coordination.k8s.io"
	resource    = "leasecandidates"
)

// versions are the versions of LeaseCandidates lcgc speaks, in the order
// it prefers them.
var versions = []string{coordinationv1beta1.SchemeGroupVersion.Version, coordinationv1alpha2.SchemeGroupVersion.Version}

// DefaultPeriod is upstream's LeaseCandidateGCPeriod.
const DefaultPeriod = 30 * time.Minute

// retryPeriod is how soon a pass follows one that left work undone: a
// candidate paused by the blast-radius cap, or whose read or delete failed.
const retryPeriod = time.Minute

// Store is what lcgc reads of the mirror; db.LCGC is one.
type Store interface {
	ExpiredLeaseCandidates(ctx context.Context, renewedBefore time.Time) ([]db.LeaseCandidateRow, error)
}

// Options configure the controller.
type Options struct {
	reconcile.ControllerOptions
	DB     Store
	Client kubernetes.Interface
	// ResourceSynced reports whether one resource's mirror is live; a pass
	// is skipped while that of LeaseCandidates is not.
	ResourceSynced func(group, resource string) bool
	// Period between passes (upstream: 30 min).
	Period time.Duration
}

// Controller is the LeaseCandidate garbage collector.
type Controller struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	passes  *reconcile.PassRecorder
	// served is the version of LeaseCandidates the last pass found
	// served, or "" when none was.
	served string
	// looked says that a pass has looked for a served version.
	looked bool
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	b := reconcile.NewBase(api.ControllerLCGC, opts.ControllerOptions)
	opts.ControllerOptions = b.ControllerOptions
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.ResourceSynced == nil {
		opts.ResourceSynced = func(string, string) bool { return true }
	}
	return &Controller{opts: opts, log: b.Log, metrics: newMetrics(b.Metrics), passes: b.PassRecorder}, nil
}

// Run makes a pass at once, then every period, until ctx ends. A pass that
// left work undone is followed by another within retryPeriod.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	if !reconcile.WaitSynced(ctx, c.opts.Synced) {
		return nil
	}
	// Debug: on a cluster without LeaseCandidates this controller has
	// nothing to say. The first pass that finds them served says so.
	c.log.Debug("starting", "period", c.opts.Period, "dry_run", c.opts.Applier.DryRun())
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		undone, err := c.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Error("pass failed", "err", err)
		}
		next := c.opts.Period
		if undone || err != nil {
			next = min(next, retryPeriod)
		}
		t.Reset(next)
	}
}

// Pass collects the expired LeaseCandidates once, then forgets what it
// held pending about any other. It reports whether it left work undone,
// to be retried soon.
func (c *Controller) Pass(ctx context.Context) (undone bool, err error) {
	c.opts.Heartbeat.Beat()
	start := c.opts.Now()
	version, err := c.servedVersion()
	if err != nil {
		return true, err
	}
	c.noteServed(version)
	if version == "" {
		// Nothing to collect, and nothing held about candidates any more.
		c.passes.Ran(start)
		return false, c.opts.Applier.EndPass(ctx, api.ControllerLCGC, func(string) bool { return false })
	}
	if !c.opts.ResourceSynced(group, resource) {
		c.passes.Skipped(start, reconcile.SkipMirrorNotSynced, "the mirror of "+resource+" is not live")
		return true, nil
	}
	c.passes.Ran(start)
	defer func() { c.metrics.passSeconds.Observe(time.Since(start).Seconds()) }()
	rows, err := c.opts.DB.ExpiredLeaseCandidates(ctx, start.Add(-ValidFor))
	if err != nil {
		return true, err
	}
	decided := map[string]bool{}
	for _, r := range rows {
		if ctx.Err() != nil {
			// Some candidates went unseen: what is pending about them
			// stays for a pass that sees them all.
			return true, nil
		}
		c.opts.Heartbeat.Beat()
		uid, err := c.collect(ctx, version, r)
		if uid != "" {
			decided[uid] = true
		}
		if err != nil {
			undone = true
			if !errors.Is(err, reconcile.ErrPaused) && ctx.Err() == nil {
				c.metrics.errors.Inc()
			}
		}
	}
	return undone, c.opts.Applier.EndPass(ctx, api.ControllerLCGC, func(uid string) bool { return decided[uid] })
}

// collect reads the candidate r of the mirror live, lets decide decide and
// deletes it through the applier, which logs and audits the outcome. It
// returns the UID of what is still held pending, if anything: the
// candidate it decided to delete, or one it could not read. It returns an
// error when the candidate is to be tried again.
func (c *Controller) collect(ctx context.Context, version string, r db.LeaseCandidateRow) (string, error) {
	live, err := c.get(ctx, version, r.Namespace, r.Name)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("reading a LeaseCandidate live; tried again within a minute",
				"namespace", r.Namespace, "name", r.Name, "err", err)
		}
		return r.UID, err
	}
	d, v := decide(live, c.opts.Now())
	if v != verdictDelete {
		c.log.Debug("kept", "namespace", live.Namespace, "name", live.Name, "verdict", v)
		return "", nil
	}
	outcome, err := c.opts.Applier.Apply(ctx, d, func(ctx context.Context) error { return c.delete(ctx, live) })
	if err == nil && outcome == api.OutcomeApplied {
		c.metrics.deletes.Inc()
	}
	return live.UID, err
}

// servedVersion returns the version of LeaseCandidates the API serves, of
// those lcgc speaks, or "" when it serves none.
func (c *Controller) servedVersion() (string, error) {
	for _, v := range versions {
		list, err := c.opts.Client.Discovery().ServerResourcesForGroupVersion(group + "/" + v)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("discovering %s/%s: %w", group, v, err)
		}
		for _, r := range list.APIResources {
			if r.Name == resource {
				return v, nil
			}
		}
	}
	return "", nil
}

// noteServed logs a change of the version served: at info when a pass
// finds LeaseCandidates served, at debug when it finds none.
func (c *Controller) noteServed(version string) {
	if c.looked && version == c.served {
		return
	}
	if version == "" {
		c.log.Debug("LeaseCandidates are not served; nothing to collect")
	} else {
		c.log.Info("collecting expired LeaseCandidates", "version", group+"/"+version, "period", c.opts.Period,
			"valid_for", ValidFor, "dry_run", c.opts.Applier.DryRun())
	}
	c.served, c.looked = version, true
}

// get reads one candidate live through the typed client of version.
func (c *Controller) get(ctx context.Context, version, namespace, name string) (candidate, error) {
	if version == coordinationv1alpha2.SchemeGroupVersion.Version {
		lcs := c.opts.Client.CoordinationV1alpha2().LeaseCandidates(namespace)
		lc, err := lcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return candidate{}, err
		}
		return fromV1alpha2(lc), nil
	}
	lcs := c.opts.Client.CoordinationV1beta1().LeaseCandidates(namespace)
	lc, err := lcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return candidate{}, err
	}
	return fromV1beta1(lc), nil
}

// delete deletes lc, on the UID and resourceVersion it was read with: a
// candidate renewed since, or re-created under its name, stays.
func (c *Controller) delete(ctx context.Context, lc candidate) error {
	uid, rv := types.UID(lc.UID), lc.ResourceVersion
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
	if lc.APIVersion == coordinationv1alpha2.SchemeGroupVersion.String() {
		return c.opts.Client.CoordinationV1alpha2().LeaseCandidates(lc.Namespace).Delete(ctx, lc.Name, opts)
	}
	return c.opts.Client.CoordinationV1beta1().LeaseCandidates(lc.Namespace).Delete(ctx, lc.Name, opts)
}

type metrics struct {
	deletes     prometheus.Counter
	errors      prometheus.Counter
	passSeconds prometheus.Histogram
}

func newMetrics(f promutil.Factory) *metrics {
	return &metrics{
		deletes: f.Counter("deletes_total", "Expired LeaseCandidates lcgc deleted (none in dry-run)."),
		errors: f.Counter("errors_total",
			"LeaseCandidates whose live read or delete failed; each is tried again within a minute."),
		passSeconds: f.Histogram("pass_duration_seconds",
			"Time an lcgc pass takes, its live reads and deletes included.",
			prometheus.ExponentialBuckets(0.001, 4, 10)),
	}
}
