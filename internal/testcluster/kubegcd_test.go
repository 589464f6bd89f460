package testcluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// These tests run small system binaries in place of kubegcd, so they need
// neither `make build` nor a control plane.

// startSh runs script under /bin/sh as a Kubegcd, logging to a temp file.
func startSh(t *testing.T, script string) *Kubegcd {
	t.Helper()
	k, err := StartKubegcd("/bin/sh", filepath.Join(t.TempDir(), "kubegcd.log"), "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if k.Err() == nil {
			_ = k.Kill()
		}
	})
	return k
}

// Scripts that set a TERM trap, log trapSet (a line their own text, which
// heads the log, does not contain) and loop in short sleeps, so that the trap
// runs promptly and no long-lived grandchild outlives them.
const (
	trapSet       = "trap set"
	logTrapSet    = `; printf 'trap %s\n' set; while :; do sleep 0.05; done`
	termExitsZero = `trap 'exit 0' TERM` + logTrapSet
	termExits3    = `trap 'exit 3' TERM` + logTrapSet
	termIgnored   = `trap '' TERM` + logTrapSet
)

func TestKubegcdExitBeforeReady(t *testing.T) {
	k, err := StartKubegcd("/bin/false", filepath.Join(t.TempDir(), "kubegcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens here, so only the exit can end the wait early.
	err = k.WaitReady(context.Background(), "http://127.0.0.1:1/readyz", 10*time.Millisecond, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready (exit status 1)") {
		t.Fatalf("WaitReady = %v, want the exit status", err)
	}
	<-k.Done()
	var exitErr *exec.ExitError
	if !errors.As(k.Err(), &exitErr) || exitErr.ExitCode() != 1 {
		t.Errorf("Err = %v, want exit status 1", k.Err())
	}
	if err := k.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "had exited") {
		t.Errorf("Stop after exit = %v, want a 'had exited' error", err)
	}
	if err := k.Kill(); err == nil {
		t.Error("Kill after exit succeeded")
	}
}

func TestKubegcdWaitReady(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	k := startSh(t, termExitsZero)
	if k.Pid() <= 0 {
		t.Errorf("Pid = %d", k.Pid())
	}
	if err := k.WaitReady(context.Background(), srv.URL, 10*time.Millisecond, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("WaitReady returned after %d requests, want 3 (two 503s, then 200)", n)
	}
	if k.Err() != nil {
		t.Errorf("Err while running = %v", k.Err())
	}

	// Never ready: the timeout ends the wait.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	err := k.WaitReady(context.Background(), down.URL, 10*time.Millisecond, 200*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), k.LogPath) {
		t.Errorf("WaitReady on a 503 URL = %v, want a deadline error naming the log", err)
	}
}

func TestKubegcdStop(t *testing.T) {
	k := startSh(t, termExitsZero)
	waitForLog(t, k, trapSet)
	if err := k.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	select {
	case <-k.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if k.Err() != nil {
		t.Errorf("Err = %v, want nil", k.Err())
	}
}

func TestKubegcdStopFailingExit(t *testing.T) {
	k := startSh(t, termExits3)
	waitForLog(t, k, trapSet)
	if err := k.Stop(10 * time.Second); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Stop = %v, want exit status 3", err)
	}
}

func TestKubegcdStopEscalates(t *testing.T) {
	k := startSh(t, termIgnored)
	waitForLog(t, k, trapSet)
	err := k.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop = %v, want a 'killed' error", err)
	}
	assertKilled(t, k)
}

func TestKubegcdKill(t *testing.T) {
	k := startSh(t, termIgnored)
	if err := k.Kill(); err != nil {
		t.Fatalf("Kill = %v", err)
	}
	assertKilled(t, k)
}

func assertKilled(t *testing.T, k *Kubegcd) {
	t.Helper()
	var exitErr *exec.ExitError
	if !errors.As(k.Err(), &exitErr) {
		t.Fatalf("Err = %v, want an exit error", k.Err())
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("Err = %v, want death by SIGKILL", k.Err())
	}
}

// waitForLog polls k's log until it contains s.
func waitForLog(t *testing.T, k *Kubegcd, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(k.LogPath)
		if strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not in %s after 10s:\n%s", s, k.LogPath, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKubegcdBinMissing(t *testing.T) {
	dir := t.TempDir()
	for _, name := range binaries {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBEGCD_BIN_DIR", dir)
	if _, err := KubegcdBin(); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("KubegcdBin without kubegcd = %v, want a hint to run `make build`", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubegcd"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := KubegcdBin(); err != nil || p != filepath.Join(dir, "kubegcd") {
		t.Fatalf("KubegcdBin = %q, %v", p, err)
	}
}
