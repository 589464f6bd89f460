package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/copies"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/reconcile/cleanup"
	"github.com/kubegcd/kubegcd/internal/reconcile/lcgc"
	"github.com/kubegcd/kubegcd/internal/reconcile/ownergc"
	"github.com/kubegcd/kubegcd/internal/reconcile/podgc"
	"github.com/kubegcd/kubegcd/internal/reconcile/svgc"
	"github.com/kubegcd/kubegcd/internal/reconcile/ttl"
)

// controllers are the running reconcilers and what they share.
type controllers struct {
	applier *reconcile.Applier
	passes  *reconcile.Passes
	runs    []namedRun
	stop    func()
	log     *slog.Logger
	// liveUID reads the cluster for the intents an earlier run left open.
	liveUID reconcile.LiveUID
	// live reads, notifies and deletes for the cleanup rules that delete.
	live cleanup.Live
	// restorer re-creates deleted objects from their copies, for
	// POST /objects/{uid}/restore.
	restorer *copies.Restorer
}

// keepCopyFor is the applier's KeepCopy for the collectors that
// --deleted-copies-for names. The cleanup rules keep their copies from the
// live read they make anyway (cleanup.Acting), not through this hook.
func keepCopyFor(k *copies.Keeper, collectors []api.Controller) func(context.Context, reconcile.Decision) (func(), error) {
	keep := map[api.Controller]bool{}
	for _, c := range collectors {
		keep[c] = true
	}
	return func(ctx context.Context, d reconcile.Decision) (func(), error) {
		if !keep[d.Controller] {
			return nil, nil
		}
		return k.Keep(ctx, d)
	}
}

// namedRun is a controller's Run and the name its error carries.
type namedRun struct {
	name string
	run  func(context.Context) error
}

// Controllers shows every running controller in /status: its passes, and
// for those that work from a queue, its depth and last item.
func (c *controllers) Controllers() []api.ControllerStatus {
	st := c.passes.Status()
	out := make([]api.ControllerStatus, 0, len(st))
	for _, p := range st {
		cs := api.ControllerStatus{Name: p.Controller, Skipping: p.Skipping, SkipReason: p.SkipReason,
			SkipDetail: p.SkipDetail, SkippedPasses: p.SkippedPasses}
		if last := p.LastPass.UTC(); !last.IsZero() {
			cs.LastPass = &last
		}
		if since := p.SkippingSince.UTC(); p.Skipping {
			cs.SkippingSince = &since
		}
		if work := p.LastWork.UTC(); !work.IsZero() {
			cs.LastWork = &work
		}
		cs.QueueDepth = p.QueueDepth
		out = append(out, cs)
	}
	return out
}

// startControllers builds the applier and the controllers cfg names, and
// subscribes them to ing's changes. instance names this process in audit
// rows; mayWrite is the applier's guard.
func startControllers(cfg *runConfig, restCfg *rest.Config, store *db.DB, ing *ingest.Ingester,
	reg prometheus.Registerer, logger *slog.Logger, instance string, mayWrite func() error,
	loops *liveness.Registry) (*controllers, error) {
	writeCfg := rest.CopyConfig(restCfg)
	writeCfg.QPS, writeCfg.Burst = float32(cfg.kubeAPIQPS), cfg.kubeAPIBurst
	mc, err := reconcile.NewMetadataClient(writeCfg)
	if err != nil {
		return nil, err
	}
	// Typed calls speak protobuf: cheaper for the API server to encode and
	// for kubegcd to decode than JSON.
	protoCfg := rest.CopyConfig(writeCfg)
	protoCfg.ContentType = runtime.ContentTypeProtobuf
	protoCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(protoCfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(writeCfg)
	if err != nil {
		return nil, err
	}
	keeper := &copies.Keeper{Dynamic: dyn, Kinds: store.Objects(), Store: store.Copies(),
		KeepSecretData: cfg.keepDeletedSecrets, Log: logger.With("component", "copies")}
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{
		KeepCopy:              keepCopyFor(keeper, cfg.deletedCopiesFor),
		DB:                    store.Ledger(),
		DryRun:                cfg.dryRun,
		Instance:              instance,
		MayWrite:              mayWrite,
		Logger:                logger.With("component", "applier"),
		MaxDeletionsPerMinute: cfg.maxDeletionsPerMinute,
		ManualResume:          cfg.blastRadiusResume == "manual",
		Registerer:            reg,
	})
	if err != nil {
		return nil, err
	}
	passes := reconcile.NewPasses(reg)
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubegcd"})

	c := &controllers{applier: applier, passes: passes, stop: sync.OnceFunc(broadcaster.Shutdown),
		log: logger, liveUID: reconcile.MetadataLiveUID(store.Objects(), mc),
		live: cleanup.NewLive(dyn, kube.CoreV1(), instance, nil),
		restorer: &copies.Restorer{Dynamic: dyn, Kinds: store.Objects(), Store: store.Copies(), Audit: applier,
			Log: logger.With("component", "restore")}}
	deps := controllerDeps{cfg: cfg, store: store, ing: ing, applier: applier, passes: passes, meta: mc, kube: kube,
		recorder: recorder, reg: reg, logger: logger, loops: loops}
	for _, name := range api.Controllers {
		if !slices.Contains(cfg.controllers, name) {
			continue
		}
		b, err := controllerTable[name](deps)
		if err != nil {
			return nil, err
		}
		if b.onChange != nil {
			ing.Subscribe(b.onChange)
		}
		c.runs = append(c.runs, namedRun{string(name), b.run})
	}
	return c, nil
}

// controllerDeps is what the controllers are built from.
type controllerDeps struct {
	cfg      *runConfig
	store    *db.DB
	ing      *ingest.Ingester
	applier  *reconcile.Applier
	passes   *reconcile.Passes
	meta     metadata.Interface
	kube     kubernetes.Interface
	recorder record.EventRecorder
	reg      prometheus.Registerer
	logger   *slog.Logger
	loops    *liveness.Registry
}

// builtController is a controller ready to run: onChange, when set, hears
// every committed change of the mirror.
type builtController struct {
	run      func(context.Context) error
	onChange func([]db.Change)
}

// base is the options every controller shares, for the controller name,
// whose loop beats at least every period.
func (d controllerDeps) base(name api.Controller, period time.Duration) reconcile.ControllerOptions {
	return reconcile.ControllerOptions{
		Applier:    d.applier,
		Logger:     d.logger.With("controller", name),
		Synced:     d.ing.Synced,
		Registerer: d.reg,
		Heartbeat:  d.loops.Loop(string(name), period),
		Passes:     d.passes,
	}
}

// controllerTable builds each controller --controllers may name
// (api.Controllers; TestEveryControllerIsBuilt keeps them in step).
var controllerTable = map[api.Controller]func(controllerDeps) (builtController, error){
	api.ControllerOwnerGC: func(d controllerDeps) (builtController, error) {
		gc, err := ownergc.New(ownergc.Options{
			ControllerOptions: d.base(api.ControllerOwnerGC, d.cfg.resyncPeriod),
			DB:                d.store.OwnerGC(),
			Client:            d.meta,
			Recorder:          d.recorder,
			CaughtUp:          d.ing.CaughtUp,
			Workers:           d.cfg.gcWorkers,
			ResyncPeriod:      d.cfg.resyncPeriod,
			UnknownKindRetry:  d.cfg.discoveryInterval,
		})
		if err != nil {
			return builtController{}, err
		}
		return builtController{run: gc.Run, onChange: gc.OnChange}, nil
	},
	api.ControllerPodGC: func(d controllerDeps) (builtController, error) {
		pg, err := podgc.New(podgc.Options{
			ControllerOptions:   d.base(api.ControllerPodGC, d.cfg.podgcPeriod),
			DB:                  d.store.PodGC(),
			Client:              d.kube,
			ResourceSynced:      d.ing.ResourceSynced,
			Period:              d.cfg.podgcPeriod,
			TerminatedThreshold: d.cfg.terminatedThreshold,
			NamespaceThresholds: d.cfg.namespaceThresholds,
			MaxAge:              d.cfg.terminatedMaxAge,
			Quarantine:          d.cfg.podgcQuarantine,
			Workers:             d.cfg.gcWorkers,
		})
		if err != nil {
			return builtController{}, err
		}
		return builtController{run: pg.Run}, nil
	},
	api.ControllerTTL: func(d controllerDeps) (builtController, error) {
		tc, err := ttl.New(ttl.Options{
			ControllerOptions: d.base(api.ControllerTTL, d.cfg.resyncPeriod),
			DB:                d.store.TTL(),
			Client:            d.kube,
			ResourceSynced:    d.ing.ResourceSynced,
			Workers:           d.cfg.gcWorkers,
			ResyncPeriod:      d.cfg.resyncPeriod,
		})
		if err != nil {
			return builtController{}, err
		}
		return builtController{run: tc.Run, onChange: tc.OnChange}, nil
	},
	api.ControllerSVGC: func(d controllerDeps) (builtController, error) {
		sc, err := svgc.New(svgc.Options{
			ControllerOptions: d.base(api.ControllerSVGC, d.cfg.resyncPeriod),
			DB:                d.store.SVGC(),
			Client:            d.kube,
			ResyncPeriod:      d.cfg.resyncPeriod,
		})
		if err != nil {
			return builtController{}, err
		}
		return builtController{run: sc.Run, onChange: sc.OnChange}, nil
	},
	api.ControllerLCGC: func(d controllerDeps) (builtController, error) {
		lc, err := lcgc.New(lcgc.Options{
			ControllerOptions: d.base(api.ControllerLCGC, d.cfg.leaseCandidateGCPeriod),
			DB:                d.store.LCGC(),
			Client:            d.kube,
			ResourceSynced:    d.ing.ResourceSynced,
			Period:            d.cfg.leaseCandidateGCPeriod,
		})
		if err != nil {
			return builtController{}, err
		}
		return builtController{run: lc.Run}, nil
	},
}

// settleIntents settles the writes an earlier run on this database sent
// without recording their outcome, retrying until the cluster answers. It
// reports false when ctx ended first. A follower runs it at start too: an
// old leader restarted as a follower records the outcome of the writes it
// sent before it was killed, and its peers then read those rows.
func (c *controllers) settleIntents(ctx context.Context) bool {
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := c.applier.RecoverIntents(ctx, c.liveUID)
		if err == nil {
			return true
		}
		c.log.Error("settling the writes of an earlier run without an outcome; controllers wait, retrying",
			"err", err, "in", wait)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// run runs every controller until ctx ends or one fails, which stops the
// others: the daemon cannot do its job without it. It runs once: a leader
// that loses its lease exits.
func (c *controllers) run(ctx context.Context) error {
	defer c.stop()
	// Writes an earlier run sent without recording their outcome (it
	// crashed) are settled against the cluster before any new decision,
	// and before the blast-radius window is read, which they count in.
	if !c.settleIntents(ctx) {
		return nil
	}
	// The blast-radius window and a manual hold come back from the audit
	// history before the first write.
	for {
		err := c.applier.Restore(ctx)
		if err == nil {
			break
		}
		c.log.Error("restoring the blast-radius state from the audit history; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	// The applier outlives the controllers, to settle the audit rows of
	// their last writes.
	applierCtx, stopApplier := context.WithCancel(context.WithoutCancel(ctx))
	applierDone := make(chan struct{})
	go func() {
		c.applier.Run(applierCtx)
		close(applierDone)
	}()
	defer func() {
		stopApplier()
		<-applierDone
	}()
	g, ctx := errgroup.WithContext(ctx)
	for _, r := range c.runs {
		g.Go(func() error {
			if err := r.run(ctx); err != nil {
				return fmt.Errorf("controller %s: %w", r.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// pruneAudit drops audit rows past the retention, at start and hourly.
func pruneAudit(ctx context.Context, store *db.DB, retention time.Duration, logger *slog.Logger) {
	pruneHourly(ctx, "audit history", retention, store.Decisions().PruneAudit, logger)
}

// pruneDeletedCopies drops the copies of deleted objects past the
// retention, then the oldest beyond maxBytes, at start and hourly.
func pruneDeletedCopies(ctx context.Context, store *db.DB, retention time.Duration, maxBytes int64,
	logger *slog.Logger) {
	pruneHourly(ctx, "deleted objects' copies", retention, func(ctx context.Context, olderThan time.Time) (int64, error) {
		n, err := store.Copies().PruneDeletedCopies(ctx, olderThan, maxBytes)
		return int64(n), err
	}, logger)
}

// pruneHourly drops what is older than the retention, at start and hourly.
// A failure is logged and retried at the next hour: what is kept a little
// longer harms nothing.
func pruneHourly(ctx context.Context, what string, retention time.Duration,
	prune func(context.Context, time.Time) (int64, error), logger *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		n, err := prune(ctx, time.Now().Add(-retention))
		if err != nil && ctx.Err() == nil {
			logger.Warn("pruning "+what, "err", err)
		} else if n > 0 {
			logger.Info("pruned "+what, "rows", n, "older_than", retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
