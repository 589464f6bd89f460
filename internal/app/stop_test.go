package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStopWhileStarting: SIGTERM or SIGINT (the context ending) while
// kubegcd still waits for its API server is a clean stop, exit 0, as
// systemd expects of a stop it asked for; not "context canceled", exit 1.
func TestStopWhileStarting(t *testing.T) {
	dir := t.TempDir()
	// A server nobody answers on: kubegcd retries it for --startup-timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := ln.Addr().String()
	ln.Close()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	content := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: c\n", "https://"+server)
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// stderr is read only once Main has returned, which done orders.
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "--kubeconfig", kubeconfig, "--db", filepath.Join(dir, "kubegcd.db"),
			"--listen", listen, "--startup-timeout", "5m", "--log-level", "error"}, io.Discard, &stderr)
	}()
	// kubegcd listens before it waits for the API server.
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", listen, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case code := <-done:
			t.Fatalf("kubegcd ended before it listened: exit %d: %s", code, &stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubegcd does not listen on %s: %v", listen, err)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 || strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("stopped while starting: exit %d, stderr %q; want exit 0 and no error", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("kubegcd did not stop within 30s of its context ending")
	}
}
