package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// heldAnswersRSSBound is what the daemon's resident memory may grow by,
// at its peak, while 2 × --max-requests-inflight clients ask for the
// large answers of TestHeldLargeAnswersBounded and read nothing. Measured
// here: 184 to 208 MB over four runs, the cost of the two answers read at
// a time; the held clients cost a spool file each. Before the spool, the
// shared slots and the wide-read bound it grew by 1,343 MB.
const heldAnswersRSSBound = 320 << 20

// TestHeldLargeAnswersBounded reproduces a review's attack on the API's
// memory: 80 ConfigMaps with 100 long ownerReferences each make a
// namespace's graph about 12 MB of JSON and its lint findings about 22 MB.
// Twice --max-requests-inflight clients ask for them, half on each route,
// and read nothing. The in-flight slots are the server's, not each
// route's: the requests beyond them get a 429 at once, and /status too
// while they are held. Each answer is encoded into a spool file and sent
// from it, so the daemon's resident memory grows by less than
// heldAnswersRSSBound, and each held answer is cut after the stall
// timeout. Dry-run: it may run beside other tests.
func TestHeldLargeAnswersBounded(t *testing.T) {
	const (
		objects, refsEach = 80, 100
		nameLen           = 1200
		inflight          = 16
		stall             = 40 * time.Second
	)
	ctx := context.Background()
	ns := namespaces.New(t, "held-answers")
	createLongOwnerRefs(t, ctx, ns, objects, refsEach, nameLen)

	dir := t.TempDir()
	addr := freeAddr(t)
	k, err := testcluster.StartKubegcd(kubegcdBin, filepath.Join(dir, "kubegcd.log"), "run", "--kubeconfig", cluster.Kubeconfig,
		"--db", filepath.Join(dir, "kubegcd.db"), "--listen", addr, "--controllers=podgc",
		"--max-requests-inflight="+strconv.Itoa(inflight), "--graph-stream-stall-timeout="+stall.String())
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
	paths := []string{
		"/graph?namespace=" + ns + "&limit=100000",
		"/lint?namespace=" + ns + "&limit=100000",
	}
	// Each answer whole, once, read by a client that reads: the mirror
	// holds every reference, and the daemon has served each answer before
	// its memory is measured.
	client := &http.Client{Timeout: 30 * time.Second}
	sizes := make([]int, len(paths))
	eventually(t, time.Minute, func() error {
		for i, path := range paths {
			var v struct {
				Items []json.RawMessage `json:"items"`
				Edges []json.RawMessage `json:"edges"`
			}
			n, err := getCounting(client, "http://"+addr+path, &v)
			if err != nil {
				return err
			}
			if got := len(v.Items) + len(v.Edges); got != objects*refsEach {
				return fmt.Errorf("GET %s: %d references, want %d", path, got, objects*refsEach)
			}
			sizes[i] = n
		}
		return nil
	})
	before := procStatus(t, k.Pid())
	t.Logf("answers of %.1f MB (%s) and %.1f MB (%s); before the held clients: VmRSS %.0f MB, VmHWM %.0f MB",
		mb(sizes[0]), paths[0], mb(sizes[1]), paths[1], mb(before["VmRSS"]), mb(before["VmHWM"]))

	// All at once, as a hostile client would: each answer is read from the
	// database and encoded while the others are.
	type result struct {
		path string
		conn net.Conn
		resp *http.Response
		err  error
	}
	results := make(chan result, 2*inflight)
	for i := range 2 * inflight {
		go func() {
			path := paths[i%2]
			conn, resp, err := heldRequest(addr, path)
			results <- result{path, conn, resp, err}
		}()
	}
	var held []net.Conn
	refused := map[string]int{}
	for range 2 * inflight {
		r := <-results
		if r.err != nil {
			t.Fatalf("GET %s: %v", r.path, r.err)
		}
		t.Cleanup(func() { r.conn.Close() })
		switch r.resp.StatusCode {
		case http.StatusOK:
			held = append(held, r.conn)
		case http.StatusTooManyRequests:
			refused[r.path]++
			if r.resp.Header.Get("Retry-After") == "" {
				t.Errorf("GET %s refused without Retry-After", r.path)
			}
			r.conn.Close()
		default:
			t.Errorf("GET %s: %s, want 200 or 429", r.path, r.resp.Status)
			r.conn.Close()
		}
	}
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/status": http.StatusTooManyRequests} {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s with every slot held: %s, want %d", path, resp.Status, want)
		}
	}
	during := procStatus(t, k.Pid())
	grew := during["VmHWM"] - before["VmRSS"]
	t.Logf("%d clients held, refused %v; while held: VmRSS %.0f MB, VmHWM %.0f MB: grew %.0f MB at most (bound %.0f MB)",
		len(held), refused, mb(during["VmRSS"]), mb(during["VmHWM"]), mb(grew), mb(heldAnswersRSSBound))
	if len(held) != inflight || refused[paths[0]]+refused[paths[1]] != inflight {
		t.Errorf("%d clients held and %v refused; want %d held, %d refused", len(held), refused, inflight, inflight)
	}
	if grew > heldAnswersRSSBound {
		t.Errorf("the daemon's resident memory grew by %.0f MB with the held clients, more than the bound of %.0f MB",
			mb(grew), mb(heldAnswersRSSBound))
	}

	// The stall timeout cuts every held answer, and frees its slot.
	eventually(t, stall+30*time.Second, func() error {
		logs, err := os.ReadFile(k.LogPath)
		if err != nil {
			return err
		}
		if n := strings.Count(string(logs), "answer cut: the client took no data"); n < len(held) {
			return fmt.Errorf("%d held answers cut of %d", n, len(held))
		}
		return nil
	})
	resp, err := client.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /status once the held answers were cut: %s", resp.Status)
	}
	after := procStatus(t, k.Pid())
	t.Logf("after the cuts: VmRSS %.0f MB", mb(after["VmRSS"]))
}

// createLongOwnerRefs makes n ConfigMaps in ns, each with refs
// ownerReferences to owners that do not exist, named with nameLen
// characters: dangling references, a lint finding and a missing node of
// the graph each. The test's cleanup deletes them.
func createLongOwnerRefs(t *testing.T, ctx context.Context, ns string, n, refs, nameLen int) {
	t.Helper()
	cms := kube.CoreV1().ConfigMaps(ns)
	// No namespace controller runs here: the references would stay for
	// every later test's kubegcd to mirror.
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
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i)}}
				for j := range refs {
					name := fmt.Sprintf("owner-%d-%d-", i, j)
					cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap",
						Name: name + strings.Repeat("x", nameLen-len(name)),
						UID:  types.UID(fmt.Sprintf("00000000-0000-4000-8000-%06d%06d", i, j))})
				}
				if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
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
}

// getCounting GETs url into v and returns the answer's size.
func getCounting(client *http.Client, url string, v any) (int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return len(body), json.Unmarshal(body, v)
}

// heldRequest asks for path on a connection with a 4 KB receive buffer and
// reads the answer's head only: a client that stops reading.
func heldRequest(addr, path string) (net.Conn, *http.Response, error) {
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
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err == nil {
		err = req.Write(conn)
	}
	var resp *http.Response
	if err == nil {
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err = http.ReadResponse(bufio.NewReaderSize(conn, 512), req)
	}
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, resp, nil
}

// procStatus reads the memory figures of /proc/PID/status, in bytes.
func procStatus(t *testing.T, pid int) map[string]int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if !ok || !strings.HasPrefix(key, "Vm") || len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if kb, err := strconv.Atoi(fields[0]); err == nil {
			out[key] = kb << 10
		}
	}
	return out
}

func mb(bytes int) float64 { return float64(bytes) / (1 << 20) }
