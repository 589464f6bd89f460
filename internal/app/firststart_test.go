package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// TestFailedFirstStartLeavesNothing: a run that created its database and
// ends before it serves removes the file, its lock file and the
// directories it created, whatever ended it. A database that was there
// before the run is kept, with its data and its lock file.
func TestFailedFirstStartLeavesNothing(t *testing.T) {
	// An API server that answers kubegcd's start-up requests, so that the
	// run gets past its wait and fails later, on a bad file named by a flag.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	defer api.Close()
	// Its requests' first ends the run's context: a stop signal while
	// kubegcd waits for its API server.
	stopCtx, stop := context.WithCancel(context.Background())
	defer stop()
	stopping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		stop()
		http.Error(w, "stopping", http.StatusServiceUnavailable)
	}))
	defer stopping.Close()
	unreachable := closedAddr(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	tests := []struct {
		name     string
		server   string
		args     []string
		ctx      context.Context
		dbPath   string // under the test's directory
		existing bool   // a database with data is there before the run
		wantCode int
		wantErr  string
	}{
		{name: "API server unreachable", server: "https://" + unreachable, dbPath: "k.db",
			args: []string{"--startup-timeout", "200ms"}, wantCode: 1, wantErr: "cannot reach the API server"},
		{name: "port in use", server: "https://" + unreachable, dbPath: "k.db",
			args: []string{"--listen", busy.Addr().String()}, wantCode: 1, wantErr: "--listen " + busy.Addr().String()},
		{name: "bad file named by a flag", server: api.URL, dbPath: "k.db",
			args: []string{"--auth-token-file", "/nonexistent/tokens"}, wantCode: 1, wantErr: "--auth-token-file"},
		{name: "stopped while starting", server: stopping.URL, dbPath: "k.db", ctx: stopCtx,
			args: []string{"--startup-timeout", "5m"}, wantCode: 0},
		{name: "missing directories", server: "https://" + unreachable, dbPath: "a/b/k.db",
			args: []string{"--startup-timeout", "200ms"}, wantCode: 1, wantErr: "cannot reach the API server"},
		{name: "existing database", server: "https://" + unreachable, dbPath: "k.db", existing: true,
			args: []string{"--startup-timeout", "200ms"}, wantCode: 1, wantErr: "cannot reach the API server"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kubeconfig := writeKubeconfig(t, filepath.Join(t.TempDir(), "kubeconfig"), tc.server)
			path := filepath.Join(dir, tc.dbPath)
			var before []string
			if tc.existing {
				existingDB(t, path)
				before = testutil.FilesIn(t, dir)
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			args := append([]string{"run", "--kubeconfig", kubeconfig, "--db", path, "--listen", closedAddr(t)},
				tc.args...)
			var stderr bytes.Buffer
			code := Main(ctx, args, io.Discard, &stderr)
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d saying %q", code, stderr.String(), tc.wantCode, tc.wantErr)
			}
			got := testutil.FilesIn(t, dir)
			if !slices.Equal(got, before) {
				t.Errorf("after the failed start, %s holds %q; want %q", dir, got, before)
			}
			if tc.existing {
				checkExistingDB(t, path)
			}
		})
	}
}

// TestFirstStartCreatesTheDirectory: a run whose database's directories
// are missing creates them, readable by their owner only, and keeps them
// once it serves.
func TestFirstStartCreatesTheDirectory(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	defer api.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "k.db")
	listen := closedAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "--kubeconfig", writeKubeconfig(t, filepath.Join(t.TempDir(), "kubeconfig"), api.URL),
			"--db", path, "--listen", listen, "--log-level", "error"},
			io.Discard, &stderr)
	}()
	waitServing(t, listen, done, &stderr)
	// It serves: the daemon started, and stopping it keeps what it made.
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, &stderr)
	}
	for _, d := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "a", "b")} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", d, st.Mode().Perm())
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database of a run that served is gone: %v", err)
	}
}

// waitServing waits until kubegcd serves /healthz at addr, failing the
// test if done says Main ended first.
func waitServing(t *testing.T, addr string, done <-chan int, stderr *bytes.Buffer) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubegcd does not serve /healthz on %s: %v", addr, err)
		}
		select {
		case code := <-done:
			t.Fatalf("kubegcd ended before it served: exit %d: %s", code, stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// writeKubeconfig writes a kubeconfig naming server, with a token.
func writeKubeconfig(t *testing.T, path, server string) string {
	t.Helper()
	content := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: c\n", server)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// existingDB makes a database at path that holds an object's row.
func existingDB(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rid, err := d.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	obj := &db.Object{UID: "uid-kept", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "kept", ResourceVersion: "1"}
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, []*db.Object{obj}); err != nil {
		t.Fatal(err)
	}
}

// checkExistingDB checks that the database existingDB made still holds
// its row.
func checkExistingDB(t *testing.T, path string) {
	t.Helper()
	d, err := db.Open(context.Background(), path, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("the database there before the run: %v", err)
	}
	defer d.Close()
	if o, err := d.Objects().GetObject(context.Background(), "uid-kept"); err != nil || o == nil {
		t.Errorf("the database there before the run lost its row: %v, %v", o, err)
	}
}
