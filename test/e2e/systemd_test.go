package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// notifySocket is a systemd notify socket: it keeps every datagram sent to
// it, as systemd reads them.
type notifySocket struct {
	path string
	mu   sync.Mutex
	msgs []string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	s := &notifySocket{path: filepath.Join(t.TempDir(), "notify")}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, string(buf[:n]))
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *notifySocket) messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// TestSystemdNotify runs the built kubegcd as systemd runs a Type=notify
// service with WatchdogSec=: it must say READY=1 once it serves, say what it
// does in STATUS= (syncing, then the mirror live, enforcing, leading), ping
// the watchdog while alive, and say STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	sock := listenNotify(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "kubegcd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(kubegcdBin, "run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, "kubegcd.db"),
		"--listen", addr, "--controllers=svgc", "--dry-run=false", "--leader-elect-name=kubegcd-systemd")
	// 0.6 s: a ping every 200 ms.
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock.path, "WATCHDOG_USEC=600000")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			logs, _ := os.ReadFile(logPath)
			t.Logf("kubegcd's log:\n%s", tail(string(logs), 30))
			t.Logf("notify messages: %q", sock.messages())
		}
	})

	eventually(t, 60*time.Second, func() error {
		if len(sock.messages()) == 0 {
			return errors.New("nothing sent")
		}
		return nil
	})
	// Ready once it serves, long before the mirror is synced.
	if first := sock.messages()[0]; !strings.HasPrefix(first, "READY=1\nSTATUS=discovering API resources; enforcing; ") &&
		!strings.HasPrefix(first, "READY=1\nSTATUS=syncing the mirror: ") {
		t.Fatalf("first message %q, want READY=1 with a STATUS from before the mirror is live", first)
	}
	if _, err := testcluster.HTTPGet(context.Background(), "http://"+addr+"/healthz"); err != nil {
		t.Fatalf("ready, but: %v", err)
	}
	live := regexp.MustCompile(`^STATUS=mirror live: [0-9]+ resources; enforcing; leader$`)
	eventually(t, 60*time.Second, func() error {
		if slices.ContainsFunc(sock.messages(), live.MatchString) {
			return nil
		}
		return errors.New("no status of a live mirror, enforcing, leading yet")
	})
	eventually(t, 10*time.Second, func() error {
		if n := count(sock.messages(), "WATCHDOG=1"); n < 3 {
			return fmt.Errorf("%d watchdog pings", n)
		}
		return nil
	})

	terminate(t, cmd, exited)
	msgs := sock.messages()
	i := slices.Index(msgs, "STOPPING=1\nSTATUS=stopping")
	if i < 0 {
		t.Fatalf("no STOPPING=1 among %q", msgs)
	}
	if n := count(msgs[i:], "WATCHDOG=1"); n > 0 {
		t.Errorf("%d watchdog pings after STOPPING=1", n)
	}
}

func count(msgs []string, msg string) int {
	n := 0
	for _, m := range msgs {
		if m == msg {
			n++
		}
	}
	return n
}
