// Package e2eutil holds what the end-to-end test packages share: a kubegcd
// run in-process against a test control plane, and waiting on conditions
// with deadlines.
package e2eutil

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/app"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// SyncBuffer collects a daemon's log output.
type SyncBuffer = testutil.SyncBuffer

// Daemon is a kubegcd running in-process through app.Main.
type Daemon struct {
	t      *testing.T
	URL    string
	DBPath string
	// Client makes Get's requests.
	Client *http.Client
	Logs   *SyncBuffer
	cancel context.CancelFunc
	done   chan int
	store  *db.DB

	// base carries the requests of Client and of the proxy, unchecked.
	base  *http.Client
	proxy struct {
		once sync.Once
		url  string
	}
}

// ClientURL is the URL a client under test (the CLI, a browser) is given
// instead of URL: a proxy to the daemon that validates every answer it
// passes on against the API's OpenAPI document (see ValidatingProxy).
// Tests of the connection itself (TLS, stalled readers, hostile clients)
// use URL.
func (d *Daemon) ClientURL() string {
	d.proxy.once.Do(func() { d.proxy.url = ValidatingProxy(d.t, d.URL, d.base) })
	return d.proxy.url
}

// FreeAddr returns a local address nothing listens on.
func FreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// DaemonOptions say how Start runs kubegcd: what the daemons of a suite,
// or of one test, have in common.
type DaemonOptions struct {
	// Kubeconfig is the file kubegcd reaches the cluster through.
	Kubeconfig string
	// Client, when set, makes the Daemon's requests, over HTTPS: the
	// arguments then give the daemon a certificate Client trusts.
	Client *http.Client
	// ReadyTimeout, when set, makes Start also wait that long for /readyz
	// to answer 200.
	ReadyTimeout time.Duration
	// Check, when set, vets the arguments of each daemon before it starts.
	Check func(t *testing.T, args []string)
}

// WithKubeconfig returns o reaching the cluster through the file at path.
func (o DaemonOptions) WithKubeconfig(path string) DaemonOptions {
	o.Kubeconfig = path
	return o
}

// Start runs `kubegcd run` as o says, with the database at dbPath (a new
// one when empty) and args after its own flags, and waits until it serves
// /healthz. It is stopped when the test ends.
func (o DaemonOptions) Start(t *testing.T, dbPath string, args ...string) *Daemon {
	t.Helper()
	if o.Check != nil {
		o.Check(t, args)
	}
	if dbPath == "" {
		dbPath = filepath.Join(t.TempDir(), "kubegcd.db")
	}
	addr := FreeAddr(t)
	// A --listen of the caller's wins; its every-address host is reached
	// on loopback.
	for i, a := range args {
		if a == "--listen" && i+1 < len(args) {
			host, port, err := net.SplitHostPort(args[i+1])
			if err != nil {
				t.Fatalf("--listen %s: %v", args[i+1], err)
			}
			if host == "" || host == "0.0.0.0" || host == "::" {
				host = "127.0.0.1"
			}
			addr = net.JoinHostPort(host, port)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{t: t, URL: "http://" + addr, DBPath: dbPath, Logs: &SyncBuffer{}, cancel: cancel, done: make(chan int, 1),
		Client: &http.Client{Timeout: 10 * time.Second}}
	if o.Client != nil {
		d.URL, d.Client = "https://"+addr, o.Client
	}
	// Every answer the suites read through the daemon's client is checked
	// against the API's OpenAPI document.
	d.base = d.Client
	d.Client = ValidatingClient(t, d.Client)
	full := append([]string{"run", "--kubeconfig", o.Kubeconfig, "--db", dbPath, "--listen", addr,
		"--log-level", "debug"}, args...)
	go func() { d.done <- app.Main(ctx, full, io.Discard, d.Logs) }()
	t.Cleanup(func() {
		d.Stop()
		if t.Failed() {
			t.Logf("kubegcd log:\n%s", Tail(d.Logs.String(), 60))
		}
	})
	Eventually(t, 30*time.Second, func() error {
		select {
		case code := <-d.done:
			d.done <- code
			return StopError{Err: fmt.Errorf("kubegcd exited with %d:\n%s", code, d.Logs.String())}
		default:
		}
		code, _, err := d.Get("/healthz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/healthz: %d %w", code, err)
		}
		return nil
	})
	if o.ReadyTimeout > 0 {
		d.WaitReady(t, o.ReadyTimeout)
	}
	return d
}

// Stop ends the daemon and returns its exit code; later calls return the same.
func (d *Daemon) Stop() int {
	d.cancel()
	if d.store != nil {
		d.store.Close()
		d.store = nil
	}
	select {
	case code := <-d.done:
		d.done <- code
		return code
	case <-time.After(30 * time.Second):
		d.t.Errorf("kubegcd did not stop within 30s")
		return -1
	}
}

// Exited reports whether the daemon has exited, and its exit code.
func (d *Daemon) Exited() (int, bool) {
	select {
	case code := <-d.done:
		d.done <- code
		return code, true
	default:
		return 0, false
	}
}

// Get fetches path from the daemon's HTTP server.
func (d *Daemon) Get(path string) (int, []byte, error) {
	resp, err := d.Client.Get(d.URL + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// GetJSON fetches path, requires want as the status code and decodes into v.
func (d *Daemon) GetJSON(t *testing.T, path string, want int, v any) {
	t.Helper()
	code, body, err := d.Get(path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if code != want {
		t.Fatalf("GET %s: status %d, want %d: %s", path, code, want, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: decoding %s: %v", path, body, err)
		}
	}
}

// WaitReady waits until /readyz answers 200.
func (d *Daemon) WaitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, func() error {
		code, body, err := d.Get("/readyz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s %w", code, body, err)
		}
		return nil
	})
}

// WaitUnready waits until /readyz answers 503 with a reason that contains
// want.
func (d *Daemon) WaitUnready(t *testing.T, timeout time.Duration, want string) {
	t.Helper()
	Eventually(t, timeout, func() error {
		code, body, err := d.Get("/readyz")
		if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(string(body), want) {
			return fmt.Errorf("/readyz: %d %s %v, want 503 saying %q", code, body, err, want)
		}
		return nil
	})
}

// DB opens the daemon's database read-only, beside the running daemon.
func (d *Daemon) DB(t *testing.T) *db.DB {
	t.Helper()
	if d.store == nil {
		s, err := db.Open(context.Background(), d.DBPath, db.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		d.store = s
	}
	return d.store
}

// StopError ends Eventually at once; see testutil.StopError.
type StopError = testutil.StopError

// Eventually polls fn until it returns nil, failing the test at the
// deadline, and returns how long it took; see testutil.Eventually.
func Eventually(t *testing.T, timeout time.Duration, fn func() error) time.Duration {
	t.Helper()
	return testutil.Eventually(t, timeout, fn)
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
