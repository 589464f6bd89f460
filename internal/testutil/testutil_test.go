package testutil

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatal ends only the goroutine that called
// it, keeping the message.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatal(args ...any) { r.fail(fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	r.failed = msg
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own, as the testing
// package runs a test, and returns what it failed with ("" when it passed).
func run(t *testing.T, f func(testing.TB)) string {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end within 10s")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func TestEventually(t *testing.T) {
	errNo := errors.New("no")
	tests := []struct {
		name string
		// results are what the condition returns call after call; the
		// last one repeats.
		results []error
		// wantCalls bounds the calls: exactly that many, or at least
		// that many when wantFail says the deadline passed.
		wantCalls int
		wantFail  string
	}{
		{"holds at once", []error{nil}, 1, ""},
		{"holds at the third call", []error{errNo, errNo, nil}, 3, ""},
		{"never holds", []error{errNo}, 2, "not true within 100ms: no"},
		{"stops at once", []error{errNo, StopError{errors.New("hopeless")}}, 2, "hopeless"},
		{"stops through a wrapped error", []error{fmt.Errorf("reading: %w", StopError{errors.New("gone")})}, 1, "gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var took time.Duration
			failed := run(t, func(tb testing.TB) {
				took = Eventually(tb, 100*time.Millisecond, func() error {
					calls++
					return tt.results[min(calls, len(tt.results))-1]
				})
			})
			if failed != tt.wantFail {
				t.Errorf("failed with %q, want %q", failed, tt.wantFail)
			}
			if strings.HasPrefix(tt.wantFail, "not true") {
				if calls < tt.wantCalls {
					t.Errorf("%d calls before the deadline, want at least %d", calls, tt.wantCalls)
				}
				return
			}
			if calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			if tt.wantFail == "" && (took < time.Duration(calls-1)*interval || took > 10*time.Second) {
				t.Errorf("took %s for %d calls, want at least %s", took, calls, time.Duration(calls-1)*interval)
			}
		})
	}
}

func TestWaitFor(t *testing.T) {
	tests := []struct {
		name     string
		holdsAt  int // the call from which the condition holds; 0: never
		wantFail string
	}{
		{"holds at once", 1, ""},
		{"holds later", 3, ""},
		{"never holds", 0, "not true within 100ms: the answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			failed := run(t, func(tb testing.TB) {
				WaitFor(tb, 100*time.Millisecond, "the answer", func() bool {
					calls++
					return tt.holdsAt > 0 && calls >= tt.holdsAt
				})
			})
			if failed != tt.wantFail {
				t.Errorf("failed with %q, want %q", failed, tt.wantFail)
			}
			if tt.holdsAt > 0 && calls != tt.holdsAt {
				t.Errorf("%d calls, want %d", calls, tt.holdsAt)
			}
		})
	}
}

func TestStopErrorWraps(t *testing.T) {
	errGone := errors.New("gone")
	err := error(StopError{errGone})
	if err.Error() != "gone" || !errors.Is(err, errGone) {
		t.Errorf("StopError{gone}: %q, Is(gone) %v; want its error's text and Is", err, errors.Is(err, errGone))
	}
}

func TestWrittenBytesCountsWrites(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "w")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := WrittenBytes(t)
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if got := WrittenBytes(t) - before; got < 1<<20 {
		t.Fatalf("WrittenBytes grew by %d over a write of 1 MiB", got)
	}
}
