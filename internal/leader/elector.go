// Package leader is kubegcd's part in leader election. The Elector runs
// for a Lease through client-go's elector, runs the controllers while it
// holds the Lease, and fences every write to the lease's term. With
// coordinated election it stands as a LeaseCandidate, and kube-apiserver
// names the holder.
package leader

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
)

// ErrLostLease ends the daemon when another instance took the lease: every
// write stopped at once; systemd starts kubegcd again, as a follower.
var ErrLostLease = errors.New("lost the leader-election lease; " +
	"stopped every write and exiting so that a restart rejoins as a follower")

// ErrNotLeader is what a write attempted without the lease gets.
var ErrNotLeader = errors.New("not the leader: this kubegcd does not write to the cluster")

// Config is what --leader-elect* set.
type Config struct {
	// Enabled runs an election; without one, this instance writes freely.
	Enabled                                   bool
	Namespace, Name                           string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Coordinated: the API server's election controller names the
	// holder among the LeaseCandidates (--leader-elect-coordinated).
	Coordinated bool
	// Version is kubegcd's, which its LeaseCandidate carries.
	Version string
}

// Elector is this instance's part in leader election.
type Elector struct {
	cfg      Config
	identity string
	leading  atomic.Bool
	fence    atomic.Pointer[fencedLock] // set while electing

	mu     sync.Mutex
	holder string
	seen   time.Time // when this instance saw the holder take the lease

	// beforeRelease, when set, runs once work has returned and before the
	// lease is released.
	beforeRelease func()
}

// New sets up this instance's part under identity. Without an election
// (cfg.Enabled false) it may write at once, and always.
func New(cfg Config, identity string) *Elector {
	e := &Elector{cfg: cfg, identity: identity}
	if !cfg.Enabled {
		e.leading.Store(true)
	}
	return e
}

// Enabled says whether this instance runs for the Lease.
func (e *Elector) Enabled() bool { return e.cfg.Enabled }

// Coordinated says whether the API server names the holder.
func (e *Elector) Coordinated() bool { return e.cfg.Coordinated }

// Identity is this instance's name in the Lease.
func (e *Elector) Identity() string { return e.identity }

// Lease is the Lease's namespace/name.
func (e *Elector) Lease() (namespace, name string) { return e.cfg.Namespace, e.cfg.Name }

// Leading says whether this instance holds the Lease (always, without an
// election).
func (e *Elector) Leading() bool { return e.leading.Load() }

// Holder is the Lease's holder as last seen, and when this instance saw
// it take the Lease; "" before any was seen.
func (e *Elector) Holder() (identity string, seen time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.holder, e.seen
}

// PreviousHolder is the last holder of the Lease other than this
// instance that it read, even one whose term had run out; "" when it read
// none. A new leader fetches that instance's audit rows before its first
// write.
func (e *Elector) PreviousHolder() string {
	if f := e.fence.Load(); f != nil {
		if h := f.lastOther(); h != "" {
			return h
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holder != e.identity {
		return e.holder
	}
	return ""
}

// MayWrite is the applier's guard: only the leader writes, and only while
// its lease is surely still its own (see fencedLock).
func (e *Elector) MayWrite() error {
	if !e.leading.Load() {
		return ErrNotLeader
	}
	if f := e.fence.Load(); f != nil {
		return f.held()
	}
	return nil
}

// Run runs leader election until ctx ends, running work (the controllers)
// while this instance holds the lease. It returns nil when ctx ended (work
// has returned, then the lease is released), ErrLostLease when another
// instance took it (wrapped, when coordinated, with whom the API server
// prefers: see lostTo), and work's error when work failed (the lease is
// released too, for another instance to take). The API server's warnings
// go to restCfg's warning handler.
func (e *Elector) Run(ctx context.Context, restCfg *rest.Config, logger *slog.Logger,
	work func(context.Context) error) error {
	client, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restCfg), "kubegcd-leader-election"))
	if err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity},
	}
	elect := func(ctx context.Context) error {
		return e.elect(ctx, newFencedLock(lock, e.cfg.LeaseDuration, time.Now), logger, work)
	}
	if e.cfg.Coordinated {
		ver := candidateVersion(e.cfg.Version)
		return e.coordinate(ctx, client, ver, coordinationTimeout(e.cfg), logger, elect)
	}
	return elect(ctx)
}

// elect is Run with the lock given. The elector runs until work has
// returned, so that a graceful stop releases the lease only once the
// writes under way have ended: the next leader must not start while this
// one still writes.
func (e *Elector) elect(ctx context.Context, lock *fencedLock, logger *slog.Logger,
	work func(context.Context) error) error {
	e.fence.Store(lock)
	electing, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	t := &term{e: e, ctx: ctx, log: logger, work: work, stopElecting: stopElecting}
	stopAfterWork := context.AfterFunc(ctx, func() {
		t.stopWork()
		t.release()
	})
	defer stopAfterWork()
	elector, err := leaderelection.NewLeaderElector(e.electionConfig(lock, t))
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(electing) // returns when electing ends or the lease is lost
	e.leading.Store(false)
	t.stopWork()
	switch err := t.err(); {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return nil
	case e.cfg.Coordinated:
		return lostTo(ErrLostLease, e.identity, e.cfg.Namespace+"/"+e.cfg.Name, lock.lastRead())
	}
	return ErrLostLease
}

// electionConfig is client-go's elector's configuration, with t hearing
// its callbacks.
func (e *Elector) electionConfig(lock *fencedLock, t *term) leaderelection.LeaderElectionConfig {
	return leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            "kubegcd",
		// The API server names the holder; the elector renews only a
		// Lease that names it, and gives up one that names a preferred
		// holder (see coordinate).
		Coordinated: e.cfg.Coordinated,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: t.startedLeading,
			OnStoppedLeading: t.stoppedLeading,
			OnNewLeader:      t.newLeader,
		},
	}
}

// term is one run of client-go's elector (Elector.elect): work starts
// when this instance starts leading, and ends before the lease is
// released.
type term struct {
	e            *Elector
	ctx          context.Context // the daemon's: work ends with it
	log          *slog.Logger
	work         func(context.Context) error
	stopElecting context.CancelFunc

	mu       sync.Mutex
	stopping bool          // work may not start any more
	working  chan struct{} // closed when work returns; nil before it starts
	workErr  error
}

// startedLeading starts work, unless it was stopped already. Work ends
// when the daemon stops or the lease is lost (lctx), whichever comes
// first.
func (t *term) startedLeading(lctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopping {
		return
	}
	done := make(chan struct{})
	t.working = done
	t.e.leading.Store(true)
	t.log.Info("leading: this instance now writes to the cluster", "identity", t.e.identity)
	wctx, cancel := context.WithCancel(t.ctx)
	stop := context.AfterFunc(lctx, cancel)
	go func() {
		defer close(done)
		defer cancel()
		defer stop()
		if err := t.work(wctx); err != nil {
			t.mu.Lock()
			t.workErr = err
			t.mu.Unlock()
			t.release()
		}
	}()
}

// stoppedLeading stops every write at once.
func (t *term) stoppedLeading() {
	// First of all: no write from here on.
	t.e.leading.Store(false)
	t.log.Info("stopped leading", "identity", t.e.identity)
}

// newLeader notes the holder client-go's elector saw take the lease.
func (t *term) newLeader(identity string) {
	t.e.mu.Lock()
	t.e.holder, t.e.seen = identity, time.Now()
	t.e.mu.Unlock()
	if identity != t.e.identity {
		t.log.Info("following", "leader", identity)
	}
}

// stopWork stops work from starting and waits for it to return.
func (t *term) stopWork() {
	t.mu.Lock()
	t.stopping = true
	done := t.working
	t.mu.Unlock()
	if done != nil {
		<-done
	}
}

// release stops electing, which releases the lease: after the hook that
// must come first (see coordinate), if any.
func (t *term) release() {
	if t.e.beforeRelease != nil {
		t.e.beforeRelease()
	}
	t.stopElecting()
}

// err is work's error, once it has returned.
func (t *term) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.workErr
}
