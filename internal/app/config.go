package app

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/cmdline"
	"github.com/kubegcd/kubegcd/internal/diagnose"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/leader"
	"github.com/kubegcd/kubegcd/internal/reconcile/lcgc"
	"github.com/kubegcd/kubegcd/internal/rules"
)

type runConfig struct {
	kubeconfig   string
	kubeContext  string
	dbPath       string
	listen       string
	allowedHosts []string
	maxInflight  int
	// The API's authentication and TLS.
	authTokenFile, tlsCertFile, tlsKeyFile, clientCAFile string
	insecureUnauthenticated                              bool
	logLevel                                             slog.Level
	logFormat                                            string
	dryRun                                               bool
	controllers                                          []api.Controller
	discoveryInterval                                    time.Duration
	startupTimeout                                       time.Duration
	watchList                                            bool

	kubeAPIQPS            float64
	kubeAPIBurst          int
	gcWorkers             int
	maxDeletionsPerMinute int
	blastRadiusResume     string
	auditRetention        time.Duration
	historyRetention      time.Duration
	resyncPeriod          time.Duration
	profiling             bool
	stuckAfter            time.Duration
	lintCountsMaxAge      time.Duration
	graphStreamStall      time.Duration

	// The copies of deleted objects, for undo.
	deletedCopiesRetention time.Duration
	deletedCopiesMaxBytes  int64
	keepDeletedSecrets     bool
	deletedCopiesFor       []api.Controller

	podgcPeriod         time.Duration
	podgcQuarantine     time.Duration
	terminatedThreshold int
	terminatedMaxAge    time.Duration
	namespaceThresholds map[string]int

	leaseCandidateGCPeriod time.Duration

	leader leader.Config

	// Audit sharing among the instances (auditpeers.go).
	auditPeers auditPeersConfig

	// What the mirror keeps for the cleanup rules (mirrorflags.go).
	mirrorLabels, mirrorAnnotations ingest.KeyAllowList
	referencePaths                  referencePaths

	// rulesDir holds the cleanup rules' files.
	rulesDir string

	// Where the audit history leaves kubegcd (auditsinks.go).
	auditSinks auditSinkConfig
}

// runFlags are kubegcd run's flags, in the groups its help prints, as
// kube-controller-manager prints its own. Every flag belongs to a group.
type runFlags struct {
	cfg    runConfig
	groups cmdline.NamedFlagSets
	// What complete reads into cfg.
	level, configFile         string
	controllers, allowedHosts []string
	deletedCopiesFor          []string
}

func newRunFlags() *runFlags {
	f := &runFlags{}
	f.addClusterFlags(f.groups.FlagSet("cluster"))
	f.addDatabaseFlags(f.groups.FlagSet("database"))
	f.addMirrorFlags(f.groups.FlagSet("mirror"))
	f.addHTTPFlags(f.groups.FlagSet("HTTP"))
	f.addControllerFlags(f.groups.FlagSet("controllers"))
	f.addLeaderFlags(f.groups.FlagSet("leader election"))
	f.addAuditPeerFlags(f.groups.FlagSet("audit peers"))
	f.addAuditSinkFlags(f.groups.FlagSet("audit sinks"))
	f.addLoggingFlags(f.groups.FlagSet("logging"))
	fs := f.groups.FlagSet("generic")
	fs.StringVar(&f.configFile, "config", "",
		"file of settings, one 'flag = value' per line ('#' starts a comment); "+
			"flags given on the command line win")
	// cobra's own --help, in a group so that help lists it.
	fs.BoolP("help", "h", false, "help for run")
	return f
}

func (f *runFlags) addClusterFlags(fs *pflag.FlagSet) {
	cfg := &f.cfg
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "",
		"path of the kubeconfig file (default: the systemd credential kubeconfig in $CREDENTIALS_DIRECTORY, "+
			"then $KUBECONFIG, then ~/.kube/config, then in-cluster config)")
	fs.StringVar(&cfg.kubeContext, "context", "", "kubeconfig context to use (default: the current context)")
	fs.DurationVar(&cfg.startupTimeout, "startup-timeout", 30*time.Second,
		"how long to keep trying at start until the API server answers discovery and a list; "+
			"then kubegcd exits 1, saying why")
	fs.DurationVar(&cfg.discoveryInterval, "discovery-interval", 30*time.Second,
		"how often to re-discover API resources, so CRDs added or removed later are watched or dropped")
	fs.BoolVar(&cfg.watchList, "watch-list", true,
		"list each resource as a WatchList (sendInitialEvents) where the API server serves one, "+
			"else page by page: a paginated list from the watch cache slows with the square of the count")
	fs.Float64Var(&cfg.kubeAPIQPS, "kube-api-qps", 20,
		"queries per second of the controllers' writes and live checks to the API server")
	fs.IntVar(&cfg.kubeAPIBurst, "kube-api-burst", 30, "burst above --kube-api-qps")
}

func (f *runFlags) addDatabaseFlags(fs *pflag.FlagSet) {
	cfg := &f.cfg
	fs.StringVar(&cfg.dbPath, "db", "kubegcd.db", "path of the SQLite database; created, with its directory, if missing")
	fs.DurationVar(&cfg.auditRetention, "audit-retention", 30*24*time.Hour, "how long audit history is kept")
	fs.DurationVar(&cfg.historyRetention, "history-retention", 7*24*time.Hour,
		"how long object history (ownership changes, deletions) is kept; "+
			"an object's state at the cutoff stays while it exists (0: forever)")
	fs.DurationVar(&cfg.deletedCopiesRetention, "deleted-copies-retention", 30*24*time.Hour,
		"how long the copy of a deleted object is kept for 'kubegcd restore'")
	fs.Int64Var(&cfg.deletedCopiesMaxBytes, "deleted-copies-max-bytes", 1<<30,
		"the most the copies of deleted objects take in the database, compressed; "+
			"a copy that would pass it makes room by dropping the oldest, and one larger than it alone "+
			"holds its delete back (0: no bound but the retention)")
	fs.BoolVar(&cfg.keepDeletedSecrets, "keep-deleted-secrets", false,
		"keep a deleted Secret's data in its copy; without it the copy has no data and stringData, "+
			"and a restore must be asked to make the Secret empty")
	fs.StringSliceVar(&f.deletedCopiesFor, "deleted-copies-for", nil,
		"comma-separated collectors whose deletions also keep a copy for 'kubegcd restore', "+
			"as the cleanup rules' deletions always do: "+strings.Join(api.Strings(api.Controllers), ", ")+
			"; a delete whose copy cannot be kept is held back (default: none)")
}

func (f *runFlags) addHTTPFlags(fs *pflag.FlagSet) {
	cfg := &f.cfg
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8080", "address of the HTTP API, metrics and web UI")
	fs.StringSliceVar(&f.allowedHosts, "allowed-hosts", nil,
		"comma-separated host names the HTTP API answers to, besides IP addresses, localhost and "+
			"the --listen host; other names in a request's Host are refused, "+
			"so that a web page cannot reach the API through DNS rebinding ('*': any)")
	fs.StringVar(&cfg.authTokenFile, "auth-token-file", "",
		"file of bearer tokens, one per line (TOKEN or TOKEN,NAME), that API requests must carry "+
			"(but /healthz and /readyz); re-read when it changes")
	fs.StringVar(&cfg.tlsCertFile, "tls-cert-file", "",
		"serve HTTPS with this PEM certificate (chain); re-read when it changes")
	fs.StringVar(&cfg.tlsKeyFile, "tls-private-key-file", "", "the PEM private key of --tls-cert-file")
	fs.StringVar(&cfg.clientCAFile, "client-ca-file", "",
		"PEM CA bundle: a client certificate it verifies authenticates a request (mTLS); needs --tls-cert-file")
	fs.BoolVar(&cfg.insecureUnauthenticated, "insecure-allow-unauthenticated", false,
		"serve a --listen address that is not loopback without --auth-token-file or --client-ca-file: "+
			"anyone who reaches it reads the API")
	fs.IntVar(&cfg.maxInflight, "max-requests-inflight", 16,
		"HTTP API requests served at once; more get a 429 with Retry-After "+
			"(health checks are never refused; 0: no limit)")
	fs.DurationVar(&cfg.lintCountsMaxAge, "lint-counts-max-age", kubehttp.DefaultLintCountsMaxAge,
		"on a mirror whose lint count takes 50ms or more, how old the lint findings' counts "+
			"(GET /lint's counts, kubegcd_ownerref_findings) may grow before a request or a scrape "+
			"has them counted anew, in the background, over the whole mirror (0: at every request, "+
			"which is still answered with the last count); a quicker count is made for each request")
	fs.DurationVar(&cfg.graphStreamStall, "graph-stream-stall-timeout", kubehttp.DefaultGraphStreamStall,
		"how long a streamed answer (GET /graph, /lint, /audit, /pending) waits for its client "+
			"to take data before it is cut")
	fs.BoolVar(&cfg.profiling, "profiling", false,
		"serve Go's pprof profiles under /debug/pprof/ on --listen "+
			"(a CPU profile or trace of up to 2 minutes: ?seconds=N)")
}

func (f *runFlags) addControllerFlags(fs *pflag.FlagSet) {
	cfg := &f.cfg
	fs.BoolVar(&cfg.dryRun, "dry-run", true,
		"decide and record what would be done without writing to the cluster; --dry-run=false enforces")
	fs.StringSliceVar(&f.controllers, "controllers", api.Strings(api.Controllers),
		"comma-separated controllers to run: "+strings.Join(api.Strings(api.Controllers), ", "))
	fs.IntVar(&cfg.gcWorkers, "gc-workers", 64, "objects each controller works on at once")
	fs.DurationVar(&cfg.resyncPeriod, "resync-period", time.Minute,
		"how often controllers look at every candidate again, beside reacting to changes")
	fs.IntVar(&cfg.maxDeletionsPerMinute, "max-deletions-per-minute", 6000,
		"blast-radius cap: writes to the cluster (deletes and patches alike) beyond this many in any minute "+
			"pause enforcement; the count survives restarts (0: no cap)")
	fs.StringVar(&cfg.blastRadiusResume, "blast-radius-resume", "auto",
		"after the blast-radius cap paused enforcement: auto resumes when the rate falls; manual holds, "+
			"across restarts, until an operator runs 'kubegcd release'")
	fs.DurationVar(&cfg.stuckAfter, "stuck-after", 5*time.Minute,
		"a deletion not finished this long after it was requested is stuck: "+
			"/stuck lists it by default and kubegcd_deletions_stuck counts it")
	fs.DurationVar(&cfg.podgcPeriod, "podgc-period", 20*time.Second, "time between PodGC passes")
	fs.IntVar(&cfg.terminatedThreshold, "terminated-pod-gc-threshold", 12500,
		"terminated pods the cluster keeps before PodGC deletes the excess, "+
			"Evicted and oldest first (0: never)")
	fs.DurationVar(&cfg.podgcQuarantine, "podgc-quarantine", 40*time.Second,
		"how long a node must be missing before PodGC checks it live and deletes its pods")
	fs.DurationVar(&cfg.terminatedMaxAge, "terminated-pod-max-age", 0,
		"delete terminated pods created longer ago than this, however many there are (0: off)")
	fs.StringToIntVar(&cfg.namespaceThresholds, "terminated-pod-gc-threshold-namespace", nil,
		"`NAMESPACE=COUNT`: terminated pods that namespace keeps before PodGC deletes its excess; "+
			"repeatable, or comma-separated (default: none)")
	// Help would print an empty map's "[]" as the default.
	fs.Lookup("terminated-pod-gc-threshold-namespace").DefValue = ""
	fs.StringVar(&cfg.rulesDir, "rules-dir", rules.DefaultDir,
		"directory of the cleanup rules' files (*.yaml, *.yml), read again when they change; "+
			"the built-in rules run beside them, and a file or rule that is refused is logged, "+
			"shown in GET /rules and counted, while the others run")
	fs.DurationVar(&cfg.leaseCandidateGCPeriod, "lease-candidate-gc-period", lcgc.DefaultPeriod,
		"time between lcgc passes, which delete the LeaseCandidates not renewed for 30m "+
			"(kube-apiserver's LeaseCandidateGCPeriod)")
}

func (f *runFlags) addLeaderFlags(fs *pflag.FlagSet) {
	l := &f.cfg.leader
	fs.BoolVar(&l.Enabled, "leader-elect", true,
		"run for a Lease so that, of several kubegcd instances, only the holder writes to the cluster "+
			"(not in dry-run, which writes nothing)")
	fs.StringVar(&l.Namespace, "leader-elect-namespace", "kube-system", "namespace of the leader-election Lease")
	fs.StringVar(&l.Name, "leader-elect-name", "kubegcd", "name of the leader-election Lease")
	fs.DurationVar(&l.LeaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"how long followers wait after the last renewal before taking the lease")
	fs.DurationVar(&l.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"how long the leader keeps retrying to renew before it gives the lease up (and stops writing)")
	fs.DurationVar(&l.RetryPeriod, "leader-elect-retry-period", 2*time.Second,
		"how often to try to acquire or renew the lease")
	fs.BoolVar(&l.Coordinated, "leader-elect-coordinated", false,
		"coordinated leader election: stand as a LeaseCandidate "+
			"(this version, strategy OldestEmulationVersion) and let kube-apiserver name the holder; "+
			"refused (exit 1) unless kube-apiserver runs with "+
			"--feature-gates=CoordinatedLeaderElection=true and "+
			"--runtime-config=coordination.k8s.io/v1beta1=true; "+
			"needs --dry-run=false, and every instance of the Lease must use it")
}

func (f *runFlags) addLoggingFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.cfg.logFormat, "log-format", logFormatAuto,
		"log format: text, json, or journal (text without timestamps, each line led by its syslog priority, "+
			"<6> for info); auto: journal when stderr is the systemd journal ($JOURNAL_STREAM), else text")
}

// valueCompletions are the words shell completion offers for the flags
// that take one of a few.
var valueCompletions = map[string][]string{
	"log-level":           {"debug", "info", "warn", "error"},
	"log-format":          {logFormatAuto, logFormatText, logFormatJSON, logFormatJournal},
	"blast-radius-resume": {"auto", "manual"},
	"controllers":         api.Strings(api.Controllers),
	"deleted-copies-for":  api.Strings(api.Controllers),
}

// complete reads the config file into the flags the command line (fs) did
// not set, checks every value and returns the configuration. It reports
// every bad value at once, as kube-controller-manager's options do.
func (f *runFlags) complete(fs *pflag.FlagSet) (*runConfig, error) {
	cfg := &f.cfg
	if f.configFile != "" {
		if err := applyConfigFile(fs, f.configFile); err != nil {
			return nil, err
		}
	}
	var errs []error
	if err := cfg.logLevel.UnmarshalText([]byte(f.level)); err != nil {
		errs = append(errs, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", f.level))
	}
	if !slices.Contains([]string{logFormatAuto, logFormatText, logFormatJSON, logFormatJournal}, cfg.logFormat) {
		errs = append(errs, fmt.Errorf("invalid --log-format %q: want auto, text, json or journal",
			cfg.logFormat))
	}
	errs = append(errs, f.readControllers()...)
	errs = append(errs, f.readDeletedCopiesFor()...)
	errs = append(errs, cfg.validateValues()...)
	errs = append(errs, cfg.validateAuditSinks()...)
	if cfg.leader.Enabled {
		errs = append(errs, validateLeader(cfg.leader)...)
	}
	if cfg.leader.Coordinated {
		errs = append(errs, validateCoordinated(cfg.leader, cfg.dryRun)...)
	}
	errs = append(errs, cfg.validateHTTP(f.allowedHosts)...)
	errs = append(errs, cfg.validateAuditPeers()...)
	if cfg.dbPath == "" {
		errs = append(errs, errors.New("invalid --db: empty path"))
	}
	if len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	return cfg, nil
}

// readControllers reads --controllers into cfg.controllers, each once.
// pflag splits the list at commas and keeps the spaces around a name.
func (f *runFlags) readControllers() []error {
	var errs []error
	for _, s := range f.controllers {
		c := api.Controller(strings.TrimSpace(s))
		if c == "" {
			continue
		}
		if !slices.Contains(api.Controllers, c) {
			errs = append(errs, fmt.Errorf("invalid --controllers: unknown controller %q (known: %s)",
				c, strings.Join(api.Strings(api.Controllers), ", ")))
			continue
		}
		if !slices.Contains(f.cfg.controllers, c) {
			f.cfg.controllers = append(f.cfg.controllers, c)
		}
	}
	return errs
}

// readDeletedCopiesFor reads --deleted-copies-for into
// cfg.deletedCopiesFor, each once.
func (f *runFlags) readDeletedCopiesFor() []error {
	var errs []error
	for _, s := range f.deletedCopiesFor {
		c := api.Controller(strings.TrimSpace(s))
		if c == "" {
			continue
		}
		if !slices.Contains(api.Controllers, c) {
			errs = append(errs, fmt.Errorf("invalid --deleted-copies-for: unknown controller %q (known: %s)",
				c, strings.Join(api.Strings(api.Controllers), ", ")))
			continue
		}
		if !slices.Contains(f.cfg.deletedCopiesFor, c) {
			f.cfg.deletedCopiesFor = append(f.cfg.deletedCopiesFor, c)
		}
	}
	return errs
}

// checks collects the values that break their rule.
type checks []error

// bad notes that flag's value breaks the rule want says, when failed.
func (c *checks) bad(failed bool, flag string, value any, want string) {
	if failed {
		*c = append(*c, fmt.Errorf("invalid --%s %v: %s", flag, value, want))
	}
}

// validateValues checks each value against its rule.
func (c *runConfig) validateValues() []error {
	var e checks
	e.bad(c.discoveryInterval < time.Second, "discovery-interval", c.discoveryInterval, "must be at least 1s")
	e.bad(c.startupTimeout <= 0, "startup-timeout", c.startupTimeout, "must be positive")
	e.bad(c.kubeAPIQPS <= 0, "kube-api-qps", c.kubeAPIQPS, "must be positive")
	e.bad(c.kubeAPIBurst < 1, "kube-api-burst", c.kubeAPIBurst, "must be at least 1")
	e.bad(c.gcWorkers < 1, "gc-workers", c.gcWorkers, "must be at least 1")
	e.bad(c.maxDeletionsPerMinute < 0, "max-deletions-per-minute", c.maxDeletionsPerMinute,
		"must be 0 (no cap) or more")
	if c.blastRadiusResume != "auto" && c.blastRadiusResume != "manual" {
		e = append(e, fmt.Errorf("invalid --blast-radius-resume %q: want auto or manual", c.blastRadiusResume))
	}
	e.bad(c.auditRetention < time.Hour, "audit-retention", c.auditRetention, "must be at least 1h")
	e.bad(c.historyRetention != 0 && c.historyRetention < time.Hour, "history-retention", c.historyRetention,
		"must be 0 (forever) or at least 1h")
	e.bad(c.deletedCopiesRetention < time.Hour, "deleted-copies-retention", c.deletedCopiesRetention,
		"must be at least 1h")
	e.bad(c.deletedCopiesMaxBytes < 0, "deleted-copies-max-bytes", c.deletedCopiesMaxBytes,
		"must be 0 (no bound) or more")
	e.bad(c.resyncPeriod < time.Second, "resync-period", c.resyncPeriod, "must be at least 1s")
	e.bad(c.podgcPeriod < time.Second, "podgc-period", c.podgcPeriod, "must be at least 1s")
	e.bad(c.terminatedThreshold < 0, "terminated-pod-gc-threshold", c.terminatedThreshold,
		"must be 0 (never) or more")
	e.bad(c.podgcQuarantine < 0, "podgc-quarantine", c.podgcQuarantine, "must not be negative")
	for _, ns := range slices.Sorted(maps.Keys(c.namespaceThresholds)) {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			e = append(e, fmt.Errorf("invalid --terminated-pod-gc-threshold-namespace: namespace %q: %s",
				ns, strings.Join(msgs, "; ")))
		}
		if count := c.namespaceThresholds[ns]; count < 0 {
			e = append(e, fmt.Errorf("invalid --terminated-pod-gc-threshold-namespace: "+
				"count %d of namespace %q: must be 0 or more", count, ns))
		}
	}
	e.bad(c.terminatedMaxAge < 0, "terminated-pod-max-age", c.terminatedMaxAge, "must be 0 (off) or positive")
	e.bad(c.leaseCandidateGCPeriod < time.Second, "lease-candidate-gc-period", c.leaseCandidateGCPeriod,
		"must be at least 1s")
	e.bad(c.stuckAfter < 0, "stuck-after", c.stuckAfter, "must not be negative")
	e.bad(c.lintCountsMaxAge < 0, "lint-counts-max-age", c.lintCountsMaxAge, "must not be negative")
	e.bad(c.graphStreamStall < time.Second, "graph-stream-stall-timeout", c.graphStreamStall,
		"must be at least 1s")
	e.bad(c.maxInflight < 0, "max-requests-inflight", c.maxInflight, "must be 0 (no limit) or more")
	return e
}

// validateHTTP checks --listen against the API's authentication and TLS,
// and reads allowedHosts and the --listen host into c.allowedHosts.
func (c *runConfig) validateHTTP(allowedHosts []string) []error {
	var errs []error
	if (c.tlsCertFile == "") != (c.tlsKeyFile == "") {
		errs = append(errs, errors.New("invalid --tls-cert-file/--tls-private-key-file: give both or neither"))
	}
	if c.clientCAFile != "" && c.tlsCertFile == "" {
		errs = append(errs, errors.New("invalid --client-ca-file: client certificates need TLS: "+
			"give --tls-cert-file and --tls-private-key-file too"))
	}
	listenHost, _, err := net.SplitHostPort(c.listen)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("invalid --listen %q: want HOST:PORT, such as 127.0.0.1:8080", c.listen))
	case !isLoopback(listenHost) && c.authTokenFile == "" && c.clientCAFile == "" && !c.insecureUnauthenticated:
		errs = append(errs, fmt.Errorf("refusing --listen %s without authentication: "+
			"anyone who reaches it could read the cluster's ownership graph; "+
			"give --auth-token-file or --client-ca-file (with --tls-cert-file), "+
			"or --insecure-allow-unauthenticated to serve it anyway", c.listen))
	}
	if listenHost != "" {
		c.allowedHosts = append(c.allowedHosts, listenHost)
	}
	for _, h := range allowedHosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err == nil || strings.ContainsAny(h, "/ ") {
			errs = append(errs, fmt.Errorf("invalid --allowed-hosts: %q is not a host name "+
				"(no scheme, port or path)", h))
			continue
		}
		c.allowedHosts = append(c.allowedHosts, h)
	}
	return errs
}

// isLoopback: host, of a --listen address, reaches only this machine. An
// empty host listens on every address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// applyConfigFile sets every flag the file names that the command line did
// not set.
func applyConfigFile(fs *pflag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config %w", err)
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onCommandLine[f.Name] = true })
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), `"`)
		name = strings.TrimLeft(name, "-")
		if !ok || name == "" {
			return fmt.Errorf("config %s:%d: want 'flag = value', got %q", path, i+1, line)
		}
		if name == "config" || name == "help" || fs.Lookup(name) == nil {
			return fmt.Errorf("config %s:%d: unknown setting %q (see 'kubegcd help run')", path, i+1, name)
		}
		if onCommandLine[name] {
			continue
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("config %s:%d: invalid value %q for %s: %s", path, i+1, value, name, cmdline.Wants(err))
		}
	}
	return nil
}

// restConfig loads the client configuration: --kubeconfig (from the
// command line or the config file), else the systemd credential
// "kubeconfig" (LoadCredential=), else $KUBECONFIG, else ~/.kube/config,
// else the in-cluster service account. warn says what of the kubeconfig is
// not used.
func (c *runConfig) restConfig(warn func(msg string, args ...any)) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.kubeconfig != "" {
		if _, err := os.Stat(c.kubeconfig); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", c.kubeconfig, err)
		}
		rules.ExplicitPath = c.kubeconfig
	} else if p := credentialPath("kubeconfig"); p != "" {
		rules.ExplicitPath = p
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.kubeContext}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err == nil {
		moveServerUserInfo(cfg, warn)
		return withUserAgent(cfg), nil
	}
	if c.kubeconfig == "" && clientcmd.IsEmptyConfig(err) {
		if inCluster, icErr := rest.InClusterConfig(); icErr == nil {
			return withUserAgent(inCluster), nil
		}
		return nil, errors.New("no kubeconfig found: pass --kubeconfig, " +
			"load the systemd credential kubeconfig, set $KUBECONFIG or create ~/.kube/config")
	}
	where := rules.ExplicitPath
	if where == "" {
		where = strings.Join(rules.GetLoadingPrecedence(), ":")
	}
	return nil, fmt.Errorf("kubeconfig %s: %w", where, err)
}

// credentialPath is the path of the systemd credential name (passed with
// LoadCredential=, so that root reads the file and kubegcd's user needs no
// access to it), or "" when there is none.
func credentialPath(name string) string {
	dir := os.Getenv("CREDENTIALS_DIRECTORY")
	if dir == "" {
		return ""
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// moveServerUserInfo takes the user and password out of the server's URL
// (https://user:password@host), where client-go would quote them in its
// log lines and errors, and sends them as basic auth, as net/http does
// from a URL. Beside a credential of the kubeconfig's user (a token, a
// username, a plugin) they are dropped, and the user's credential is sent:
// client-go refuses basic auth beside a token, and net/http's basic auth
// from the URL used to take the place of that credential silently.
func moveServerUserInfo(cfg *rest.Config, warn func(msg string, args ...any)) {
	host, user, password, ok := splitUserInfo(cfg.Host)
	if !ok {
		return
	}
	cfg.Host = host
	var other string
	switch {
	case cfg.BearerToken != "" || cfg.BearerTokenFile != "":
		other = "a token"
	case cfg.Username != "":
		other = "a username and password"
	case cfg.ExecProvider != nil:
		other = "an exec plugin"
	case cfg.AuthProvider != nil:
		other = "an auth provider"
	default:
		cfg.Username, cfg.Password = user, password
		return
	}
	warn("the user and password in the kubeconfig's server URL are not sent: its user authenticates with "+other,
		"server", host, "user", user)
}

// splitUserInfo splits the user info off server, a URL or (as client-go
// takes it) a host without a scheme: ok is false when there is none.
func splitUserInfo(server string) (host, user, password string, ok bool) {
	prefix, rest := "", server
	if i := strings.Index(server, "://"); i >= 0 {
		prefix, rest = server[:i+3], server[i+3:]
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	// The last '@', as net/url finds it: a password may hold one unescaped.
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return server, "", "", false
	}
	user, password, _ = strings.Cut(authority[:at], ":")
	return prefix + authority[at+1:] + path, unescape(user), unescape(password), true
}

// unescape undoes the URL's percent-encoding of a user or password; one
// that is not well-formed is taken as written.
func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

func withUserAgent(cfg *rest.Config) *rest.Config {
	cfg.UserAgent = "kubegcd/" + version()
	return cfg
}

// hidePassword replaces the password in the user info of the API server's
// URL ("https://user:secret@host" becomes "https://user:xxxxx@host")
// wherever s quotes that URL: kubegcd's own messages, and those of client-go
// and net/url, which quote it as given, malformed or not.
func hidePassword(s, server string) string {
	rest := server // client-go takes a server without a scheme too
	if _, after, ok := strings.Cut(server, "://"); ok {
		rest = after
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	i := strings.LastIndex(rest, "@")
	if i < 0 {
		return s
	}
	user, password, ok := strings.Cut(rest[:i], ":")
	if !ok || password == "" {
		return s
	}
	return strings.ReplaceAll(s, user+":"+password+"@", user+":xxxxx@")
}

// garbageCollector says who removes the foregroundDeletion and orphan
// finalizers, for /stuck's words.
func (c *runConfig) garbageCollector() diagnose.Collector {
	switch {
	case !slices.Contains(c.controllers, api.ControllerOwnerGC):
		return diagnose.UpstreamGC
	case c.dryRun:
		return diagnose.KubegcdDryRun
	}
	return diagnose.Kubegcd
}
