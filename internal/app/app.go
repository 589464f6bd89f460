// Package app is the kubegcd command: flag parsing, wiring and lifetime.
// main stays thin so that end-to-end tests run exactly this code.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/leader"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/web"
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

// apiReadConns is the size of the HTTP API's own read pool.
const apiReadConns = 4

// Exit codes. systemd's RestartPreventExitStatus= names those that no
// restart can cure.
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitCorrupt = 3 // the database is corrupt: restore it or move it away
)

// run is the daemon: it returns when ctx ends (nil) or on a fatal error.
func run(ctx context.Context, cfg *runConfig, logger *slog.Logger) (err error) {
	routeKlog(logger.With("source", "client-go"))
	gogc, _ := TuneGC(os.Getenv)
	started := time.Now()

	restCfg, err := cfg.restConfig(logger.Warn)
	if err != nil {
		return err
	}
	// The API server repeats a warning (a deprecated version read) on
	// every request: each is logged once, not once a request.
	restCfg.WarningHandlerWithContext = &onceWarnings{logger: logger.With("source", "client-go")}
	// A password in the server's URL must not reach the log or stderr.
	redact := func(err error) error {
		if msg := hidePassword(err.Error(), restCfg.Host); msg != err.Error() {
			return errors.New(msg)
		}
		return err
	}
	defer func() {
		// A stop asked for (SIGTERM, SIGINT) while kubegcd still starts
		// (waits for its API server, opens its database) is a clean stop:
		// systemd must not count it as a failure.
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil
		}
		if err != nil {
			err = redact(err)
		}
	}()

	reg := prometheus.NewRegistry()
	registerRuntimeMetrics(reg)

	store, err := db.Open(ctx, cfg.dbPath, db.Options{Registerer: reg})
	if err != nil {
		return err
	}
	defer store.Close()
	// Which file the path names: one deleted or replaced while kubegcd
	// runs ends the run (the part "database file").
	dbFile, err := store.WatchFile()
	if err != nil {
		return err
	}
	// The API reads through connections of its own: however many clients
	// ask, the controllers' reads never wait behind theirs. Its streams of
	// the whole graph, which last as long as their clients read, have one
	// each beside those, so that they never hold one the short reads need.
	apiStore, err := db.Open(ctx, cfg.dbPath, db.Options{ReadOnly: true, ReadConns: apiReadConns, MapReads: true,
		StreamConns: kubehttp.DefaultMaxGraphStreams})
	if err != nil {
		return err
	}
	defer apiStore.Close()
	// The metrics that count the whole mirror scan it every scrape: through
	// connections that do not map the file, so that the scan's pages stay
	// the kernel's page cache and not the process's resident memory.
	metricsStore, err := db.Open(ctx, cfg.dbPath, db.Options{ReadOnly: true, ReadConns: 2})
	if err != nil {
		return err
	}
	defer metricsStore.Close()

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.listen, err)
	}
	defer ln.Close()

	if err := waitForServer(ctx, restCfg, cfg.startupTimeout); err != nil {
		return err
	}

	// The loops the systemd watchdog checks (see systemd.go).
	loops := liveness.New(nil)
	ing, err := ingest.New(ingest.Options{
		Config:            restCfg,
		Heartbeat:         loops.Loop("ingest discovery", cfg.discoveryInterval),
		DB:                store.Mirror(),
		Logger:            logger.With("component", "ingest"),
		Registerer:        reg,
		DiscoveryInterval: cfg.discoveryInterval,
	})
	if err != nil {
		return err
	}

	instance := leader.NewIdentity()
	lead := leader.New(electionConfig(cfg), instance)
	ctrls, err := startControllers(cfg, restCfg, store, ing, reg, logger, instance, lead.MayWrite, loops)
	if err != nil {
		return err
	}

	httpLog := logger.With("component", "http")
	var tokens *kubehttp.Tokens
	if cfg.authTokenFile != "" {
		if tokens, err = kubehttp.LoadTokens(cfg.authTokenFile, httpLog.Warn); err != nil {
			return err
		}
	}
	var tlsConfig *tls.Config
	if cfg.tlsCertFile != "" {
		files := &kubehttp.TLSFiles{CertFile: cfg.tlsCertFile, KeyFile: cfg.tlsKeyFile, ClientCAFile: cfg.clientCAFile, Logf: httpLog.Warn}
		if tlsConfig, err = files.Config(); err != nil {
			return err
		}
	}
	insecure := cfg.insecureUnauthenticated && tokens == nil && cfg.clientCAFile == ""
	if insecure {
		logger.Warn("the HTTP API serves everyone who reaches it: --insecure-allow-unauthenticated, no --auth-token-file, no --client-ca-file",
			"listen", cfg.listen)
	}
	// The lint findings' counts are counted over the whole mirror through
	// the metrics' connections, the first count from the start on.
	lintCounter := kubehttp.NewLintCounter(metricsStore.Objects(), cfg.lintCountsMaxAge, httpLog)
	handler, err := kubehttp.NewHandler(kubehttp.Options{
		DB:                      apiStore.Reads(),
		MetricsDB:               metricsStore.Objects(),
		LintCounter:             lintCounter,
		MaxInflight:             cfg.maxInflight,
		GraphStreamStall:        cfg.graphStreamStall,
		Tokens:                  tokens,
		ClientCerts:             cfg.clientCAFile != "",
		InsecureUnauthenticated: insecure,
		Ingest:                  ingestView{ing},
		Applier:                 applierView{ctrls.applier},
		Leader:                  leaderView{elector: lead, reason: noElectionReason(cfg), mirror: store.Objects()},
		Version:                 version(),
		StartedAt:               started,
		Logger:                  httpLog,
		Registry:                reg,
		UI:                      web.FS,
		Profiling:               cfg.profiling,
		AllowedHosts:            cfg.allowedHosts,
		Controllers:             ctrls,
		Ledger:                  dbFileLedger{ctrls.applier, dbFile},
		Releaser:                applierView{ctrls.applier},
		StuckAfter:              cfg.stuckAfter,
		GC:                      cfg.garbageCollector(),
		Discovery:               ing,
	})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		// Past the handlers' own 30 s: the time to send a large answer to
		// a slow client, who then cannot hold it (and its memory) forever.
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, TLSConfig: tlsConfig,
		// Go's own errors (TLS handshakes...) in the log's format, bounded.
		ErrorLog: newServerErrorLog(httpLog)}

	logger.Info("kubegcd starting", "version", version(), "server", hidePassword(restCfg.Host, restCfg.Host), "db", store.Path,
		"listen", ln.Addr().String(), "dry_run", cfg.dryRun, "controllers", strings.Join(cfg.controllers, ","), "gogc", gogc)

	// Each part of the daemon runs in one group, and the first to fail ends
	// the run: a daemon that can no longer mirror, decide or serve must exit,
	// for systemd to restart it, rather than stay up looking healthy.
	// Shutdown order: stop serving, then stop the controllers and ingestion
	// (work ends when serving has stopped), then (deferred) close the
	// database.
	g, gctx := errgroup.WithContext(ctx)
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	// The first count, in the background, so that the first GET /lint or
	// scrape need not wait for it; each pass ends with the work.
	lintCounter.Start(work)
	part := func(name string, fn func() error) {
		g.Go(func() error {
			err := fn()
			if err != nil {
				err = redact(err)
				logger.Error("stopping: a part of kubegcd failed", "part", name, "err", err)
			}
			return err
		})
	}
	part("http", func() error {
		defer stopWork()
		serve := func() error { return srv.Serve(ln) }
		if tlsConfig != nil {
			// The certificate comes from TLSConfig.GetCertificate.
			serve = func() error { return srv.ServeTLS(ln, "", "") }
		}
		if err := kubehttp.Serve(gctx, srv, serve); err != nil {
			return fmt.Errorf("http: %w", err)
		}
		return nil
	})
	// READY=1 now: the database is open and the API serves.
	if sd := newSystemd(logger.With("component", "systemd"), func() sdState { return sdStateOf(ing, ctrls.applier, lead) },
		aliveCheck(loops, store)); sd != nil {
		part("systemd", func() error {
			sd.run(gctx)
			return nil
		})
	}
	part("database", func() error {
		select {
		case <-store.Corrupt():
			return dbFile.Cause(store.CorruptErr())
		case <-work.Done():
			return nil
		}
	})
	// A stat every 2 s: the writes that go to a file nobody will read
	// again are those of a few seconds at most.
	part("database file", func() error { return dbFile.Watch(work, 2*time.Second) })
	part("ingest", func() error {
		if err := ing.Run(work); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		return nil
	})
	if lead.Enabled() {
		part("leader election", func() error {
			defer ctrls.stop() // a follower never ran them
			return lead.Run(work, restCfg, logger.With("component", "leader-election"), ctrls.run)
		})
	} else {
		part("controllers", func() error { return ctrls.run(work) })
	}
	part("audit pruning", func() error {
		pruneAudit(work, store, cfg.auditRetention, logger)
		return nil
	})
	if cfg.historyRetention > 0 {
		part("history pruning", func() error {
			pruneHourly(work, "object history", cfg.historyRetention, store.History().PruneHistory, logger)
			return nil
		})
	}
	part("sync report", func() error {
		if err := ing.WaitForSync(work); err == nil {
			logger.Info("mirror synced", "resources", len(ing.Resources()), "after", time.Since(started).Round(time.Millisecond))
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	logger.Info("kubegcd stopped")
	return nil
}

// dbFileLedger is the applier's ledger, unavailable also while the
// database file is gone: its audit rows would be written to a file no
// start opens again, and /readyz says so until the run ends.
type dbFileLedger struct {
	kubehttp.Ledger
	file *db.FileWatch
}

func (l dbFileLedger) LedgerError() error {
	if err := l.file.Check(); err != nil {
		return err
	}
	return l.Ledger.LedgerError()
}
