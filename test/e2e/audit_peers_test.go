package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// peerToken is the bearer token of the audit peers tests: every instance
// takes it (--auth-token-file) and sends it (--audit-peer-token-file).
const peerToken = "peer-s3cret"

// auditPeer is a kubegcd binary of the audit peers test: its database and
// address outlive a kill, so that its next run reads the same file.
type auditPeer struct {
	name, db, addr, url string
	k                   *testcluster.Kubegcd
	// client asks p; nil: http.DefaultClient.
	client *http.Client
}

// startAuditPeer runs the binary on p's database and address.
func startAuditPeer(t *testing.T, p *auditPeer, args ...string) {
	t.Helper()
	full := append([]string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", p.db, "--listen", p.addr,
		"--dry-run=false", "--advertise-url", p.url}, args...)
	mustEnforceAlone(t, full)
	logPath := filepath.Join(filepath.Dir(p.db), fmt.Sprintf("%s-%d.log", p.name, time.Now().UnixNano()))
	k, err := testcluster.StartKubegcd(kubegcdBin, logPath, full...)
	if err != nil {
		t.Fatal(err)
	}
	p.k = k
	t.Cleanup(func() {
		_ = k.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("%s log: see %s", p.name, logPath)
		}
	})
	if p.client == nil {
		if err := k.WaitReady(context.Background(), p.url+"/readyz", 50*time.Millisecond, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		return
	}
	// HTTPS: only p.client trusts the serving certificate.
	eventually(t, 60*time.Second, func() error {
		if code, err := getAs(p, "", "/readyz", nil); err != nil || code != http.StatusOK {
			return fmt.Errorf("%s: /readyz: %d %v", p.name, code, err)
		}
		return nil
	})
}

// getAs GETs path of p with token ("" sends none) and decodes a 200's
// JSON into v; it returns the status code.
func getAs(p *auditPeer, token, path string, v any) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := http.DefaultClient
	if p.client != nil {
		client = p.client
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK || v == nil {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.Unmarshal(body, v)
}

// counters reads p's audit peers counters and its CPU seconds from
// /metrics.
func counters(t *testing.T, p *auditPeer) map[string]float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+peerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if ok && (strings.HasPrefix(name, "kubegcd_audit_peers_") || name == "process_cpu_seconds_total") {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				out[name] = f
			}
		}
	}
	return out
}

// peerStatus is what the test reads of /status.
type peerStatus struct {
	Leader         bool
	LeaderElection struct{ Identity string }
	AuditPeers     *api.AuditPeersStatus
}

// auditOf returns p's applied deletions in ns, by "instance uid", and the
// gaps its /audit shows.
func auditOf(p *auditPeer, ns string) (map[string]bool, []api.AuditGap, error) {
	return auditRowsOf(p, ns, "outcome=applied&")
}

// auditRowsOf returns p's rows in ns that filter selects, by "instance
// uid", and the gaps its /audit shows.
func auditRowsOf(p *auditPeer, ns, filter string) (map[string]bool, []api.AuditGap, error) {
	rows := map[string]bool{}
	var gaps []api.AuditGap
	cursor := ""
	for {
		var page api.AuditList
		path := "/audit?" + filter + "limit=1000&namespace=" + ns
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		if code, err := getAs(p, peerToken, path, &page); err != nil || code != http.StatusOK {
			return nil, nil, fmt.Errorf("GET %s: %d %v", path, code, err)
		}
		gaps = page.Gaps
		for _, r := range page.Items {
			rows[r.Instance+" "+r.Target.UID] = true
		}
		if page.Next == "" {
			return rows, gaps, nil
		}
		cursor = page.Next
	}
}

// makeOrphans creates n ConfigMaps in ns whose owner never existed, eight
// at a time.
func makeOrphans(ns, prefix string, n int) error {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("%s-%04d", prefix, i),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "never",
						UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))}},
				}}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// oldRows reads the rows instance wrote itself from the database file of
// a killed instance.
func oldRows(t *testing.T, path, ns, instance string) map[string]bool {
	t.Helper()
	d, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows, err := d.Query(`SELECT uid FROM audit WHERE namespace = ? AND instance = ? AND outcome = 'applied'
		AND origin_id IS NULL`, ns, instance)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var uid string
		if err := rows.Scan(&uid); err != nil {
			t.Fatal(err)
		}
		out[instance+" "+uid] = true
	}
	return out
}

// Two enforcing instances of one Lease: each /audit holds every row
// either wrote, the follower's within 5 s of the leader's; a peer without
// the API's token reads nothing; after a SIGKILL of the leader
// mid-collection, the new leader holds every row the old one wrote or
// names it in a gap, and once the old instance runs again on its
// database, the rows arrive and the gap closes.
func TestAuditPeers(t *testing.T) {
	ns := namespaces.New(t, "audit-peers")
	dir := t.TempDir()
	tokens, token := filepath.Join(dir, "tokens"), filepath.Join(dir, "token")
	if err := os.WriteFile(tokens, []byte(peerToken+",peers\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte(peerToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const lease, retry = 6 * time.Second, time.Second
	args := []string{"--controllers=ownergc", "--resync-period=1s", "--leader-elect-name=kubegcd-audit-peers",
		"--leader-elect-lease-duration=" + lease.String(), "--leader-elect-renew-deadline=4s",
		"--leader-elect-retry-period=" + retry.String(), "--kube-api-qps=2000", "--kube-api-burst=2000",
		"--max-deletions-per-minute=0", "--auth-token-file=" + tokens, "--audit-peer-token-file=" + token,
		"--audit-handover-timeout=3s"}
	peers := map[string]*auditPeer{}
	for _, name := range []string{"a", "b"} {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		addr := freeAddr(t)
		peers[name] = &auditPeer{name: name, db: filepath.Join(d, "kubegcd.db"), addr: addr, url: "http://" + addr}
		startAuditPeer(t, peers[name], args...)
	}
	leader, follower, leaderID := leaderAndFollower(t, peerToken, peers["a"], peers["b"])

	// 1,000 orphans: the leader collects them, and the follower holds the
	// same rows within 5 s of the leader's last.
	const n = 1000
	before := counters(t, follower)
	start := time.Now()
	if err := makeOrphans(ns, "first", n); err != nil {
		t.Fatal(err)
	}
	want := auditedBy(t, leader, ns, n, 3*time.Minute)
	collectedIn := time.Since(start)
	leaderDone := time.Now()
	lag := holdsAll(t, follower, ns, want, 5*time.Second)
	t.Logf("%d orphans collected in %s; the follower held every row %s after the leader's /audit did (%s polled)",
		n, collectedIn.Round(time.Millisecond), time.Since(leaderDone).Round(time.Millisecond), lag.Round(time.Millisecond))
	after := counters(t, follower)
	d := func(name string) float64 { return after[name] - before[name] }
	if rows := d("kubegcd_audit_peers_merged_rows_total"); rows > 0 {
		t.Logf("the follower over the collection: %.0f rows merged, %.0f requests, %.0f bytes (%.0f a row), "+
			"%.2f s CPU in all, ingest included (%.0f µs a row)", rows, d("kubegcd_audit_peers_requests_total"),
			d("kubegcd_audit_peers_received_bytes_total"), d("kubegcd_audit_peers_received_bytes_total")/rows,
			d("process_cpu_seconds_total"), 1e6*d("process_cpu_seconds_total")/rows)
	} else {
		t.Errorf("the follower merged no row over the collection: counters %v", after)
	}

	// A peer without the API's token gets a 401 and no row.
	for _, tok := range []string{"", "wrong"} {
		var page api.AuditReplicaPage
		code, err := getAs(leader, tok, "/audit/replicate?after=0", &page)
		if err != nil || code != http.StatusUnauthorized || len(page.Items) != 0 {
			t.Errorf("GET /audit/replicate with token %q: %d, %d rows, %v; want a 401 and none", tok, code,
				len(page.Items), err)
		}
	}
	var st peerStatus
	if _, err := getAs(follower, peerToken, "/status", &st); err != nil {
		t.Fatal(err)
	}
	if st.AuditPeers == nil || len(st.AuditPeers.Peers) != 1 || st.AuditPeers.Peers[0].URL != leader.url ||
		st.AuditPeers.Peers[0].LastPull == nil || st.AuditPeers.Peers[0].Instance != leaderID {
		t.Errorf("the follower's /status auditPeers: %+v, want the leader %s read", st.AuditPeers, leader.url)
	}

	// SIGKILL the leader mid-collection.
	const m = 600
	made := make(chan error, 1)
	go func() { made <- makeOrphans(ns, "second", m) }()
	eventually(t, time.Minute, func() error {
		got, _, err := auditOf(leader, ns)
		if err != nil {
			return err
		}
		if len(got) < n+50 {
			return fmt.Errorf("the leader audited %d of the second batch", len(got)-n)
		}
		return nil
	})
	if err := leader.k.Kill(); err != nil {
		t.Fatal(err)
	}
	old, oldID := leader, leaderID
	var newID string
	eventually(t, 3*lease, func() error {
		var st peerStatus
		if _, err := getAs(follower, peerToken, "/status", &st); err != nil {
			return err
		}
		if !st.Leader {
			return fmt.Errorf("%s does not lead yet", follower.name)
		}
		newID = st.LeaderElection.Identity
		return nil
	})
	written := oldRows(t, old.db, ns, oldID)
	var gapSeen bool
	eventually(t, 30*time.Second, func() error {
		got, gaps, err := auditOf(follower, ns)
		if err != nil {
			return err
		}
		missing := notIn(written, got)
		for _, g := range gaps {
			if g.Instance == oldID && g.RecordedBy == newID && strings.Contains(g.Message, oldID) {
				gapSeen = true
			}
		}
		if missing > 0 && !gapSeen {
			return fmt.Errorf("the new leader misses %d of the old leader's %d rows and shows no gap naming %s (gaps %+v)",
				missing, len(written), oldID, gaps)
		}
		t.Logf("after the kill: the new leader misses %d of the old leader's %d rows; gap shown: %v", missing,
			len(written), gapSeen)
		return nil
	})

	// The old instance runs again on its database: its rows arrive, and
	// the gap closes.
	startAuditPeer(t, old, args...)
	eventually(t, 90*time.Second, func() error {
		got, gaps, err := auditOf(follower, ns)
		if err != nil {
			return err
		}
		missing := notIn(written, got)
		if missing > 0 || len(gaps) > 0 {
			return fmt.Errorf("the new leader misses %d of the old leader's %d rows; gaps %+v", missing, len(written), gaps)
		}
		return nil
	})
	var final peerStatus
	if _, err := getAs(follower, peerToken, "/status", &final); err != nil {
		t.Fatal(err)
	}
	if final.AuditPeers == nil || len(final.AuditPeers.Gaps) != 0 {
		t.Errorf("/status after the old rows arrived: %+v, want no gap", final.AuditPeers)
	}
	if err := <-made; err != nil {
		t.Fatal(err)
	}
	// The deletes the killed leader had sent but not yet recorded are
	// settled by the restarted instance, a follower now: none stays open.
	eventually(t, 30*time.Second, func() error {
		if n := countRows(t, old.db, `SELECT count(*) FROM intents`); n > 0 {
			return fmt.Errorf("%d intents still open in the restarted instance's database", n)
		}
		return nil
	})
	// Both instances hold the same rows, of every outcome.
	eventually(t, 30*time.Second, func() error {
		a, _, err := auditRowsOf(follower, ns, "")
		if err != nil {
			return err
		}
		b, _, err := auditRowsOf(old, ns, "")
		if err != nil {
			return err
		}
		diff := notIn(a, b)
		if diff > 0 || len(a) != len(b) {
			return fmt.Errorf("the leader holds %d rows and the restarted instance %d; %d of the leader's are not on the other",
				len(a), len(b), diff)
		}
		return nil
	})
}

// leaderAndFollower waits until one of a and b leads and the other
// follows, as their /status says to token.
func leaderAndFollower(t *testing.T, token string, a, b *auditPeer) (leader, follower *auditPeer, leaderID string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		leader, follower = nil, nil
		for _, p := range []*auditPeer{a, b} {
			var st peerStatus
			if code, err := getAs(p, token, "/status", &st); err != nil || code != http.StatusOK {
				return fmt.Errorf("%s: /status: %d %v", p.name, code, err)
			}
			if st.Leader {
				leader, leaderID = p, st.LeaderElection.Identity
			} else {
				follower = p
			}
		}
		if leader == nil || follower == nil {
			return fmt.Errorf("no one leader and one follower yet")
		}
		return nil
	})
	return leader, follower, leaderID
}

// auditedBy waits until p's /audit holds n deletions in ns, and returns
// its rows.
func auditedBy(t *testing.T, p *auditPeer, ns string, n int, timeout time.Duration) map[string]bool {
	t.Helper()
	var rows map[string]bool
	eventually(t, timeout, func() error {
		var err error
		if rows, _, err = auditOf(p, ns); err != nil {
			return err
		}
		if len(rows) < n {
			return fmt.Errorf("%s audited %d of %d deletions", p.name, len(rows), n)
		}
		return nil
	})
	return rows
}

// holdsAll waits until p's /audit holds exactly the deletions want in ns,
// and returns how long that took.
func holdsAll(t *testing.T, p *auditPeer, ns string, want map[string]bool, timeout time.Duration) time.Duration {
	t.Helper()
	return eventually(t, timeout, func() error {
		got, _, err := auditOf(p, ns)
		if err != nil {
			return err
		}
		if missing := notIn(want, got); missing > 0 || len(got) != len(want) {
			return fmt.Errorf("%s holds %d rows, %d of the leader's %d missing", p.name, len(got), missing, len(want))
		}
		return nil
	})
}

// notIn counts the rows of want that got does not hold.
func notIn(want, got map[string]bool) int {
	n := 0
	for k := range want {
		if !got[k] {
			n++
		}
	}
	return n
}
