package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/testutil"
)

func TestSdStateString(t *testing.T) {
	tests := []struct {
		name string
		s    sdState
		want string
	}{
		{"before discovery", sdState{dryRun: true}, "discovering API resources; dry-run"},
		{"syncing", sdState{resources: 40, live: 12, election: true},
			"syncing the mirror: 12 of 40 resources live; enforcing; follower"},
		{"leader", sdState{resources: 40, live: 40, election: true, leading: true, holder: "me"},
			"mirror live: 40 resources; enforcing; leader"},
		{"follower", sdState{resources: 40, live: 40, election: true, holder: "host_1234"},
			"mirror live: 40 resources; enforcing; follower of host_1234"},
		{"paused", sdState{resources: 40, live: 40, pausedBy: []string{"audit-store", "blast-radius"}},
			"mirror live: 40 resources; enforcement paused (the audit history cannot be written; the blast-radius cap); no leader election"},
		{"a cause without words", sdState{resources: 1, live: 1, pausedBy: []string{"new-cause"}, election: true, leading: true},
			"mirror live: 1 resources; enforcement paused (new-cause); leader"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// sent records what the systemd notifier sends.
type sent struct {
	mu     sync.Mutex
	states []string
}

func (s *sent) send(state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, state)
	return nil
}

func (s *sent) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.states)
}

func count(states []string, s string) int {
	n := 0
	for _, st := range states {
		if st == s {
			n++
		}
	}
	return n
}

// The notifier says READY=1 with a STATUS first, a STATUS again only when
// the state changes, pings only while the check passes (and says why it
// stopped), and STOPPING=1 at the end.
func TestSystemdNotifier(t *testing.T) {
	var state atomic.Pointer[sdState]
	state.Store(&sdState{resources: 2, live: 1, dryRun: true})
	var wedged atomic.Pointer[error]
	var checksFailed atomic.Int64
	rec := &sent{}
	sd := &systemd{log: slog.New(slog.NewTextHandler(io.Discard, nil)), watchdog: 30 * time.Millisecond, send: rec.send,
		status: func() sdState { return *state.Load() },
		alive: func(context.Context) error {
			if err := wedged.Load(); err != nil {
				checksFailed.Add(1)
				return *err
			}
			return nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		sd.run(ctx)
		close(done)
	}()

	testutil.WaitFor(t, 10*time.Second, "three pings", func() bool { return count(rec.all(), "WATCHDOG=1") >= 3 })
	state.Store(&sdState{resources: 2, live: 2, dryRun: true})
	testutil.WaitFor(t, 10*time.Second, "the synced status", func() bool { return slices.Contains(rec.all(), "STATUS=mirror live: 2 resources; dry-run") })

	err := errors.New("ingest discovery made no progress for 3m0s (at most 2m0s expected)")
	wedged.Store(&err)
	const wedgedStatus = "STATUS=wedged, no watchdog pings: ingest discovery made no progress for 3m0s (at most 2m0s expected); " +
		"mirror live: 2 resources; dry-run"
	testutil.WaitFor(t, 10*time.Second, "the wedged status", func() bool { return slices.Contains(rec.all(), wedgedStatus) })
	// Three checks that fail after the status said so: no ping since.
	pings, failedChecks := count(rec.all(), "WATCHDOG=1"), checksFailed.Load()
	testutil.WaitFor(t, 10*time.Second, "three failed checks", func() bool { return checksFailed.Load() >= failedChecks+3 })
	if got := count(rec.all(), "WATCHDOG=1"); got != pings {
		t.Errorf("%d pings while wedged, want none", got-pings)
	}
	wedged.Store(nil)
	testutil.WaitFor(t, 10*time.Second, "pings again", func() bool { return count(rec.all(), "WATCHDOG=1") > pings })

	cancel()
	<-done
	got := rec.all()
	// Pings interleave; the rest is the story.
	got = slices.DeleteFunc(got, func(s string) bool { return s == "WATCHDOG=1" })
	want := []string{
		"READY=1\nSTATUS=syncing the mirror: 1 of 2 resources live; dry-run",
		"STATUS=mirror live: 2 resources; dry-run",
		wedgedStatus,
		"STATUS=mirror live: 2 resources; dry-run",
		"STOPPING=1\nSTATUS=stopping",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}

// Without WatchdogSec= there is nothing to ping and nothing to check.
func TestSystemdNotifierWithoutWatchdog(t *testing.T) {
	var state atomic.Pointer[sdState]
	state.Store(&sdState{election: true})
	var checks atomic.Int64
	rec := &sent{}
	sd := &systemd{log: slog.New(slog.NewTextHandler(io.Discard, nil)), send: rec.send,
		status: func() sdState { return *state.Load() },
		alive:  func(context.Context) error { checks.Add(1); return nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		sd.run(ctx)
		close(done)
	}()
	testutil.WaitFor(t, 10*time.Second, "READY=1", func() bool { return len(rec.all()) > 0 })
	state.Store(&sdState{resources: 3, live: 3, election: true, leading: true})
	testutil.WaitFor(t, 10*time.Second, "the live status", func() bool {
		return slices.Contains(rec.all(), "STATUS=mirror live: 3 resources; enforcing; leader")
	})
	cancel()
	<-done
	want := []string{
		"READY=1\nSTATUS=discovering API resources; enforcing; follower",
		"STATUS=mirror live: 3 resources; enforcing; leader",
		"STOPPING=1\nSTATUS=stopping",
	}
	if diff := cmp.Diff(want, rec.all()); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	if n := checks.Load(); n != 0 {
		t.Errorf("%d liveness checks without a watchdog, want none", n)
	}
}
