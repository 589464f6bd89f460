package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/reconcile/ownergc"
	"github.com/kubegcd/kubegcd/internal/reconcile/podgc"
	"github.com/kubegcd/kubegcd/internal/reconcile/svgc"
	"github.com/kubegcd/kubegcd/internal/reconcile/ttl"
)

// instanceID names this process in audit rows and (later) its Lease:
// hostname_<random>, as leader election identities are.
func instanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "kubegcd"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "_" + hex.EncodeToString(b)
}

// controllers are the running reconcilers and what they share.
type controllers struct {
	applier *reconcile.Applier
	passes  *reconcile.Passes
	runs    []namedRun
	stop    func()
	log     *slog.Logger
	// liveUID reads the cluster for the intents an earlier run left open.
	liveUID reconcile.LiveUID
}

// namedRun is a controller's Run and the name its error carries.
type namedRun struct {
	name string
	run  func(context.Context) error
}

// Controllers shows the controllers' passes in /status.
func (c *controllers) Controllers() []kubehttp.ControllerStatus {
	st := c.passes.Status()
	out := make([]kubehttp.ControllerStatus, 0, len(st))
	for _, p := range st {
		cs := kubehttp.ControllerStatus{Name: p.Controller, Skipping: p.Skipping, SkipReason: p.SkipReason,
			SkipDetail: p.SkipDetail, SkippedPasses: p.SkippedPasses}
		if last := p.LastPass.UTC(); !last.IsZero() {
			cs.LastPass = &last
		}
		if since := p.SkippingSince.UTC(); p.Skipping {
			cs.SkippingSince = &since
		}
		out = append(out, cs)
	}
	return out
}

func startControllers(cfg *runConfig, restCfg *rest.Config, store *db.DB, ing *ingest.Ingester, reg prometheus.Registerer,
	logger *slog.Logger, instance string, mayWrite func() error, loops *liveness.Registry) (*controllers, error) {
	writeCfg := rest.CopyConfig(restCfg)
	writeCfg.QPS, writeCfg.Burst = float32(cfg.kubeAPIQPS), cfg.kubeAPIBurst
	mc, err := metadata.NewForConfig(writeCfg)
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
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{
		DB: store, DryRun: cfg.dryRun, Instance: instance, MayWrite: mayWrite, Logger: logger.With("component", "applier"),
		MaxDeletionsPerMinute: cfg.maxDeletionsPerMinute, ManualResume: cfg.blastRadiusResume == "manual", Registerer: reg,
	})
	if err != nil {
		return nil, err
	}
	passes, err := reconcile.NewPasses(reg)
	if err != nil {
		return nil, err
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubegcd"})

	c := &controllers{applier: applier, passes: passes, stop: sync.OnceFunc(broadcaster.Shutdown),
		log: logger, liveUID: reconcile.MetadataLiveUID(store, mc)}
	if slices.Contains(cfg.controllers, ownergc.Name) {
		gc, err := ownergc.New(ownergc.Options{
			DB: store, Applier: applier, Client: mc, Recorder: recorder, Logger: logger.With("controller", ownergc.Name),
			Synced: ing.Synced, CaughtUp: ing.CaughtUp, Workers: cfg.gcWorkers, ResyncPeriod: cfg.resyncPeriod,
			UnknownKindRetry: cfg.discoveryInterval, Registerer: reg, Heartbeat: loops.Loop(ownergc.Name, cfg.resyncPeriod),
		})
		if err != nil {
			return nil, err
		}
		ing.Subscribe(gc.OnChange)
		c.runs = append(c.runs, namedRun{ownergc.Name, gc.Run})
	}
	if slices.Contains(cfg.controllers, podgc.Name) {
		pg, err := podgc.New(podgc.Options{
			DB: store, Applier: applier, Client: kube, Logger: logger.With("controller", podgc.Name), Synced: ing.Synced,
			ResourceSynced: ing.ResourceSynced, Passes: passes,
			Period: cfg.podgcPeriod, TerminatedThreshold: cfg.terminatedThreshold, NamespaceThresholds: cfg.namespaceThresholds,
			MaxAge: cfg.terminatedMaxAge, Quarantine: cfg.podgcQuarantine, Workers: cfg.gcWorkers, Registerer: reg,
			Heartbeat: loops.Loop(podgc.Name, cfg.podgcPeriod),
		})
		if err != nil {
			return nil, err
		}
		c.runs = append(c.runs, namedRun{podgc.Name, pg.Run})
	}
	if slices.Contains(cfg.controllers, ttl.Name) {
		tc, err := ttl.New(ttl.Options{
			DB: store, Applier: applier, Client: kube, Logger: logger.With("controller", ttl.Name), Synced: ing.Synced,
			ResourceSynced: ing.ResourceSynced, Passes: passes,
			Workers: cfg.gcWorkers, ResyncPeriod: cfg.resyncPeriod, Registerer: reg,
			Heartbeat: loops.Loop(ttl.Name, cfg.resyncPeriod),
		})
		if err != nil {
			return nil, err
		}
		ing.Subscribe(tc.OnChange)
		c.runs = append(c.runs, namedRun{ttl.Name, tc.Run})
	}
	if slices.Contains(cfg.controllers, svgc.Name) {
		sc, err := svgc.New(svgc.Options{
			DB: store, Applier: applier, Client: kube, Logger: logger.With("controller", svgc.Name), Synced: ing.Synced,
			ResyncPeriod: cfg.resyncPeriod, Registerer: reg, Heartbeat: loops.Loop(svgc.Name, cfg.resyncPeriod),
		})
		if err != nil {
			return nil, err
		}
		ing.Subscribe(sc.OnChange)
		c.runs = append(c.runs, namedRun{svgc.Name, sc.Run})
	}
	return c, nil
}

// run runs every controller until ctx ends or one fails, which stops the
// others: the daemon cannot do its job without it. It runs once: a leader
// that loses its lease exits.
func (c *controllers) run(ctx context.Context) error {
	defer c.stop()
	// Writes an earlier run sent without recording their outcome (it
	// crashed) are settled against the cluster before any new decision,
	// and before the blast-radius window is read, which they count in.
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := c.applier.RecoverIntents(ctx, c.liveUID)
		if err == nil {
			break
		}
		c.log.Error("settling the writes of an earlier run without an outcome; controllers wait, retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
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
	pruneHourly(ctx, "audit history", retention, store.PruneAudit, logger)
}

// pruneHourly drops what is older than the retention, at start and hourly.
// A failure is logged and retried at the next hour: what is kept a little
// longer harms nothing.
func pruneHourly(ctx context.Context, what string, retention time.Duration, prune func(context.Context, time.Time) (int64, error),
	logger *slog.Logger) {
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
