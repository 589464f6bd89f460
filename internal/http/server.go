// Package http serves what kubegcd knows: status, health, metrics, the
// read-only API over the database and the web UI. It never calls the cluster.
package http

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// Ingest is what the server needs from ingestion.
type Ingest interface {
	Synced() bool
	Resources() []ResourceStatus
}

// ResourceStatus is one mirrored resource and whether its watch is synced.
type ResourceStatus struct {
	db.Resource
	Synced bool
}

// Enforcement is what the server shows of the applier.
type Enforcement interface {
	Status() api.EnforcementStatus
}

// Controllers is what the server shows of the running controllers.
type Controllers interface {
	Controllers() []api.ControllerStatus
}

// Leadership is what the server shows of leader election.
type Leadership interface {
	Status(ctx context.Context) api.LeaderStatus
}

// Options configure the handler.
type Options struct {
	// DB is what the API reads (in the daemon, the Reads role of a database
	// opened read-only, which registers no metrics of the database).
	DB Store
	// MetricsDB, when set, is what the metrics that count the whole mirror
	// read (lint findings, stuck deletions, objects, Leases) instead of DB:
	// a scan of every page through DB's mapped connections would keep the
	// whole file in the process's resident memory.
	MetricsDB Objects
	// LintCounter keeps the counts of lint findings that GET /lint and
	// kubegcd_ownerref_findings show. The daemon passes one that counts
	// through MetricsDB's connections, already started. When it is nil, the
	// server makes one over MetricsDB (else DB) with
	// DefaultLintCountsMaxAge, and the first reader starts its first pass.
	LintCounter *LintCounter
	// MaxInflight bounds the API requests served at once (0: no bound).
	MaxInflight int
	// Tokens, when set, are the bearer tokens a request must carry.
	Tokens *Tokens
	// ClientCerts: a client certificate verified by --client-ca-file
	// authenticates a request.
	ClientCerts bool
	// InsecureUnauthenticated: serving a non-loopback address without
	// authentication, as --insecure-allow-unauthenticated allowed; /status
	// says so.
	InsecureUnauthenticated bool
	Ingest                  Ingest
	Applier                 Enforcement
	Leader                  Leadership
	Version                 string
	StartedAt               time.Time
	Logger                  *slog.Logger
	Registry                *prometheus.Registry
	// Gatherer serves /metrics; defaults to Registry.
	Gatherer prometheus.Gatherer
	// UI holds the web UI's static files.
	UI fs.FS
	// Profiling serves Go's pprof profiles under /debug/pprof/. They run
	// outside RequestTimeout: a CPU profile or a trace lasts as long as
	// asked, at most maxProfileSeconds.
	Profiling bool
	// RequestTimeout ends an API request that runs longer (0: 30s).
	RequestTimeout time.Duration
	// GraphStreamStall cuts a streamed answer (the graph, lint findings,
	// the audit history, pending decisions) whose client takes none of it
	// for that long (0: DefaultGraphStreamStall).
	GraphStreamStall time.Duration
	// MaxGraphStreams bounds the streams of the whole graph served at once
	// (0: DefaultMaxGraphStreams).
	MaxGraphStreams int
	// SpoolDir holds the large answers a client has yet to take, in
	// unnamed files (default os.TempDir(), which may be memory): the
	// daemon's is its database's directory.
	SpoolDir string

	// Controllers shows which controllers make their passes and which
	// skip them.
	Controllers Controllers
	// AllowedHosts are the host names a request's Host may carry besides
	// IP addresses and localhost; "*" allows any.
	AllowedHosts []string
	// Ledger makes /readyz report an audit history that cannot be written.
	Ledger Ledger
	// Releaser serves POST /enforcement/release.
	Releaser Releaser
	// Restorer serves POST /objects/{uid}/restore; nil when no restores
	// are made here.
	Restorer Restorer

	// DeletedCopiesMaxBytes is --deleted-copies-max-bytes, which
	// kubegcd_deleted_copies_max_bytes shows.
	DeletedCopiesMaxBytes int64
	// StuckAfter is how old a deletion must be for /stuck to list it by
	// default and for the stuck metrics to count it (--stuck-after).
	StuckAfter time.Duration
	// GC says who removes the foregroundDeletion and orphan finalizers.
	GC diagnose.Collector
	// Discovery tells which API groups fail discovery; nil when unknown.
	Discovery Discovery
	// Rules serves /rules and POST /rules/evaluate; nil when no rules run.
	Rules Rules
	// Loopback: the API listens only on loopback, so that without
	// authentication it answers only this machine.
	Loopback bool
	// AuditReplicas serves GET /audit/replicate and the gaps /audit shows
	// (default: DB, when it reads them, as db.Reads does). AuditPeers is
	// what /status shows of the peers; nil when this instance reads none.
	AuditReplicas AuditReplicas
	AuditPeers    AuditPeers
}

type server struct {
	Options
	requests *prometheus.HistogramVec
	// allowedHosts holds AllowedHosts, lower case; nil allows any host.
	allowedHosts map[string]bool
	// uiETags holds each UI file's ETag, by name.
	uiETags map[string]string
	// inflight holds a slot for each API request served, whatever its
	// route: --max-requests-inflight bounds the server, not each route.
	inflight inflightSlots
	// graphStreams holds a slot for each stream of the whole graph served.
	graphStreams chan struct{}
	// answers bound the answers read whole from the database.
	answers answerBounds
	// lintCounts is Options.LintCounter, or the handler's own.
	lintCounts *LintCounter
	// routes are the patterns the router serves: the request metrics'
	// route label takes no other value.
	routes map[string]bool
}

// registerMetrics registers the API's latency and the collectors that read
// the store: those that scan the mirror read m, the copies' figures opts.DB.
func (s *server) registerMetrics(opts Options, m Objects) error {
	if opts.Registry == nil {
		return nil
	}
	cs := []prometheus.Collector{s.requests}
	if m != nil {
		cs = append(cs, newLeaseCollector(m), newLintCollector(s.lintCounts), newStuckCollector(m, opts.StuckAfter),
			newCountsCollector(m, scrapeCacheTTL, time.Now))
	}
	if opts.DB != nil {
		cs = append(cs, newCopiesCollector(opts.DB, opts.DeletedCopiesMaxBytes))
	}
	for _, c := range cs {
		if err := opts.Registry.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// NewHandler returns the daemon's HTTP handler.
func NewHandler(opts Options) (http.Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Gatherer == nil {
		opts.Gatherer = opts.Registry
	}
	s := &server{Options: opts, allowedHosts: map[string]bool{}, inflight: newInflightSlots(opts.MaxInflight),
		graphStreams: make(chan struct{}, graphStreamSlots(opts.MaxGraphStreams, opts.MaxInflight)),
		answers:      newAnswerBounds(opts.SpoolDir)}
	for _, h := range opts.AllowedHosts {
		if h == "*" {
			s.allowedHosts = nil
			break
		}
		s.allowedHosts[normalizeHost(h)] = true
	}
	if opts.UI != nil {
		var err error
		if s.uiETags, err = uiETags(opts.UI); err != nil {
			return nil, fmt.Errorf("web UI: %w", err)
		}
	}
	if r, ok := opts.DB.(AuditReplicas); ok && opts.AuditReplicas == nil {
		s.AuditReplicas = r
	}
	m := opts.MetricsDB
	if m == nil {
		m = opts.DB
	}
	s.lintCounts = opts.LintCounter
	if s.lintCounts == nil && m != nil {
		s.lintCounts = NewLintCounter(m, DefaultLintCountsMaxAge, opts.Logger)
	}
	s.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "kubegcd", Subsystem: "http", Name: "request_duration_seconds",
		Help:    "HTTP request latency by route pattern, method and status code.",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method", "code"})
	if err := s.registerMetrics(opts, m); err != nil {
		return nil, err
	}

	root := chi.NewRouter()
	root.Use(middleware.RequestID, s.logRequests, s.recoverer)
	// securityHeaders first: every answer carries them, refusals included.
	guard := chi.Middlewares{securityHeaders, s.instrument, s.checkHost, s.authenticate, s.inflight.limit}
	if opts.Profiling {
		root.With(guard...).Mount("/debug/pprof", s.profiler())
	}
	r := root.With(append(chi.Middlewares{middleware.Timeout(cmp.Or(opts.RequestTimeout, 30*time.Second))}, guard...)...)

	// Each endpoint refuses the query parameters it does not know: a typo
	// is an error, not a silently ignored filter.
	err := route(r, map[string]http.Handler{
		"status": http.HandlerFunc(s.status), "graph": http.HandlerFunc(s.graph),
		"pending": http.HandlerFunc(s.pending), "audit": http.HandlerFunc(s.audit),
		"lookup": http.HandlerFunc(s.lookup), "object": http.HandlerFunc(s.object),
		"cascade": http.HandlerFunc(s.cascade), "objectHistory": http.HandlerFunc(s.objectHistory),
		"stuck": http.HandlerFunc(s.stuck), "lint": http.HandlerFunc(s.lint),
		"leases": http.HandlerFunc(s.leases), "overview": http.HandlerFunc(s.overview),
		"release": http.HandlerFunc(s.release), "healthz": http.HandlerFunc(s.healthz),
		"rules": http.HandlerFunc(s.rules), "ruleMatches": http.HandlerFunc(s.ruleMatches),
		"evaluateRules": http.HandlerFunc(s.evaluateRules), "openAPI": http.HandlerFunc(s.openAPI),
		"readyz": http.HandlerFunc(s.readyz), "metrics": metricsHandler(opts.Gatherer, opts.Logger),
		"restore": http.HandlerFunc(s.restore), "deletedCopies": http.HandlerFunc(s.deletedCopies),
		"deletedCopy": http.HandlerFunc(s.deletedCopy), "auditReplicate": http.HandlerFunc(s.auditReplicate),
	})
	if err != nil {
		return nil, err
	}
	// Set on the inline router r, they land on root behind r's middlewares.
	r.NotFound(s.notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
	})
	s.routes = map[string]bool{}
	err = chi.Walk(root, func(_ string, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		s.routes[route] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return root, nil
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	if isAPIPath(r.URL.Path) {
		writeError(w, r, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
		return
	}
	if s.UI == nil || r.Method != http.MethodGet {
		writeError(w, r, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
		return
	}
	// The UI is a single page: unknown paths get index.html.
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name == "" {
		name = "index.html"
	}
	if st, err := fs.Stat(s.UI, name); err != nil || st.IsDir() {
		name = "index.html"
	}
	s.serveUI(w, r, name)
}

// checkHost refuses requests whose Host is a name not allowed. Against DNS
// rebinding: a web page can point a name it controls at 127.0.0.1 and then
// read the API on loopback as its own origin, but its requests carry that
// name. An IP address or localhost is always allowed, because a browser
// sends one only to that very address, and so is an empty Host (HTTP/1.0),
// which no browser sends.
func (s *server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := normalizeHost(r.Host)
		if s.allowedHosts != nil && host != "" && host != "localhost" && net.ParseIP(host) == nil && !s.allowedHosts[host] {
			// 403 rather than 421 Misdirected Request, which invites a
			// client to retry on another connection, for the same answer.
			writeError(w, r, http.StatusForbidden, fmt.Sprintf("host %q is not allowed (see --allowed-hosts)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// normalizeHost returns a Host header's host name: without port or IPv6
// brackets, lower case, without a trailing dot (which names the same host).
func normalizeHost(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimPrefix(strings.TrimSuffix(host, "]"), "[")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.Ledger != nil {
		if err := s.Ledger.LedgerError(); err != nil {
			writeError(w, r, http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	// With every token revoked the API refuses all its callers, unless
	// client certificates still let them in: a load balancer should send
	// it no traffic.
	if s.Tokens != nil && !s.ClientCerts {
		if st := s.Tokens.Status(); st.Error != "" {
			writeError(w, r, http.StatusServiceUnavailable, "all bearer tokens revoked: --auth-token-file "+st.Error)
			return
		}
	}
	if !s.Ingest.Synced() {
		var waiting []string
		for _, res := range s.Ingest.Resources() {
			if !res.Synced {
				waiting = append(waiting, resourceName(res.Resource))
			}
		}
		msg := "mirror not synced"
		if len(waiting) > 0 {
			msg += ": waiting for " + strings.Join(waiting, ", ")
		}
		writeError(w, r, http.StatusServiceUnavailable, msg)
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
}

func resourceName(r db.Resource) string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	stats, err := s.DB.ResourceStats(r.Context())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	counts := make(map[int64]int64, len(stats))
	for _, st := range stats {
		counts[st.ID] = st.Objects
	}
	out := api.Status{Version: s.Version, StartedAt: s.StartedAt.UTC(), Synced: s.Ingest.Synced(), Resources: []api.ResourceStatus{},
		Authentication: s.authentication(), InsecureUnauthenticated: s.InsecureUnauthenticated,
		Controllers: []api.ControllerStatus{}}
	if s.Tokens != nil {
		// A conversion, so that the two cannot drift apart unnoticed.
		st := api.TokenFileStatus(s.Tokens.Status())
		out.AuthTokenFile = &st
	}
	if s.Applier != nil {
		st := s.Applier.Status()
		out.Enforcement = &st
	}
	if s.Leader != nil {
		st := s.Leader.Status(r.Context())
		out.Leader, out.LeaderElection = st.Leader, &st
	}
	if s.Controllers != nil {
		out.Controllers = append(out.Controllers, s.Controllers.Controllers()...)
	}
	if out.AuditPeers, err = s.auditPeersStatus(r.Context()); err != nil {
		s.internalError(w, r, err)
		return
	}
	if s.Discovery != nil {
		if f := s.Discovery.DiscoveryFailures(); len(f) > 0 {
			out.DiscoveryFailures = f
		}
	}
	for _, res := range s.Ingest.Resources() {
		n := counts[res.ID]
		out.Objects += n
		out.Resources = append(out.Resources, api.ResourceStatus{
			Group: res.Group, Version: res.Version, Resource: res.Resource.Resource, Kind: res.Kind,
			Namespaced: res.Namespaced, Synced: res.Synced, Objects: n,
		})
	}
	writeJSON(w, r, http.StatusOK, out)
}

// writeJSON answers v as JSON: indented for a person at a terminal (curl
// or wget, as kube-apiserver decides), compact for programs such as the UI
// and the CLI. Indenting costs more than encoding: a third of a 10,000-item
// cascade preview.
func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	if indented(r) {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	writeJSON(w, r, code, api.Error{Error: msg})
}

// internalError logs the cause and tells the client only that it failed.
func (s *server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	s.Logger.Error("request failed", "path", r.URL.Path, "request_id", middleware.GetReqID(r.Context()), "err", err)
	if r.Context().Err() != nil {
		writeError(w, r, http.StatusServiceUnavailable, "request timed out")
		return
	}
	writeError(w, r, http.StatusInternalServerError, "internal error")
}

func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if rec := recover(); rec != nil {
				if err, ok := rec.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(rec)
				}
				s.Logger.Error("panic serving request", "path", r.URL.Path, "panic", rec)
				writeError(w, r, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		var caller string
		next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), callerKey{}, &caller)))
		s.Logger.Debug("http request", "method", r.Method, "path", r.URL.Path, "status", ww.Status(),
			"duration", time.Since(start), "request_id", middleware.GetReqID(r.Context()), "caller", caller)
	})
}

// standardMethods are the methods the request metrics name: those of
// RFC 9110 and PATCH. Any other is counted as "OTHER".
var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true, http.MethodTrace: true,
}

// instrument records latency by route pattern, method and status code.
// Every request is counted, those refused for their Host or credentials
// too, so each label comes from a closed set that no client can grow: a
// pattern the router serves or "unmatched", a standard method or "OTHER",
// and the status code the server chose.
func (s *server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		next.ServeHTTP(ww, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && s.routes[rc.RoutePattern()] {
			route = rc.RoutePattern()
		}
		method := r.Method
		if !standardMethods[method] {
			method = "OTHER"
		}
		code := ww.Status()
		if code == 0 {
			code = http.StatusOK
		}
		s.requests.WithLabelValues(route, method, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
	})
}

// Serve runs srv until ctx ends, then shuts it down gracefully.
func Serve(ctx context.Context, srv *http.Server, serve func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Requests still running after the grace period (a long profile,
		// a stuck client) are cut: stopping is not a failure.
		if cerr := srv.Close(); cerr != nil {
			return cerr
		}
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
