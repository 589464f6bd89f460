package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// memoryLock is a Lease lock in memory that logs what is done to it, with
// the log lines of the test's own events among them.
type memoryLock struct {
	identity string
	before   func() // runs at the start of each write, if set
	fail     bool   // writes fail

	mu  sync.Mutex
	rec *resourcelock.LeaderElectionRecord
	log []string
}

func (m *memoryLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rec == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "kubegcd")
	}
	rec := *m.rec
	raw, err := json.Marshal(rec)
	return &rec, raw, err
}

func (m *memoryLock) write(r resourcelock.LeaderElectionRecord, what string) error {
	if m.before != nil {
		m.before()
	}
	if m.fail {
		return errors.New("the API server is unreachable")
	}
	if what == "update" {
		what = "renew"
		if r.HolderIdentity == "" {
			what = "release"
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rec = &r
	m.log = append(m.log, what)
	return nil
}

func (m *memoryLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	return m.write(r, "create")
}

func (m *memoryLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	return m.write(r, "update")
}

func (m *memoryLock) note(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, s)
}

func (m *memoryLock) RecordEvent(string) {}
func (m *memoryLock) Identity() string   { return m.identity }
func (m *memoryLock) Describe() string   { return "memory/kubegcd" }
func (m *memoryLock) String() string     { return fmt.Sprint(m.Log()) }
func (m *memoryLock) Log() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.log...)
}
func (m *memoryLock) Record() *resourcelock.LeaderElectionRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rec
}

// TestFence: a write is allowed only within the lease duration less the
// margin of the start of the last successful renewal.
func TestFence(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	lock := &memoryLock{identity: "me"}
	f := newFencedLock(lock, 15*time.Second, func() time.Time { return now }) // writes within 13 s
	steps := []struct {
		name    string
		do      func()
		wantErr error // nil: may write; ErrNotLeader; errFenced: any other error
	}{
		{name: "never renewed", do: func() {}, wantErr: ErrNotLeader},
		{name: "acquired", do: func() { _ = f.Create(context.Background(), mine) }},
		// A renewal that takes 5 s counts from its start.
		{name: "slow renewal", do: func() {
			lock.before = func() { now = now.Add(5 * time.Second) }
			_ = f.Update(context.Background(), mine)
			lock.before = nil
		}},
		{name: "just inside the fence", do: func() { now = t0.Add(13*time.Second - time.Millisecond) }},
		{name: "at the fence", do: func() { now = t0.Add(13 * time.Second) }, wantErr: errFenced},
		// A failed renewal does not move the fence.
		{name: "renewal failed", do: func() {
			lock.fail = true
			_ = f.Update(context.Background(), mine)
			lock.fail = false
		}, wantErr: errFenced},
		{name: "renewed again", do: func() { _ = f.Update(context.Background(), mine) }},
		{name: "released", do: func() { _ = f.Update(context.Background(), resourcelock.LeaderElectionRecord{}) }, wantErr: ErrNotLeader},
	}
	for _, s := range steps {
		s.do()
		err := f.held()
		switch {
		case s.wantErr == nil && err != nil, s.wantErr == ErrNotLeader && !errors.Is(err, ErrNotLeader),
			s.wantErr == errFenced && (err == nil || errors.Is(err, ErrNotLeader)):
			t.Errorf("%s (%s after t0): held() = %v, want %v", s.name, now.Sub(t0), err, s.wantErr)
		}
	}
}

// errFenced stands, in TestFence, for the fence's error.
var errFenced = errors.New("fenced")

// discard is a logger that logs nothing.
var discard = slog.New(slog.DiscardHandler)

// TestGracefulStopReleasesAfterWork: when the daemon stops, the writes
// under way end (and may still write) before the lease is released, so
// that the next leader never writes beside them.
func TestGracefulStopReleasesAfterWork(t *testing.T) {
	lock := &memoryLock{identity: "me"}
	e := New(Config{Enabled: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
		RetryPeriod: 100 * time.Millisecond}, "me")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	started := make(chan struct{})
	var drainErr error
	work := func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		// A write under way when the stop came, taking its time.
		time.Sleep(300 * time.Millisecond)
		drainErr = e.MayWrite()
		lock.note("write returned")
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- e.elect(ctx, newFencedLock(lock, e.cfg.LeaseDuration, time.Now), discard, work)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatalf("never led: %s", lock)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("elect returned %v after a graceful stop, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("elect did not return after the stop: %s", lock)
	}
	var got []string
	for _, s := range lock.Log() {
		if s != "renew" {
			got = append(got, s)
		}
	}
	if diff := cmp.Diff([]string{"create", "write returned", "release"}, got); diff != "" {
		t.Errorf("lease and work events, renewals left out (-want +got):\n%s", diff)
	}
	if drainErr != nil {
		t.Errorf("a write under way at the stop was refused: %v", drainErr)
	}
	if rec := lock.Record(); rec == nil || rec.HolderIdentity != "" {
		t.Errorf("lease record %+v at the end, want released", rec)
	}
	if err := e.MayWrite(); !errors.Is(err, ErrNotLeader) {
		t.Errorf("MayWrite after the stop: %v, want ErrNotLeader", err)
	}
}
