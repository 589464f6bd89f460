// Package app is the kubegcd command: flag parsing, wiring and lifetime.
// main stays thin so that end-to-end tests run exactly this code.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/kubegcd/kubegcd/internal/cli"
	"github.com/kubegcd/kubegcd/internal/cmdline"
	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/ingest"
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

// usage is kubegcd's own help: the commands in a few words.
var usage = `kubegcd mirrors a Kubernetes cluster's object metadata and ownership graph
into SQLite, finds garbage with SQL and collects it (or, in dry-run, records
what it would do), keeping a durable audit history served over HTTP.

Usage:
  kubegcd run [flags]                    run the daemon
  kubegcd migrate up|down|version [--db PATH]
                                         manage the database schema
  kubegcd db check|backup [--db PATH] [DEST]
                                         check the database, or copy it while
                                         kubegcd runs
  kubegcd version                        print the version (also --version)
  kubegcd completion bash|zsh|fish       print a shell completion script
  kubegcd help [command]                 show help

Run 'kubegcd help run' for the daemon's flags.

Client commands, kubectl-style (also 'kubectl gc …' once the plugin is installed):
` + cli.Synopsis("kubegcd") + "\n" + cli.ConnHelp()

// Main runs the kubegcd command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p := &program{stdout: stdout, stderr: stderr, daemon: run}
	return p.main(ctx, args)
}

// Command is kubegcd's command tree, for the tools that document it
// (hack/gendocs writes its man pages).
func Command() *cobra.Command {
	return (&program{stdout: os.Stdout, stderr: os.Stderr, daemon: run}).command()
}

// program is what the command line runs with; tests give their own daemon.
type program struct {
	stdout, stderr io.Writer
	daemon         func(ctx context.Context, cfg *runConfig, logger *slog.Logger) error
}

func (p *program) main(ctx context.Context, args []string) int {
	return cmdline.Execute(ctx, p.command(), args, p.stderr, exitCode)
}

func (p *program) command() *cobra.Command {
	root := &cobra.Command{
		Use:     "kubegcd",
		Short:   "Kubernetes garbage collection with an audit trail",
		Long:    strings.TrimSpace(strings.SplitN(usage, "\n\n", 2)[0]),
		Version: version(),
		Args:    cmdline.RejectCommand,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprint(p.stderr, usage)
			return cmdline.ExitCode(exitUsage)
		},
	}
	// Not -v, which Kubernetes tools keep for verbosity.
	root.Flags().Bool("version", false, "print the version and exit")
	root.SetVersionTemplate("kubegcd {{.Version}}\n")
	root.SetOut(p.stdout)
	root.SetErr(p.stderr)
	root.SetHelpCommand(cmdline.HelpCommand())
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			fmt.Fprint(c.OutOrStdout(), usage)
			return
		}
		cmdline.Help(c, nil)
	})
	root.AddCommand(p.runCommand(), migrateCommand(), dbCommand(), &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  noArguments,
		Run:   func(c *cobra.Command, _ []string) { fmt.Fprintln(c.OutOrStdout(), "kubegcd", version()) },
	})
	root.AddCommand(cli.Commands("kubegcd", p.stdout, p.stderr)...)
	return root
}

// configError is a flag or config-file value kubegcd run cannot work with.
type configError struct{ error }

// exitCode is the exit code of a command's error: see the constants.
func exitCode(err error) int {
	var ce configError
	switch {
	case errors.As(err, &ce):
		return exitUsage
	case errors.Is(err, db.ErrCorrupt) || db.IsCorrupt(err):
		return exitCorrupt
	}
	return exitError
}

// noArguments is the Args of a command that takes none.
func noArguments(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cmdline.Usagef("unexpected argument %q", args[0])
	}
	return nil
}

const runHelp = `Runs the daemon until SIGINT or SIGTERM (exit 0), or until a failure leaves it
unable to do its job: one line on stderr, exit 1 (3: the database is corrupt;
2: a bad flag or config value).

Under systemd (Type=notify, $NOTIFY_SOCKET) it says READY=1 once it serves,
what it does in STATUS=, and STOPPING=1; with WatchdogSec= it pings the
watchdog only while its loops make progress and its database writer answers.`

func (p *program) runCommand() *cobra.Command {
	f := newRunFlags()
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "run the daemon",
		Long:  runHelp,
		Args:  noArguments,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.complete(cmd.Flags())
			if err != nil {
				return configError{err}
			}
			return p.daemon(cmd.Context(), cfg, newLogger(p.stderr, cfg.logLevel, cfg.logFormat))
		},
	}
	f.groups.AddTo(cmd.Flags())
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { cmdline.Help(c, &f.groups) })
	for name, words := range valueCompletions {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
	}
	return cmd
}

const migrateHelp = `  up       apply every migration this binary carries
  down     revert the newest applied migration
  version  print the schema version`

func migrateCommand() *cobra.Command {
	var dbPath string
	cmd := &cobra.Command{
		Use:                   "migrate up|down|version [--db PATH]",
		Short:                 "manage the database schema",
		Long:                  migrateHelp,
		ValidArgs:             []string{"up", "down", "version"},
		DisableFlagsInUseLine: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdline.Usagef("migrate needs exactly one of up, down or version")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			v, dirty, err := db.Migrate(cmd.Context(), dbPath, args[0])
			if err != nil {
				return err
			}
			state := ""
			if dirty {
				state = " (dirty)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema version %d%s (this kubegcd supports up to %d)\n", v, state, db.LatestVersion())
			return nil
		},
	}
	cmd.Flags().StringVar(&dbPath, "db", "kubegcd.db", "path of the SQLite database")
	return cmd
}

func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// run is the daemon: it returns when ctx ends (nil) or on a fatal error.
func run(ctx context.Context, cfg *runConfig, logger *slog.Logger) (err error) {
	klog.SetSlogLogger(logger.With("source", "client-go"))
	started := time.Now()

	restCfg, err := cfg.restConfig()
	if err != nil {
		return err
	}
	// A password in the server's URL must not reach the log or stderr.
	redact := func(err error) error {
		if msg := hidePassword(err.Error(), restCfg.Host); msg != err.Error() {
			return errors.New(msg)
		}
		return err
	}
	defer func() {
		if err != nil {
			err = redact(err)
		}
	}()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	store, err := db.Open(ctx, cfg.dbPath, db.Options{Registerer: reg})
	if err != nil {
		return err
	}
	defer store.Close()
	// The API reads through connections of its own: however many clients
	// ask, the controllers' reads never wait behind theirs.
	apiStore, err := db.Open(ctx, cfg.dbPath, db.Options{ReadOnly: true, ReadConns: apiReadConns})
	if err != nil {
		return err
	}
	defer apiStore.Close()

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
		DB:                store,
		Logger:            logger.With("component", "ingest"),
		Registerer:        reg,
		DiscoveryInterval: cfg.discoveryInterval,
	})
	if err != nil {
		return err
	}

	instance := instanceID()
	lead := newLeadership(cfg, instance, store)
	ctrls, err := startControllers(cfg, restCfg, store, ing, reg, logger, instance, lead.mayWrite, loops)
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
	handler, err := kubehttp.NewHandler(kubehttp.Options{
		DB:                      apiStore,
		MaxInflight:             cfg.maxInflight,
		Tokens:                  tokens,
		ClientCerts:             cfg.clientCAFile != "",
		InsecureUnauthenticated: insecure,
		Ingest:                  ingestView{ing},
		Applier:                 applierView{ctrls.applier},
		Leader:                  lead,
		Version:                 version(),
		StartedAt:               started,
		Logger:                  httpLog,
		Registry:                reg,
		UI:                      web.FS,
		Profiling:               cfg.profiling,
		AllowedHosts:            cfg.allowedHosts,
		Controllers:             ctrls,
		Ledger:                  ctrls.applier,
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
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, TLSConfig: tlsConfig}

	logger.Info("kubegcd starting", "version", version(), "server", hidePassword(restCfg.Host, restCfg.Host), "db", store.Path,
		"listen", ln.Addr().String(), "dry_run", cfg.dryRun, "controllers", strings.Join(cfg.controllers, ","))

	// Each part of the daemon runs in one group, and the first to fail ends
	// the run: a daemon that can no longer mirror, decide or serve must exit,
	// for systemd to restart it, rather than stay up looking healthy.
	// Shutdown order: stop serving, then stop the controllers and ingestion
	// (work ends when serving has stopped), then (deferred) close the
	// database.
	g, gctx := errgroup.WithContext(ctx)
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
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
			return store.CorruptErr()
		case <-work.Done():
			return nil
		}
	})
	part("ingest", func() error {
		if err := ing.Run(work); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		return nil
	})
	if lead.enabled {
		part("leader election", func() error {
			defer ctrls.stop() // a follower never ran them
			return lead.lead(work, cfg.leader, restCfg, logger.With("component", "leader-election"), ctrls.run)
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
			pruneHourly(work, "object history", cfg.historyRetention, store.PruneHistory, logger)
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
