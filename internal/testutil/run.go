package testutil

import (
	"context"
	"testing"
	"time"
)

// Start runs run in a goroutine with a context of its own, as a daemon
// runs a controller. The stop it returns ends that context and fails t
// unless run then returns nil within 10 seconds.
func Start(t testing.TB, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v once its context ended, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("run did not return within 10s once its context ended")
		}
	}
}
