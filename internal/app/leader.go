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
	fence    atomic.Pointer[fencedLock] // set while electing

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
// while this instance holds the lease. It returns nil when ctx ended (work
// has returned, then the lease is released), errLostLease when another
// instance took it, and work's error when work failed (the lease is
// released too, for another instance to take).
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
	return l.elect(ctx, cfg, newFencedLock(lock, cfg.leaseDuration, time.Now), logger, work)
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
	stopAfterWork := context.AfterFunc(ctx, func() {
		stopWork()
		stopElecting()
	})
	defer stopAfterWork()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.leaseDuration,
		RenewDeadline:   cfg.renewDeadline,
		RetryPeriod:     cfg.retryPeriod,
		ReleaseOnCancel: true,
		Name:            "kubegcd",
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
						stopElecting()
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
