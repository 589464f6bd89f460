// Package testutil holds what the tests of every package share: waiting on
// a condition with a deadline. It imports nothing of kubegcd, so that any
// package's tests may use it.
package testutil

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// interval is how long Eventually waits between two calls of its condition.
const interval = 25 * time.Millisecond

// StopError ends Eventually at once, failing the test with Err.
type StopError struct{ Err error }

func (e StopError) Error() string { return e.Err.Error() }
func (e StopError) Unwrap() error { return e.Err }

// Eventually polls fn until it returns nil, failing the test at the
// deadline, and returns how long it took. An error wrapping a StopError
// fails the test at once.
func Eventually(t testing.TB, timeout time.Duration, fn func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := fn()
		if err == nil {
			return time.Since(start)
		}
		var se StopError
		if errors.As(err, &se) {
			t.Fatal(se.Err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// WaitFor is Eventually for a condition with nothing to say but whether it
// holds: what names it in the failure.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Eventually(t, timeout, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("%s", what)
	})
}
