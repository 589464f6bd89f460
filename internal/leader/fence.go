package leader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

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
	// other is the last holder other than this instance that a Get read:
	// the leader before this one, whose audit rows a new leader fetches.
	other string
}

// FenceMargin is the time a write admitted just before the fence closes
// has to reach the API server: a tenth of the lease, at least 2 s.
func FenceMargin(leaseDuration time.Duration) time.Duration {
	return max(2*time.Second, leaseDuration/10)
}

func newFencedLock(lock resourcelock.Interface, leaseDuration time.Duration, now func() time.Time) *fencedLock {
	return &fencedLock{Interface: lock, now: now, valid: leaseDuration - FenceMargin(leaseDuration)}
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
		if h := r.HolderIdentity; h != "" && h != f.Identity() {
			f.other = h
		}
		f.mu.Unlock()
	}
	return r, raw, err
}

// lastOther is the last holder other than this instance a Get read; ""
// when none was.
func (f *fencedLock) lastOther() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.other
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
		return ErrNotLeader
	}
	if age := f.now().Sub(renewed); age >= f.valid {
		return fmt.Errorf("not writing: the lease was last renewed %s ago, "+
			"and a leader writes only within %s of a renewal, lest another instance hold the lease already",
			age.Round(time.Millisecond), f.valid)
	}
	return nil
}
