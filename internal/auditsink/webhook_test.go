package auditsink

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// receiver is a webhook's receiver that answers 503 while down.
type receiver struct {
	down  atomic.Bool
	mu    sync.Mutex
	ids   []int64
	posts int
	bad   []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if r.down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	var batch api.AuditBatch
	err := json.Unmarshal(body, &batch)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if err != nil || req.Header.Get("Content-Type") != "application/json" || len(batch.Items) == 0 {
		r.bad = append(r.bad, fmt.Sprintf("%s %v %.80s", req.Header.Get("Content-Type"), err, body))
	}
	for _, e := range batch.Items {
		r.ids = append(r.ids, e.ID)
	}
}

// received returns the ids received, in order, and fails t on a bad post.
func (r *receiver) received(t *testing.T) []int64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		t.Fatalf("bad posts: %v", r.bad)
	}
	return slices.Clone(r.ids)
}

func webhookFor(t *testing.T, rawURL string, cfg WebhookConfig, o Options) *Webhook {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.InitialBackoff == 0 {
		cfg.InitialBackoff = 10 * time.Millisecond
	}
	if cfg.BatchMaxWait == 0 {
		cfg.BatchMaxWait = 10 * time.Millisecond
	}
	return NewWebhook(cfg, u, http.DefaultClient, o)
}

// A receiver that is down, answering 503 or refusing connections, then up:
// every row arrives once it is up, in order, each once, and the metrics
// count the retries.
func TestWebhookShipsEveryRowOnceTheReceiverIsUp(t *testing.T) {
	for _, down := range []string{"503", "connection refused"} {
		t.Run(down, func(t *testing.T) {
			d := dbtest.Open(t)
			insertRows(t, d, "cm", 25, 0)
			rcv := &receiver{}
			srv := httptest.NewUnstartedServer(rcv)
			t.Cleanup(srv.Close)
			addr := srv.Listener.Addr().String()
			if down == "503" {
				rcv.down.Store(true)
				srv.Start()
			} else {
				// Nothing listens at the address until the server starts on it.
				srv.Listener.Close()
			}
			o, reg := opts(d)
			w := webhookFor(t, "http://"+addr+"/audit", WebhookConfig{BatchMaxSize: 10}, o)
			stop := testutil.Start(t, w.Run)
			defer stop()
			testutil.WaitFor(t, 10*time.Second, "3 retries", func() bool {
				return metric(t, reg, "batches_retried_total", BackendWebhook) >= 3
			})
			if got := metric(t, reg, "rows_sent_total", BackendWebhook); got != 0 {
				t.Fatalf("%v rows sent to a receiver that is down", got)
			}
			insertRows(t, d, "late", 5, 0) // written while it is down
			if down == "503" {
				rcv.down.Store(false)
			} else {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				srv.Listener = ln
				srv.Start()
			}
			testutil.WaitFor(t, 10*time.Second, "30 rows received", func() bool {
				return len(rcv.received(t)) >= 30
			})
			if diff := cmp.Diff(oneTo(30), rcv.received(t)); diff != "" {
				t.Errorf("rows received (-want +got):\n%s", diff)
			}
			// The receiver has the last batch before the webhook hears its
			// answer and counts it.
			testutil.Eventually(t, 10*time.Second, func() error {
				if got := metric(t, reg, "rows_sent_total", BackendWebhook); got != 30 {
					return fmt.Errorf("rows_sent_total %v, want 30", got)
				}
				return nil
			})
			if got := metric(t, reg, "rows_dropped_total", BackendWebhook, reasonBufferFull); got != 0 {
				t.Errorf("rows_dropped_total %v, want 0", got)
			}
			testutil.Eventually(t, 10*time.Second, func() error {
				last, _, err := d.Decisions().SinkCursor(context.Background(), BackendWebhook)
				if err != nil || last != 30 {
					return fmt.Errorf("saved cursor %d (%v), want 30", last, err)
				}
				return nil
			})
		})
	}
}

// While the receiver is down and the backlog is larger than the buffer,
// the oldest rows are dropped and counted, the cursor moves past them,
// and the newest arrive once the receiver is up. The database keeps
// every row.
func TestWebhookDropsTheOldestWhenTheBufferIsFull(t *testing.T) {
	ctx := context.Background()
	d := dbtest.Open(t)
	insertRows(t, d, "cm", 50, 0)
	rcv := &receiver{}
	rcv.down.Store(true)
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	o, reg := opts(d)
	w := webhookFor(t, srv.URL, WebhookConfig{BufferSize: 10, BatchMaxSize: 5}, o)
	stop := testutil.Start(t, w.Run)
	defer stop()
	testutil.WaitFor(t, 10*time.Second, "40 rows dropped", func() bool {
		return metric(t, reg, "rows_dropped_total", BackendWebhook, reasonBufferFull) == 40
	})
	if got := metric(t, reg, "buffered_rows", BackendWebhook); got != 10 {
		t.Errorf("buffered_rows %v, want 10", got)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		last, _, err := d.Decisions().SinkCursor(ctx, BackendWebhook)
		if err != nil || last != 40 {
			return fmt.Errorf("saved cursor %d (%v), want 40: past the rows dropped", last, err)
		}
		return nil
	})
	rcv.down.Store(false)
	testutil.WaitFor(t, 10*time.Second, "10 rows received", func() bool { return len(rcv.received(t)) >= 10 })
	if diff := cmp.Diff(oneTo(50)[40:], rcv.received(t)); diff != "" {
		t.Errorf("rows received (-want +got):\n%s", diff)
	}
	if got := metric(t, reg, "rows_dropped_total", BackendWebhook, reasonBufferFull); got != 40 {
		t.Errorf("rows_dropped_total %v after the receiver came up, want 40", got)
	}
	rows, err := d.Decisions().AuditAfter(ctx, 0, 100)
	if err != nil || len(rows) != 50 {
		t.Errorf("the database holds %d rows (%v), want all 50", len(rows), err)
	}
}

// A receiver that refuses a batch for good (400) loses that batch, counted
// as rejected; the next batches are sent.
func TestWebhookRejectedBatchIsDropped(t *testing.T) {
	d := dbtest.Open(t)
	insertRows(t, d, "cm", 6, 0)
	var posts atomic.Int32
	rcv := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if posts.Add(1) == 1 {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		rcv.ServeHTTP(w, r)
	}))
	defer srv.Close()
	o, reg := opts(d)
	w := webhookFor(t, srv.URL, WebhookConfig{BatchMaxSize: 3}, o)
	stop := testutil.Start(t, w.Run)
	defer stop()
	testutil.WaitFor(t, 10*time.Second, "3 rows received", func() bool { return len(rcv.received(t)) >= 3 })
	if diff := cmp.Diff([]int64{4, 5, 6}, rcv.received(t)); diff != "" {
		t.Errorf("rows received (-want +got):\n%s", diff)
	}
	if got := metric(t, reg, "rows_dropped_total", BackendWebhook, reasonRejected); got != 3 {
		t.Errorf("rejected rows %v, want 3", got)
	}
	if got := metric(t, reg, "batches_retried_total", BackendWebhook); got != 0 {
		t.Errorf("batches_retried_total %v, want 0: a 400 is not retried", got)
	}
}

// A receiver that hangs costs the webhook a request's timeout, retried;
// the audit history is written as fast as without it.
func TestWebhookHangingReceiverDoesNotBlockAuditWrites(t *testing.T) {
	ctx := context.Background()
	d := dbtest.Open(t)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	o, reg := opts(d)
	w := webhookFor(t, srv.URL, WebhookConfig{BatchMaxSize: 1, Timeout: 100 * time.Millisecond}, o)
	stop := testutil.Start(t, w.Run)
	defer stop()
	insertRows(t, d, "first", 1, 0)
	testutil.WaitFor(t, 10*time.Second, "a request timed out and is retried", func() bool {
		return metric(t, reg, "batches_retried_total", BackendWebhook) >= 1
	})
	for i := range 20 {
		start := time.Now()
		e := &db.AuditEntry{Time: start, Instance: "i", Controller: api.ControllerOwnerGC, Action: api.ActionDelete,
			Target:  api.Target{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprint(i), UID: fmt.Sprint(i)},
			Outcome: api.OutcomeApplied}
		if err := d.Ledger().InsertAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
		// A commit syncs the file (synchronous=FULL): well under a second
		// even on a busy disk, and nothing to do with the webhook.
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("InsertAudit took %s while the receiver hangs", took)
		}
	}
	if got := metric(t, reg, "rows_sent_total", BackendWebhook); got != 0 {
		t.Errorf("rows_sent_total %v to a receiver that never answers", got)
	}
}

// A receiver down for a full minute, on a fake clock: the webhook backs
// off (10 s, doubling), keeps every row while the buffer holds them, and
// ships them all within a back-off of the receiver coming up.
func TestWebhookSurvivesAReceiverDownForAMinute(t *testing.T) {
	d := dbtest.Open(t)
	insertRows(t, d, "cm", 20, 0)
	rcv := &receiver{}
	rcv.down.Store(true)
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	clk := testingclock.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	o, reg := opts(d)
	o.Clock, o.PollPeriod = clk, time.Second
	w := webhookFor(t, srv.URL, WebhookConfig{BatchMaxSize: 400, BatchMaxWait: 5 * time.Second,
		InitialBackoff: DefaultWebhookInitialBackoff}, o)
	stop := testutil.Start(t, w.Run)
	defer stop()
	start := clk.Now()
	// step moves the fake clock a second once the webhook waits on it.
	step := func() {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, "the webhook waits on its clock", clk.HasWaiters)
		clk.Step(time.Second)
	}
	for clk.Since(start) < time.Minute {
		step()
		if clk.Since(start) == 30*time.Second {
			insertRows(t, d, "late", 10, 0) // written while it is down
		}
	}
	// Failed at 5 s (the batch's wait), then about 15 s, 35 s: three
	// retries, the next due about 75 s.
	if got := metric(t, reg, "batches_retried_total", BackendWebhook); got != 3 {
		t.Errorf("batches_retried_total %v after a minute down, want 3", got)
	}
	rcv.down.Store(false)
	up := clk.Now()
	for len(rcv.received(t)) < 30 {
		if clk.Since(up) > 35*time.Second {
			t.Fatalf("%d rows received %s after the receiver came up, want 30 within the 30 s back-off cap",
				len(rcv.received(t)), clk.Since(up))
		}
		step()
	}
	if diff := cmp.Diff(oneTo(30), rcv.received(t)); diff != "" {
		t.Errorf("rows received (-want +got):\n%s", diff)
	}
	if got := metric(t, reg, "rows_dropped_total", BackendWebhook, reasonBufferFull); got != 0 {
		t.Errorf("rows_dropped_total %v, want 0", got)
	}
}

// The webhook's kubeconfig: its cluster's server is the URL, and a file
// that does not parse is an error in a line.
func TestLoadWebhookConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", `apiVersion: v1
kind: Config
clusters:
- name: logs
  cluster:
    server: https://logs.example.com:8443/kubegcd/audit
users:
- name: kubegcd
  user:
    token: s3cret
contexts:
- name: default
  context: {cluster: logs, user: kubegcd}
current-context: default
`)
	u, client, err := LoadWebhookConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if u.String() != "https://logs.example.com:8443/kubegcd/audit" || client == nil {
		t.Errorf("url %s, client %v", u, client)
	}
	for name, content := range map[string]string{
		"garbage":   "{not yaml: [",
		"no server": "apiVersion: v1\nkind: Config\n",
	} {
		_, _, err := LoadWebhookConfig(write(strings.ReplaceAll(name, " ", "-"), content))
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %q, want an error in one line", name, err)
		}
	}
}
