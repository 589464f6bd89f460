package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blang/semver/v4"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kubegcd/kubegcd/internal/db"
	kubehttp "github.com/kubegcd/kubegcd/internal/http"
)

// errLostLease ends the daemon when another instance took the lease: every
// write stopped at once; systemd starts kubegcd again, as a follower.
var errLostLease = errors.New("lost the leader-election lease; stopped every write and exiting so that a restart rejoins as a follower")

// errNotLeader is what a write attempted without the lease gets.
var errNotLeader = errors.New("not the leader: this kubegcd does not write to the cluster")

// leadership is this instance's part in leader election.
type leadership struct {
	enabled     bool
	coordinated bool   // the API server names the holder
	reason      string // why not, when disabled
	identity    string
	ns, name    string
	store       *db.DB
	leading     atomic.Bool
	fence       atomic.Pointer[fencedLock] // set while electing

	mu     sync.Mutex
	holder string
	seen   time.Time // when this instance saw the holder take the lease

	// beforeRelease, when set, runs once work has returned and before the
	// lease is released.
	beforeRelease func()
}

// newLeadership sets up this instance's part: it runs for the lease when
// enforcing with --leader-elect, and otherwise writes freely (enforcing) or
// not at all (dry-run, whose applier writes nothing anyway).
func newLeadership(cfg *runConfig, identity string, store *db.DB) *leadership {
	l := &leadership{enabled: cfg.leader.enabled && !cfg.dryRun, identity: identity, ns: cfg.leader.namespace,
		name: cfg.leader.name, store: store}
	l.coordinated = l.enabled && cfg.leader.coordinated
	switch {
	case cfg.dryRun:
		l.reason = "dry-run writes nothing to the cluster, a Lease included: every dry-run instance decides on its own"
	case !cfg.leader.enabled:
		l.reason = "--leader-elect=false: this instance writes without a lease"
	}
	if !l.enabled {
		l.leading.Store(true)
	}
	return l
}

// mayWrite is the applier's guard: only the leader writes, and only while
// its lease is surely still its own (see fencedLock).
func (l *leadership) mayWrite() error {
	if !l.leading.Load() {
		return errNotLeader
	}
	if f := l.fence.Load(); f != nil {
		return f.held()
	}
	return nil
}

// Status is what /status shows.
func (l *leadership) Status(ctx context.Context) kubehttp.LeaderStatus {
	st := kubehttp.LeaderStatus{Enabled: l.enabled, Leader: l.leading.Load(), Identity: l.identity, Reason: l.reason}
	if !l.enabled {
		return st
	}
	st.Lease = l.ns + "/" + l.name
	l.mu.Lock()
	st.Holder = l.holder
	if !l.seen.IsZero() {
		seen := l.seen
		st.HolderSince = &seen
	}
	l.mu.Unlock()
	// The Lease's own acquireTime, from the mirror, is the better "since".
	if leases, err := l.store.Objects().Leases(ctx, db.LeaseFilter{Namespace: l.ns, Name: l.name}); err == nil {
		for _, lease := range leases {
			if lease.HolderIdentity != nil && *lease.HolderIdentity == st.Holder && lease.AcquireTime != nil {
				st.HolderSince = lease.AcquireTime
			}
			st.Strategy, st.PreferredHolder = deref(lease.Strategy), deref(lease.PreferredHolder)
		}
	}
	st.Coordinated = l.coordinated
	if cands, err := l.store.Objects().LeaseCandidates(ctx, db.LeaseCandidateFilter{Namespace: l.ns, LeaseName: l.name}); err == nil {
		st.Candidates = kubehttp.ElectionCandidates(cands, l.identity)
	}
	return st
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// leaderConfig is what --leader-elect* set.
type leaderConfig struct {
	enabled                                   bool
	namespace, name                           string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	// coordinated: the API server's election controller names the
	// holder among the LeaseCandidates (--leader-elect-coordinated).
	coordinated bool
}

// lead runs leader election until ctx ends, running work (the controllers)
// while this instance holds the lease. It returns nil when ctx ended (work
// has returned, then the lease is released), errLostLease when another
// instance took it (wrapped, when coordinated, with whom the API server
// prefers: see lostTo), and work's error when work failed (the lease is
// released too, for another instance to take).
func (l *leadership) lead(ctx context.Context, cfg leaderConfig, restCfg *rest.Config, logger *slog.Logger, work func(context.Context) error) error {
	electCfg := rest.AddUserAgent(rest.CopyConfig(restCfg), "kubegcd-leader-election")
	// The API server warns of v1beta1 LeaseCandidates at each request. The
	// copy keeps the handler of restCfg, so that a warning the other
	// clients got already is not logged again.
	if electCfg.WarningHandlerWithContext == nil {
		electCfg.WarningHandlerWithContext = &onceWarnings{logger: logger}
	}
	client, err := kubernetes.NewForConfig(electCfg)
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.namespace, Name: cfg.name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
	}
	elect := func(ctx context.Context) error {
		return l.elect(ctx, cfg, newFencedLock(lock, cfg.leaseDuration, time.Now), logger, work)
	}
	if cfg.coordinated {
		return l.coordinate(ctx, cfg, client, candidateVersion(version()), coordinationTimeout(cfg), logger, elect)
	}
	return elect(ctx)
}

// elect is lead with the lock given.
func (l *leadership) elect(ctx context.Context, cfg leaderConfig, lock *fencedLock, logger *slog.Logger, work func(context.Context) error) error {
	l.fence.Store(lock)
	// The elector runs until work has returned, so that a graceful stop
	// releases the lease only once the writes under way have ended: the
	// next leader must not start while this one still writes.
	electing, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	var (
		mu       sync.Mutex
		stopping bool
		working  chan struct{} // closed when work returns; nil before it starts
		workErr  error
	)
	// stopWork stops work from starting and waits for it to return.
	stopWork := func() {
		mu.Lock()
		stopping = true
		done := working
		mu.Unlock()
		if done != nil {
			<-done
		}
	}
	// release stops electing, which releases the lease: after the hook
	// that must come first (see coordinate), if any.
	release := func() {
		if l.beforeRelease != nil {
			l.beforeRelease()
		}
		stopElecting()
	}
	stopAfterWork := context.AfterFunc(ctx, func() {
		stopWork()
		release()
	})
	defer stopAfterWork()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.leaseDuration,
		RenewDeadline:   cfg.renewDeadline,
		RetryPeriod:     cfg.retryPeriod,
		ReleaseOnCancel: true,
		Name:            "kubegcd",
		// The API server names the holder; the elector renews only a
		// Lease that names it, and gives up one that names a preferred
		// holder (see coordinate).
		Coordinated: cfg.coordinated,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				defer mu.Unlock()
				if stopping {
					return
				}
				done := make(chan struct{})
				working = done
				l.leading.Store(true)
				logger.Info("leading: this instance now writes to the cluster", "identity", l.identity)
				// Work ends when the daemon stops (ctx) or the lease is lost
				// (lctx), whichever comes first.
				wctx, cancel := context.WithCancel(ctx)
				stop := context.AfterFunc(lctx, cancel)
				go func() {
					defer close(done)
					defer cancel()
					defer stop()
					if err := work(wctx); err != nil {
						mu.Lock()
						workErr = err
						mu.Unlock()
						release()
					}
				}()
			},
			OnStoppedLeading: func() {
				// First of all: no write from here on.
				l.leading.Store(false)
				logger.Info("stopped leading", "identity", l.identity)
			},
			OnNewLeader: func(identity string) {
				l.mu.Lock()
				l.holder, l.seen = identity, time.Now()
				l.mu.Unlock()
				if identity != l.identity {
					logger.Info("following", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(electing) // returns when electing ends or the lease is lost
	l.leading.Store(false)
	stopWork()
	mu.Lock()
	defer mu.Unlock()
	switch {
	case workErr != nil:
		return workErr
	case ctx.Err() != nil:
		return nil
	case cfg.coordinated:
		return lostTo(errLostLease, l.identity, cfg.namespace+"/"+cfg.name, lock.lastRead())
	}
	return errLostLease
}

// fencedLock is the Lease lock, recording when its last successful renewal
// started. Other instances time the lease from when they see that renewal,
// which is after it started: until leaseDuration after the start, no other
// instance can hold the lease. client-go's elector does not bound its own
// belief that way (it may think itself leader for up to a retry period plus
// the renew deadline after its last renewal, with a renewal request hanging
// meanwhile), so a write is allowed only within valid, the lease duration
// less a margin for the write's own travel to the API server.
type fencedLock struct {
	resourcelock.Interface
	now   func() time.Time
	valid time.Duration

	mu      sync.Mutex
	renewed time.Time // start of the last renewal; zero when not held
	// read is the record the last Get read: after a lost Lease, whom it
	// named before the release cleared it.
	read resourcelock.LeaderElectionRecord
}

// fenceMargin is the time a write admitted just before the fence closes
// has to reach the API server: a tenth of the lease, at least 2 s.
func fenceMargin(leaseDuration time.Duration) time.Duration {
	return max(2*time.Second, leaseDuration/10)
}

func newFencedLock(lock resourcelock.Interface, leaseDuration time.Duration, now func() time.Time) *fencedLock {
	return &fencedLock{Interface: lock, now: now, valid: leaseDuration - fenceMargin(leaseDuration)}
}

func (f *fencedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return f.record(r, func() error { return f.Interface.Create(ctx, r) })
}

// Get reads the lease record, and keeps it for lastRead.
func (f *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := f.Interface.Get(ctx)
	if err == nil && r != nil {
		f.mu.Lock()
		f.read = *r
		f.mu.Unlock()
	}
	return r, raw, err
}

// lastRead is the lease record as the last Get read it.
func (f *fencedLock) lastRead() resourcelock.LeaderElectionRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.read
}

func (f *fencedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return f.record(r, func() error { return f.Interface.Update(ctx, r) })
}

// record times a write of the lease record: one naming this instance renews
// the lease from its start; one naming none (the release) ends it.
func (f *fencedLock) record(r resourcelock.LeaderElectionRecord, write func() error) error {
	start := f.now()
	err := write()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil: // the last renewal stands
	case r.HolderIdentity == f.Identity():
		f.renewed = start
	default:
		f.renewed = time.Time{}
	}
	return err
}

// held says whether the lease is surely this instance's now.
func (f *fencedLock) held() error {
	f.mu.Lock()
	renewed := f.renewed
	f.mu.Unlock()
	if renewed.IsZero() {
		return errNotLeader
	}
	if age := f.now().Sub(renewed); age >= f.valid {
		return fmt.Errorf("not writing: the lease was last renewed %s ago, and a leader writes only within %s of a renewal, "+
			"lest another instance hold the lease already", age.Round(time.Millisecond), f.valid)
	}
	return nil
}

// onceWarnings logs each warning of the API server once: a candidate's
// every renewal gets the same deprecation warning.
type onceWarnings struct {
	logger *slog.Logger
	seen   sync.Map
}

func (w *onceWarnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	if _, dup := w.seen.LoadOrStore(text, true); !dup {
		w.logger.Info("the API server warns (said once)", "warning", text)
	}
}

// Coordinated leader election (--leader-elect-coordinated): kubegcd stands
// as a LeaseCandidate of its Lease, and kube-apiserver's election
// controller names the holder among the candidates.
const (
	// coordinatedGate is the feature gate of kube-apiserver's election
	// controller; candidatesRuntimeConfig makes it serve LeaseCandidates.
	coordinatedGate         = "CoordinatedLeaderElection"
	candidatesRuntimeConfig = "coordination.k8s.io/v1beta1=true"
	// electionDelay is upstream's electionDuration: how long the election
	// controller waits for the candidates it pinged to answer. It also
	// looks at each coordinated Lease again this often.
	electionDelay = 5 * time.Second
	// candidateStrategy is the strategy kubegcd's candidate asks for. The
	// oldest version holds the Lease: during an upgrade, the old release
	// writes until no instance runs it any more.
	candidateStrategy = coordinationv1.OldestEmulationVersion
)

// notCoordinated is the refusal of --leader-elect-coordinated: why, and
// what kube-apiserver needs for it.
func notCoordinated(why string) error {
	return fmt.Errorf("--leader-elect-coordinated: %s; it needs kube-apiserver with the feature gate %s "+
		"(--feature-gates=%s=true) and LeaseCandidates served (--runtime-config=%s)",
		why, coordinatedGate, coordinatedGate, candidatesRuntimeConfig)
}

// coordinationTimeout bounds the wait at start for the API server to
// coordinate the Lease. A holder that stopped renewing lets the Lease
// expire within one lease duration; the controller looks again within
// electionDelay and waits as long for the candidates' answers. The
// second lease duration is slack for a busy API server.
func coordinationTimeout(cfg leaderConfig) time.Duration {
	return 2*cfg.leaseDuration + 2*electionDelay
}

// coordinate runs elect while this instance stands as a LeaseCandidate of
// the Lease. It refuses (notCoordinated) when the API server does not
// serve LeaseCandidates, or does not coordinate the Lease within timeout.
// The candidate stands until work has returned, and is deleted before
// the lease is released: no election waits for the answer of a gone
// instance, nor elects it again.
func (l *leadership) coordinate(ctx context.Context, cfg leaderConfig, client kubernetes.Interface, ver string,
	timeout time.Duration, logger *slog.Logger, elect func(context.Context) error) error {
	if msgs := validation.IsConfigMapKey(l.identity); len(msgs) > 0 {
		return fmt.Errorf("--leader-elect-coordinated: the identity %q is no LeaseCandidate name: %s", l.identity, strings.Join(msgs, "; "))
	}
	served, err := candidatesServed(client.Discovery())
	if err != nil {
		return fmt.Errorf("--leader-elect-coordinated: discovery of %s: %w", coordinationv1beta1.SchemeGroupVersion, err)
	}
	if !served {
		return notCoordinated("the API server does not serve leasecandidates." + coordinationv1beta1.SchemeGroupVersion.String())
	}
	candidate, _, err := leaderelection.NewCandidate(client, cfg.namespace, l.identity, cfg.name, ver, ver, candidateStrategy)
	if err != nil {
		return fmt.Errorf("--leader-elect-coordinated: %w", err)
	}
	standing, stopStanding := context.WithCancel(context.WithoutCancel(ctx))
	stood := make(chan struct{})
	go func() {
		defer close(stood)
		candidate.Run(standing)
	}()
	var once sync.Once
	withdraw := func() {
		once.Do(func() {
			stopStanding()
			<-stood
			l.withdraw(client, cfg, logger)
		})
	}
	defer withdraw()
	// Withdrawn before the release: a candidate that renewed within the
	// election controller's delay would be elected again at once.
	l.beforeRelease = withdraw
	logger.Info("standing as a LeaseCandidate: the API server names the holder", "candidate", l.identity,
		"lease", cfg.namespace+"/"+cfg.name, "version", ver, "strategy", candidateStrategy)
	err = waitCoordinated(ctx, client, cfg.namespace, cfg.name, l.identity, cfg.retryPeriod, timeout)
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	}
	logger.Info("the API server coordinates the Lease", "lease", cfg.namespace+"/"+cfg.name)
	return elect(ctx)
}

// lostTo adds to err, a lost Lease, whom the API server prefers as its
// holder or has named so, when r, the Lease as last read, names another
// instance. The release clears both, so r is what was read before it.
func lostTo(err error, self, lease string, r resourcelock.LeaderElectionRecord) error {
	switch {
	case r.PreferredHolder != "" && r.PreferredHolder != self:
		return fmt.Errorf("the API server prefers %s as the holder of the Lease %s (strategy %s): %w",
			r.PreferredHolder, lease, r.Strategy, err)
	case r.HolderIdentity != "" && r.HolderIdentity != self:
		return fmt.Errorf("the API server named %s the holder of the Lease %s: %w", r.HolderIdentity, lease, err)
	}
	return err
}

// candidatesServed says whether the API server serves LeaseCandidates at
// the version client-go's candidate writes.
func candidatesServed(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(coordinationv1beta1.SchemeGroupVersion.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "leasecandidates" }), nil
}

// waitCoordinated polls every interval until this instance's candidate
// stands and the Lease is coordinated (see leaseCoordinated), and refuses
// once timeout has passed.
func waitCoordinated(ctx context.Context, client kubernetes.Interface, namespace, name, identity string, interval, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var last string
	for {
		last = coordination(ctx, client, namespace, name, identity)
		if last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return notCoordinated(fmt.Sprintf("the API server did not coordinate the Lease %s/%s within %s: %s",
				namespace, name, timeout, last))
		case <-tick.C:
		}
	}
}

// coordination says why the Lease is not coordinated with this instance
// standing for it, or "" when it is.
func coordination(ctx context.Context, client kubernetes.Interface, namespace, name, identity string) string {
	if _, err := client.CoordinationV1beta1().LeaseCandidates(namespace).Get(ctx, identity, metav1.GetOptions{}); err != nil {
		return fmt.Sprintf("this instance's LeaseCandidate %s does not stand (%v)", identity, err)
	}
	lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "it does not exist"
	case err != nil:
		return err.Error()
	}
	_, why := leaseCoordinated(lease, time.Now())
	return why
}

// leaseCoordinated says whether the API server's election controller
// coordinates the Lease: it has a strategy (only the controller sets one)
// and a holder whose term runs. A stale strategy alone, left from a time
// the controller ran, is not enough. When not, it says why.
func leaseCoordinated(lease *coordinationv1.Lease, now time.Time) (bool, string) {
	s := lease.Spec
	switch {
	case s.Strategy == nil || *s.Strategy == "":
		return false, "it has no strategy"
	case s.HolderIdentity == nil || *s.HolderIdentity == "":
		return false, "it has a strategy but no holder"
	case s.RenewTime == nil || s.LeaseDurationSeconds == nil ||
		!s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds)*time.Second).After(now):
		return false, fmt.Sprintf("its holder %q let it expire", *s.HolderIdentity)
	}
	return true, ""
}

// withdraw deletes this instance's LeaseCandidate, on the way out.
func (l *leadership) withdraw(client kubernetes.Interface, cfg leaderConfig, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.renewDeadline)
	defer cancel()
	err := client.CoordinationV1beta1().LeaseCandidates(cfg.namespace).Delete(ctx, l.identity, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Warn("could not delete this instance's LeaseCandidate; the API server collects it once expired",
			"candidate", cfg.namespace+"/"+l.identity, "err", err)
	}
}

// releasedVersion is a version with a release number, major.minor at
// least: v1.2.3, or git describe's v1.2.3-4-gabcdef.
var releasedVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+`)

// candidateVersion is kubegcd's version v as its candidate's binary and
// emulation versions, in the strict semantic versioning the API server
// validates (it sorts them as semver.ParseTolerant reads them). A release
// keeps its number, without the "v". A build without one (a commit hash,
// "dev") is 0.0.0-dev, with v as build metadata: it sorts before every
// release, so that of a dev build and a release the election prefers the
// dev build, and of dev builds the oldest candidate.
func candidateVersion(v string) string {
	if releasedVersion.MatchString(v) {
		if sv, err := semver.ParseTolerant(v); err == nil {
			return sv.String()
		}
	}
	const dev = "0.0.0-dev"
	var meta []string
	for _, part := range strings.Split(v, ".") {
		part = strings.Map(func(r rune) rune {
			if r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '-'
		}, part)
		if part != "" {
			meta = append(meta, part)
		}
	}
	if len(meta) == 0 {
		return dev
	}
	s := dev + "+" + strings.Join(meta, ".")
	if _, err := semver.Parse(s); err != nil {
		return dev
	}
	return s
}

// instanceIdentity is host_suffix, this instance's identity in audit rows
// and leader election, with each character a LeaseCandidate's name (a
// ConfigMap key) may not hold replaced by "-", and host cut to keep it
// within 253 characters: under --leader-elect-coordinated the API server
// writes the candidate's name as the Lease's holder.
func instanceIdentity(host, suffix string) string {
	host = strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, host)
	if host == "" {
		host = "kubegcd"
	}
	if n := validation.DNS1123SubdomainMaxLength - len(suffix) - 1; len(host) > n {
		host = host[:n]
	}
	return host + "_" + suffix
}
