package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/web"
)

// server is the HTTP API, ready to serve.
type server struct {
	*http.Server
	// lintCounter counts the lint findings over the whole mirror, through
	// the metrics' connections, the first count from the start on.
	lintCounter *kubehttp.LintCounter
}

// newServer builds the HTTP API over what the daemon built.
func (d *daemonRun) newServer() (*server, error) {
	httpLog := d.log.With("component", "http")
	auth, err := d.readHTTPAuth(httpLog)
	if err != nil {
		return nil, err
	}
	lintCounter := kubehttp.NewLintCounter(d.metricsStore.Objects(), d.cfg.lintCountsMaxAge, httpLog)
	handler, err := kubehttp.NewHandler(d.handlerOptions(auth, lintCounter, httpLog))
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Past the handlers' own 30 s: the time to send a large answer to
		// a slow client, who then cannot hold it (and its memory) forever.
		WriteTimeout:   2 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		TLSConfig:      auth.tls,
		// Go's own errors (TLS handshakes...) in the log's format, bounded.
		ErrorLog: newServerErrorLog(httpLog),
	}
	return &server{Server: srv, lintCounter: lintCounter}, nil
}

// httpAuth is how the HTTP API authenticates its clients.
type httpAuth struct {
	tokens   *kubehttp.Tokens
	tls      *tls.Config
	insecure bool // everyone who reaches the API may read it
}

// readHTTPAuth reads the API's tokens and TLS files.
func (d *daemonRun) readHTTPAuth(httpLog *slog.Logger) (httpAuth, error) {
	var a httpAuth
	var err error
	cfg := d.cfg
	if cfg.authTokenFile != "" {
		if a.tokens, err = kubehttp.LoadTokens(cfg.authTokenFile, httpLog.Warn); err != nil {
			return a, err
		}
	}
	if cfg.tlsCertFile != "" {
		files := &kubehttp.TLSFiles{CertFile: cfg.tlsCertFile, KeyFile: cfg.tlsKeyFile,
			ClientCAFile: cfg.clientCAFile, Logf: httpLog.Warn}
		if a.tls, err = files.Config(); err != nil {
			return a, err
		}
	}
	a.insecure = cfg.insecureUnauthenticated && a.tokens == nil && cfg.clientCAFile == ""
	if a.insecure {
		d.log.Warn("the HTTP API serves everyone who reaches it: "+
			"--insecure-allow-unauthenticated, no --auth-token-file, no --client-ca-file",
			"listen", cfg.listen)
	}
	return a, nil
}

// handlerOptions are the HTTP API's: what it reads and shows, and how.
func (d *daemonRun) handlerOptions(auth httpAuth, lintCounter *kubehttp.LintCounter,
	httpLog *slog.Logger) kubehttp.Options {
	cfg, applier := d.cfg, d.ctrls.applier
	election := leaderView{elector: d.lead, reason: noElectionReason(cfg), mirror: d.store.Objects()}
	return kubehttp.Options{
		DB:                      d.apiStore.Reads(),
		MetricsDB:               d.metricsStore.Objects(),
		LintCounter:             lintCounter,
		MaxInflight:             cfg.maxInflight,
		GraphStreamStall:        cfg.graphStreamStall,
		SpoolDir:                filepath.Dir(d.store.Path),
		Tokens:                  auth.tokens,
		ClientCerts:             cfg.clientCAFile != "",
		InsecureUnauthenticated: auth.insecure,
		Ingest:                  ingestView{d.ing},
		Applier:                 applierView{applier},
		Leader:                  election,
		Version:                 version(),
		StartedAt:               d.started,
		Logger:                  httpLog,
		Registry:                d.reg,
		UI:                      web.FS,
		Profiling:               cfg.profiling,
		AllowedHosts:            cfg.allowedHosts,
		Controllers:             d.ctrls,
		Ledger:                  dbFileLedger{applier, d.dbFile},
		Releaser:                applierView{applier},
		Restorer:                restorerView{d.ctrls.restorer},
		StuckAfter:              cfg.stuckAfter,
		DeletedCopiesMaxBytes:   cfg.deletedCopiesMaxBytes,
		GC:                      cfg.garbageCollector(),
		Discovery:               d.ing,
		Rules:                   rulesView{d.rules},
		Loopback:                listensOnLoopback(cfg.listen),
		AuditPeers:              auditPeersView(d.audit.sharer),
	}
}

// listensOnLoopback: the --listen address reaches only this machine.
func listensOnLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	return err == nil && isLoopback(host)
}

// serve serves on ln until ctx ends.
func (s *server) serve(ctx context.Context, ln net.Listener) error {
	serve := func() error { return s.Serve(ln) }
	if s.TLSConfig != nil {
		// The certificate comes from TLSConfig.GetCertificate.
		serve = func() error { return s.ServeTLS(ln, "", "") }
	}
	if err := kubehttp.Serve(ctx, s.Server, serve); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}
