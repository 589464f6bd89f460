package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	enabled  bool
	reason   string // why not, when disabled
	identity string
	ns, name string
	store    *db.DB
	leading  atomic.Bool

	mu     sync.Mutex
	holder string
	seen   time.Time // when this instance saw the holder take the lease
}

// newLeadership sets up this instance's part: it runs for the lease when
// enforcing with --leader-elect, and otherwise writes freely (enforcing) or
// not at all (dry-run, whose applier writes nothing anyway).
func newLeadership(cfg *runConfig, identity string, store *db.DB) *leadership {
	l := &leadership{enabled: cfg.leader.enabled && !cfg.dryRun, identity: identity, ns: cfg.leader.namespace,
		name: cfg.leader.name, store: store}
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

// mayWrite is the applier's guard: only the leader writes.
func (l *leadership) mayWrite() error {
	if l.leading.Load() {
		return nil
	}
	return errNotLeader
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
	if leases, err := l.store.Leases(ctx, db.LeaseFilter{Namespace: l.ns, Name: l.name}, time.Now()); err == nil {
		for _, lease := range leases {
			if lease.HolderIdentity != nil && *lease.HolderIdentity == st.Holder && lease.AcquireTime != nil {
				st.HolderSince = lease.AcquireTime
			}
		}
	}
	return st
}

// leaderConfig is what --leader-elect* set.
type leaderConfig struct {
	enabled                                   bool
	namespace, name                           string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

// lead runs leader election until ctx ends, running work (the controllers)
// while this instance holds the lease. It returns nil when ctx ended (the
// lease is released), errLostLease when another instance took it, and
// work's error when work failed (the lease is released too, for another
// instance to take).
func (l *leadership) lead(ctx context.Context, cfg leaderConfig, restCfg *rest.Config, logger *slog.Logger, work func(context.Context) error) error {
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), "kubegcd-leader-election"))
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.namespace, Name: cfg.name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
	}
	electing, stopElecting := context.WithCancel(ctx)
	defer stopElecting()
	var worked sync.WaitGroup
	var workErr error
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.leaseDuration,
		RenewDeadline:   cfg.renewDeadline,
		RetryPeriod:     cfg.retryPeriod,
		ReleaseOnCancel: true,
		Name:            "kubegcd",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				l.leading.Store(true)
				logger.Info("leading: this instance now writes to the cluster", "identity", l.identity)
				worked.Go(func() {
					if err := work(lctx); err != nil {
						workErr = err
						stopElecting()
					}
				})
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
	worked.Wait()
	switch {
	case workErr != nil:
		return workErr
	case ctx.Err() != nil:
		return nil
	}
	return errLostLease
}
