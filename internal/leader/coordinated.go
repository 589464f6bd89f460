package leader

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blang/semver/v4"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

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

// candidatesVersion is the version of LeaseCandidates client-go's
// candidate writes.
var candidatesVersion = coordinationv1beta1.SchemeGroupVersion

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
func coordinationTimeout(cfg Config) time.Duration {
	return 2*cfg.LeaseDuration + 2*electionDelay
}

// coordinate runs elect while this instance stands as a LeaseCandidate of
// the Lease. It refuses (notCoordinated) when the API server does not
// serve LeaseCandidates, or does not coordinate the Lease within timeout.
// The candidate stands until work has returned, and is deleted before
// the lease is released: no election waits for the answer of a gone
// instance, nor elects it again.
func (e *Elector) coordinate(ctx context.Context, client kubernetes.Interface, ver string, timeout time.Duration,
	logger *slog.Logger, elect func(context.Context) error) error {
	cfg := e.cfg
	if msgs := validation.IsConfigMapKey(e.identity); len(msgs) > 0 {
		return fmt.Errorf("--leader-elect-coordinated: the identity %q is no LeaseCandidate name: %s",
			e.identity, strings.Join(msgs, "; "))
	}
	served, err := candidatesServed(client.Discovery())
	if err != nil {
		return fmt.Errorf("--leader-elect-coordinated: discovery of %s: %w", candidatesVersion, err)
	}
	if !served {
		return notCoordinated("the API server does not serve leasecandidates." + candidatesVersion.String())
	}
	candidate, _, err := leaderelection.NewCandidate(client, cfg.Namespace, e.identity, cfg.Name, ver, ver,
		candidateStrategy)
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
			e.withdraw(client, logger)
		})
	}
	defer withdraw()
	// Withdrawn before the release: a candidate that renewed within the
	// election controller's delay would be elected again at once.
	e.beforeRelease = withdraw
	logger.Info("standing as a LeaseCandidate: the API server names the holder", "candidate", e.identity,
		"lease", cfg.Namespace+"/"+cfg.Name, "version", ver, "strategy", candidateStrategy)
	err = waitCoordinated(ctx, client, cfg.Namespace, cfg.Name, e.identity, cfg.RetryPeriod, timeout)
	switch {
	case ctx.Err() != nil:
		return nil
	case err != nil:
		return err
	}
	logger.Info("the API server coordinates the Lease", "lease", cfg.Namespace+"/"+cfg.Name)
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
		return fmt.Errorf("the API server named %s the holder of the Lease %s: %w",
			r.HolderIdentity, lease, err)
	}
	return err
}

// candidatesServed says whether the API server serves LeaseCandidates at
// the version client-go's candidate writes.
func candidatesServed(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(candidatesVersion.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	isCandidates := func(r metav1.APIResource) bool { return r.Name == "leasecandidates" }
	return slices.ContainsFunc(list.APIResources, isCandidates), nil
}

// waitCoordinated polls every interval until this instance's candidate
// stands and the Lease is coordinated (see leaseCoordinated), and refuses
// once timeout has passed.
func waitCoordinated(ctx context.Context, client kubernetes.Interface, namespace, name, identity string,
	interval, timeout time.Duration) error {
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
			why := fmt.Sprintf("the API server did not coordinate the Lease %s/%s within %s: %s",
				namespace, name, timeout, last)
			return notCoordinated(why)
		case <-tick.C:
		}
	}
}

// coordination says why the Lease is not coordinated with this instance
// standing for it, or "" when it is.
func coordination(ctx context.Context, client kubernetes.Interface, namespace, name, identity string) string {
	candidates := client.CoordinationV1beta1().LeaseCandidates(namespace)
	if _, err := candidates.Get(ctx, identity, metav1.GetOptions{}); err != nil {
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
func (e *Elector) withdraw(client kubernetes.Interface, logger *slog.Logger) {
	cfg := e.cfg
	ctx, cancel := context.WithTimeout(context.Background(), cfg.RenewDeadline)
	defer cancel()
	candidates := client.CoordinationV1beta1().LeaseCandidates(cfg.Namespace)
	err := candidates.Delete(ctx, e.identity, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Warn("could not delete this instance's LeaseCandidate; the API server collects it once expired",
			"candidate", cfg.Namespace+"/"+e.identity, "err", err)
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
			if alphanumeric(r) || r == '-' {
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
