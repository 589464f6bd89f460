package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// webhookDownFor is how long the audit webhook's receiver refuses every
// batch. The acceptance asks for a minute. This test takes 5 s, so
// that the suite stays quick. The back-off's whole minute runs on a fake
// clock in internal/auditsink's TestWebhookSurvivesAReceiverDownForAMinute.
const webhookDownFor = 5 * time.Second

// auditReceiver is an audit webhook's receiver: it answers 503 while down,
// and keeps every item it accepts, as the JSON it came as.
type auditReceiver struct {
	mu            sync.Mutex
	down          bool
	firstRefusal  time.Time
	refused       int
	items         []json.RawMessage
	badPosts      []string
	contentTypes  map[string]bool
	acceptedPosts int
}

func (r *auditReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		if r.refused == 0 {
			r.firstRefusal = time.Now()
		}
		r.refused++
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var batch struct{ Items []json.RawMessage }
	if err := json.Unmarshal(body, &batch); err != nil || len(batch.Items) == 0 ||
		req.Header.Get("Content-Type") != "application/json" {
		r.badPosts = append(r.badPosts, fmt.Sprintf("%v %s %.100s", err, req.Header.Get("Content-Type"), body))
	}
	r.acceptedPosts++
	r.items = append(r.items, batch.Items...)
}

// With --audit-log-path and --audit-webhook-config-file, the audit rows of
// a collection leave kubegcd: the log file has one line per row of
// GET /audit, byte for byte its item, and the webhook, down for a while,
// gets every row once it is up, its retries counted. It enforces, so it
// runs alone (see mustEnforceAlone).
func TestAuditSinksShipEveryRow(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "audit-sink-"+string(uuid.NewUUID())[:8])
	cms := kube.CoreV1().ConfigMaps(ns)
	// Orphans: their one owner never existed.
	gone := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: types.UID(uuid.NewUUID())}
	const orphans = 20
	var uids []string
	for i := range orphans {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("orphan-%d", i),
			OwnerReferences: []metav1.OwnerReference{gone}}}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, string(created.UID))
	}

	rcv := &auditReceiver{down: true}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "webhook.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: receiver
  cluster: {server: "`+srv.URL+`/audit"}
users:
- name: kubegcd
  user: {}
contexts:
- name: receiver
  context: {cluster: receiver, user: kubegcd}
current-context: receiver
`), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.log")
	d := daemons.Start(t, "", "--controllers=ownergc", "--dry-run=false", "--resync-period=1s",
		"--leader-elect-name=kubegcd-audit-sink", "--audit-log-path="+logPath,
		"--audit-webhook-config-file="+kubeconfig, "--audit-webhook-initial-backoff=500ms",
		"--audit-webhook-batch-max-wait=200ms", "--audit-webhook-batch-max-size=7")
	for i := range orphans {
		name := fmt.Sprintf("orphan-%d", i)
		eventually(t, 60*time.Second, func() error {
			_, err := cms.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s still there (%v)", name, err)
		})
	}

	// What GET /audit holds, oldest first: every row the instance wrote,
	// this test's deletions among them.
	auditItems := func() (items []json.RawMessage, ids []int64) {
		t.Helper()
		var list struct {
			Items []json.RawMessage
			Next  string
		}
		d.GetJSON(t, "/audit?limit=1000", http.StatusOK, &list)
		if list.Next != "" {
			t.Fatalf("GET /audit has more than 1,000 rows")
		}
		slices.Reverse(list.Items)
		for _, it := range list.Items {
			var e struct{ ID int64 }
			if err := json.Unmarshal(it, &e); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
		}
		return list.Items, ids
	}
	// An object is gone before its row is written: the applier writes the
	// rows of applied deletes in batches.
	slices.Sort(uids)
	eventually(t, 30*time.Second, func() error {
		items, _ := auditItems()
		var deleted []string
		for _, it := range items {
			var e struct {
				Action string
				Target struct{ UID string }
			}
			if err := json.Unmarshal(it, &e); err != nil {
				return stopError{Err: err}
			}
			if e.Action == "delete" && slices.Contains(uids, e.Target.UID) {
				deleted = append(deleted, e.Target.UID)
			}
		}
		slices.Sort(deleted)
		if !slices.Equal(uids, slices.Compact(deleted)) {
			return fmt.Errorf("GET /audit has delete rows for %d of the %d orphans", len(slices.Compact(deleted)), orphans)
		}
		return nil
	})

	// The log file: one line per row of GET /audit, in order, each the
	// item's own bytes.
	eventually(t, 30*time.Second, func() error {
		items, ids := auditItems()
		lines, err := fileLines(logPath)
		if err != nil {
			return err
		}
		if len(lines) != len(items) {
			return fmt.Errorf("the log has %d lines and GET /audit %d rows (ids %d…%d)", len(lines), len(items),
				ids[0], ids[len(ids)-1])
		}
		for i := range lines {
			if !bytes.Equal(lines[i], items[i]) {
				return stopError{Err: fmt.Errorf("log line %d:\n%s\nGET /audit's item:\n%s", i, lines[i], items[i])}
			}
		}
		return nil
	})

	// The webhook: refused for webhookDownFor, then up.
	eventually(t, 30*time.Second, func() error {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		if rcv.refused == 0 || time.Since(rcv.firstRefusal) < webhookDownFor {
			return fmt.Errorf("the receiver refused %d posts, the first %s ago; want it down %s",
				rcv.refused, time.Since(rcv.firstRefusal).Round(time.Millisecond), webhookDownFor)
		}
		rcv.down = false
		return nil
	})
	eventually(t, 30*time.Second, func() error {
		items, _ := auditItems()
		rcv.mu.Lock()
		got := slices.Clone(rcv.items)
		bad := rcv.badPosts
		rcv.mu.Unlock()
		if len(bad) > 0 {
			return stopError{Err: fmt.Errorf("bad posts: %v", bad)}
		}
		if len(got) != len(items) {
			return fmt.Errorf("the receiver has %d rows and GET /audit %d", len(got), len(items))
		}
		for i := range got {
			if !bytes.Equal(got[i], items[i]) {
				return stopError{Err: fmt.Errorf("webhook item %d:\n%s\nGET /audit's item:\n%s", i, got[i], items[i])}
			}
		}
		return nil
	})
	if got := d.Metric(t, "kubegcd_audit_sink_batches_retried_total", "backend=webhook"); got < 1 {
		t.Errorf("kubegcd_audit_sink_batches_retried_total{backend=webhook} %v, want the refusals counted", got)
	}
	for _, backend := range []string{"log", "webhook"} {
		if got := d.Metric(t, "kubegcd_audit_sink_rows_dropped_total", "backend="+backend); got != 0 {
			t.Errorf("kubegcd_audit_sink_rows_dropped_total{backend=%s} %v, want 0", backend, got)
		}
	}
	items, _ := auditItems()
	if got := d.Metric(t, "kubegcd_audit_sink_rows_sent_total", "backend=log"); got != float64(len(items)) {
		t.Errorf("kubegcd_audit_sink_rows_sent_total{backend=log} %v, want %d", got, len(items))
	}
	if got := d.Metric(t, "kubegcd_audit_sink_rows_sent_total", "backend=webhook"); got != float64(len(items)) {
		t.Errorf("kubegcd_audit_sink_rows_sent_total{backend=webhook} %v, want %d", got, len(items))
	}
}

// fileLines reads the lines of the file at path.
func fileLines(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		out = append(out, slices.Clone(sc.Bytes()))
	}
	return out, sc.Err()
}
