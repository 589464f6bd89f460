package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/app"
	"github.com/kubegcd/kubegcd/internal/db"
)

// syncBuffer collects a daemon's log output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// daemon is a kubegcd running in-process through app.Main.
type daemon struct {
	t      *testing.T
	url    string
	dbPath string
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan int
	store  *db.DB
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startDaemon runs `kubegcd run` against the test cluster with the database
// at dbPath (a new one when empty) and waits until it serves /healthz.
func startDaemon(t *testing.T, dbPath string, args ...string) *daemon {
	t.Helper()
	if dbPath == "" {
		dbPath = filepath.Join(t.TempDir(), "kubegcd.db")
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{t: t, url: "http://" + addr, dbPath: dbPath, logs: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	full := append([]string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", dbPath, "--listen", addr,
		"--log-level", "debug"}, args...)
	go func() { d.done <- app.Main(ctx, full, io.Discard, d.logs) }()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("kubegcd log:\n%s", tail(d.logs.String(), 60))
		}
	})
	eventually(t, 30*time.Second, func() error {
		select {
		case code := <-d.done:
			d.done <- code
			return stopError{fmt.Errorf("kubegcd exited with %d:\n%s", code, d.logs.String())}
		default:
		}
		code, _, err := d.get("/healthz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/healthz: %d %v", code, err)
		}
		return nil
	})
	return d
}

// stop ends the daemon and returns its exit code; later calls return the same.
func (d *daemon) stop() int {
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

func (d *daemon) get(path string) (int, []byte, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(d.url + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// getJSON fetches path, requires want as the status code and decodes into v.
func (d *daemon) getJSON(t *testing.T, path string, want int, v any) {
	t.Helper()
	code, body, err := d.get(path)
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

func (d *daemon) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		code, body, err := d.get("/readyz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s %v", code, body, err)
		}
		return nil
	})
}

// db opens the daemon's database read-only, beside the running daemon.
func (d *daemon) db(t *testing.T) *db.DB {
	t.Helper()
	if d.store == nil {
		s, err := db.Open(context.Background(), d.dbPath, db.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		d.store = s
	}
	return d.store
}

// stopError ends eventually at once.
type stopError struct{ error }

// eventually polls fn until it returns nil, failing the test at the deadline.
func eventually(t *testing.T, timeout time.Duration, fn func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := fn()
		if err == nil {
			return time.Since(start)
		}
		var se stopError
		if errors.As(err, &se) {
			t.Fatal(se.error)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s: %v", timeout, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// newNamespace creates a namespace with a default ServiceAccount (nothing
// else creates it here, and pods need it) and deletes it at the end.
func newNamespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

var widgetGVR = schema.GroupVersionResource{Group: "e2e.kubegcd.io", Version: "v1", Resource: "widgets"}

// installWidgetCRD creates a namespaced custom resource for the tests that
// need one from the start.
func installWidgetCRD(ctx context.Context) error {
	return createCRD(ctx, "e2e.kubegcd.io", "widgets", "Widget", "Namespaced")
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func createCRD(ctx context.Context, group, plural, kind, scope string) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group,
			"scope": scope,
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Wait until the API serves it.
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s.%s not served: %w", plural, group, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
