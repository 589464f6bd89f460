// Package app is the kubegcd command: flag parsing, wiring and lifetime.
// main stays thin so that end-to-end tests run exactly this code.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/auditsink"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/leader"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/reconcile/cleanup"
)

// Version is set at build time with -ldflags "-X ...app.Version=...".
var Version = ""

// version returns the build's version, falling back to the VCS revision.
func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

// Exit codes. systemd's RestartPreventExitStatus= names those that no
// restart can cure.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitCorrupt = 3 // the database is corrupt: restore it or move it away
)

// run is the daemon: it returns when ctx ends (nil) or on a fatal error.
// It opens the stores, waits for the API server, builds the parts and the
// HTTP server, and runs them all until one fails or ctx ends.
func run(ctx context.Context, cfg *runConfig, logger *slog.Logger) (err error) {
	routeKlog(logger.With("source", "client-go"))
	gogc, _ := TuneGC(os.Getenv)
	d := &daemonRun{cfg: cfg, log: logger, started: time.Now(), reg: prometheus.NewRegistry()}
	if d.restCfg, err = clientConfig(cfg, logger); err != nil {
		return err
	}
	defer func() { err = d.exitError(ctx, err) }()
	registerRuntimeMetrics(d.reg)
	d.auditMetrics = auditsink.NewMetrics(d.reg)

	if d.stores, err = openStores(ctx, cfg.dbPath, cfg.deletedCopiesMaxBytes, d.reg); err != nil {
		return err
	}
	started := false
	defer func() { d.closeStores(!started) }()
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	defer ln.Close()
	if err := waitForServer(ctx, d.restCfg, cfg.startupTimeout); err != nil {
		return err
	}

	if err := d.build(); err != nil {
		return err
	}
	srv, err := d.newServer()
	if err != nil {
		return err
	}
	logger.Info("kubegcd starting", "version", version(), "server", hidePassword(d.restCfg.Host, d.restCfg.Host),
		"db", d.store.Path, "listen", ln.Addr().String(), "dry_run", cfg.dryRun,
		"controllers", strings.Join(api.Strings(cfg.controllers), ","), "gogc", gogc)
	// From here on it serves, and ingestion fills the mirror: the file
	// holds more than a schema, and a failure keeps it.
	started = true
	return d.runParts(ctx, srv, ln)
}

// closeStores closes the database. A run that created the file and ends
// before it serves (a port in use, an API server out of reach, a bad file
// named by a flag, a stop) removes it and what came with it: the file then
// holds only the schema, and a failed first try should leave nothing
// behind. A database that was there before the run is never removed.
func (d *daemonRun) closeStores(notStarted bool) {
	discard := notStarted && d.store.Created()
	err := d.stores.close(discard)
	switch {
	case discard && err != nil:
		d.log.Warn("kubegcd did not start, and cannot remove the database it created", "db", d.store.Path,
			"err", err)
	case discard:
		d.log.Debug("kubegcd did not start: removed the database it created", "db", d.store.Path)
	}
}

// daemonRun is what one run of the daemon is made of, in the order run makes it.
type daemonRun struct {
	cfg     *runConfig
	log     *slog.Logger
	started time.Time
	reg     *prometheus.Registry
	restCfg *rest.Config
	*stores
	// The loops the systemd watchdog checks (see systemd.go).
	loops *liveness.Registry
	ing   *ingest.Ingester
	lead  *leader.Elector
	ctrls *controllers
	// rules runs the cleanup rules.
	rules *cleanup.Runner
	// audit shares the audit rows with the peers.
	audit auditSharing
	// auditMetrics count what the audit sinks ship, retry and drop.
	auditMetrics *auditsink.Metrics
}

// clientConfig is the client configuration of every client of the API
// server.
func clientConfig(cfg *runConfig, logger *slog.Logger) (*rest.Config, error) {
	restCfg, err := cfg.restConfig(logger.Warn)
	if err != nil {
		return nil, err
	}
	// The API server repeats a warning (a deprecated version read) on
	// every request: each is logged once, not once a request.
	restCfg.WarningHandlerWithContext = &onceWarnings{logger: logger.With("source", "client-go")}
	return restCfg, nil
}

// redact takes a password in the server's URL out of err: it must not
// reach the log or stderr.
func (d *daemonRun) redact(err error) error {
	if msg := hidePassword(err.Error(), d.restCfg.Host); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// exitError is what run returns for err. A stop asked for (SIGTERM,
// SIGINT) while kubegcd still starts (waits for its API server, opens its
// database) is a clean stop: systemd must not count it as a failure.
func (d *daemonRun) exitError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	if err != nil {
		return d.redact(err)
	}
	return nil
}

// build makes the parts that work on the cluster: the ingester, the
// elector and the controllers.
func (d *daemonRun) build() error {
	d.loops = liveness.New(nil)
	ing, err := ingest.New(ingest.Options{
		Config:            d.restCfg,
		Heartbeat:         d.loops.Loop("ingest discovery", d.cfg.discoveryInterval),
		DB:                d.store.Mirror(),
		Logger:            d.log.With("component", "ingest"),
		Registerer:        d.reg,
		DiscoveryInterval: d.cfg.discoveryInterval,
		WatchList:         d.cfg.watchList,
		MirrorLabels:      d.cfg.mirrorLabels,
		MirrorAnnotations: d.cfg.mirrorAnnotations,
		ReferencePaths:    d.cfg.referencePaths,
	})
	if err != nil {
		return err
	}
	d.ing = ing
	instance := leader.NewIdentity()
	d.lead = leader.New(electionConfig(d.cfg), instance)
	d.ctrls, err = startControllers(d.cfg, d.restCfg, d.store, ing, d.reg, d.log, instance, d.lead.MayWrite,
		d.loops)
	if err != nil {
		return err
	}
	d.rules = d.newRules()
	d.audit, err = d.newAuditSharing(instance)
	return err
}
