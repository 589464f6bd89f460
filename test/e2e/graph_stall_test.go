package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestGraphStreamStalledReaders reproduces four slow readers of the whole
// graph: 100 ConfigMaps owned by 100 others each (40,000 owner references,
// about 6 MB of JSON), and four clients with a 4 KB receive buffer that ask
// for all of it and read nothing. /status and /pending keep answering
// within a second, the streams past the first two are refused with a
// Retry-After, and the stalled ones are cut after
// --graph-stream-stall-timeout, their connections closed before the graph
// is whole. Dry-run: it may run beside other tests.
func TestGraphStreamStalledReaders(t *testing.T) {
	const (
		owners, dependents = 100, 400
		stall              = 3 * time.Second
	)
	ctx := context.Background()
	ns := namespaces.New(t, "graph-stall")
	cms := kube.CoreV1().ConfigMaps(ns)
	// No namespace controller runs here: the 40,000 references would stay
	// for every later test's kubegcd to mirror, under the race detector.
	t.Cleanup(func() {
		if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("deleting the test's ConfigMaps: %v", err)
			return
		}
		eventually(t, time.Minute, func() error {
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if n := len(list.Items); n > 0 {
				return fmt.Errorf("%d ConfigMaps of the test left", n)
			}
			return nil
		})
	})
	var refs []metav1.OwnerReference
	for i := range owners {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID})
	}
	var wg sync.WaitGroup
	errs := make(chan error, dependents)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < dependents; i += 16 {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dependent-%d", i),
					OwnerReferences: refs}}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The built binary: without the race detector the daemon mirrors the
	// 40,000 references in seconds.
	dir := t.TempDir()
	addr := freeAddr(t)
	k, err := testcluster.StartKubegcd(kubegcdBin, filepath.Join(dir, "kubegcd.log"), "run", "--kubeconfig", cluster.Kubeconfig,
		"--db", filepath.Join(dir, "kubegcd.db"), "--listen", addr, "--controllers=ownergc",
		"--graph-stream-stall-timeout="+stall.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.Stop(15 * time.Second)
		if t.Failed() {
			logs, _ := os.ReadFile(k.LogPath)
			t.Logf("kubegcd log:\n%s", tail(string(logs), 40))
		}
	})
	if err := k.WaitReady(ctx, "http://"+addr+"/readyz", 50*time.Millisecond, time.Minute); err != nil {
		t.Fatal(err)
	}
	client := e2eutil.ValidatingClient(t, &http.Client{Timeout: 10 * time.Second})
	eventually(t, 30*time.Second, func() error {
		var g struct{ Edges []struct{} }
		resp, err := client.Get("http://" + addr + "/graph?namespace=" + ns + "&limit=1000")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
			return err
		}
		if len(g.Edges) != owners*dependents {
			return fmt.Errorf("%d owner references mirrored, want %d", len(g.Edges), owners*dependents)
		}
		return nil
	})

	type stream struct {
		conn net.Conn
		body io.Reader
	}
	var stalled []stream
	refused := 0
	for range 4 {
		conn, resp := stalledGraphRequest(t, addr)
		switch resp.StatusCode {
		case http.StatusOK:
			stalled = append(stalled, stream{conn, resp.Body})
		case http.StatusTooManyRequests:
			refused++
			if resp.Header.Get("Retry-After") == "" {
				t.Errorf("stream refused without Retry-After")
			}
			conn.Close()
		default:
			t.Fatalf("GET /graph: %s", resp.Status)
		}
	}
	if len(stalled) != 2 || refused != 2 {
		t.Errorf("%d streams served, %d refused; want 2 and 2", len(stalled), refused)
	}

	for round := range 3 {
		for _, path := range []string{"/status", "/pending"} {
			start := time.Now()
			resp, err := client.Get("http://" + addr + path)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("round %d: GET %s beside the stalled streams: %v after %s", round, path, err, took.Round(time.Millisecond))
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || took > time.Second {
				t.Fatalf("round %d: GET %s beside the stalled streams: %s after %s, want 200 within 1s", round, path, resp.Status,
					took.Round(time.Millisecond))
			}
		}
	}

	took := eventually(t, stall+15*time.Second, func() error {
		logs, err := os.ReadFile(k.LogPath)
		if err != nil {
			return err
		}
		if n := strings.Count(string(logs), "graph stream cut: the client took no data"); n < len(stalled) {
			return fmt.Errorf("%d streams cut of %d stalled", n, len(stalled))
		}
		return nil
	})
	t.Logf("the stalled streams were cut %s after /status and /pending were checked", took.Round(time.Millisecond))
	for i, s := range stalled {
		_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		body, err := io.ReadAll(s.body)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("stream %d: still open 10s after it was cut (%d bytes read)", i, len(body))
		}
		if err == nil && strings.HasSuffix(string(body), "]}\n") {
			t.Errorf("stream %d: the whole graph (%d bytes) came to a client that read nothing", i, len(body))
		}
	}
}

// stalledGraphRequest asks for the whole graph on a connection with a 4 KB
// receive buffer and reads the answer's head only.
func stalledGraphRequest(t *testing.T, addr string) (net.Conn, *http.Response) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/graph?limit=100000000", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), req)
	if err != nil {
		t.Fatalf("GET /graph: %v", err)
	}
	return conn, resp
}
