package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// SIGKILL in the middle of a 5,000-dependent cascade, then a restart on the
// same database: every dependent gone from the cluster has exactly one
// audit row of its deletion (applied or not-found) — those whose row the
// kill lost get theirs from the intent committed before the write — and
// nothing still owned was deleted. It enforces on the whole cluster, so it
// does not run in parallel.
func TestSIGKILLMidCascadeKeepsOneRowPerDeletion(t *testing.T) {
	const doomed, kept, shared = 5000, 200, 20
	ctx := context.Background()
	ns := namespaces.New(t, "crash")
	cms := kube.CoreV1().ConfigMaps(ns)
	create := func(name, set string, owners ...*corev1.ConfigMap) (*corev1.ConfigMap, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"set": set}}}
		for _, o := range owners {
			cm.OwnerReferences = append(cm.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: o.Name, UID: o.UID})
		}
		return cms.Create(ctx, cm, metav1.CreateOptions{})
	}
	owner, err := create("doomed-owner", "owner")
	if err != nil {
		t.Fatal(err)
	}
	liveOwner, err := create("live-owner", "owner")
	if err != nil {
		t.Fatal(err)
	}
	// name → UID of every dependent, made in parallel: 5,220 creates.
	var mu sync.Mutex
	uids := map[string]map[string]types.UID{"doomed": {}, "kept": {}, "shared": {}}
	var wg sync.WaitGroup
	work := make(chan func(), 64)
	for range 16 {
		wg.Go(func() {
			for fn := range work {
				fn()
			}
		})
	}
	add := func(set, name string, owners ...*corev1.ConfigMap) {
		work <- func() {
			cm, err := create(name, set, owners...)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			uids[set][name] = cm.UID
			mu.Unlock()
		}
	}
	for i := range doomed {
		add("doomed", fmt.Sprintf("dep-%04d", i), owner)
	}
	for i := range kept {
		add("kept", fmt.Sprintf("kept-%03d", i), liveOwner)
	}
	for i := range shared {
		add("shared", fmt.Sprintf("shared-%02d", i), owner, liveOwner)
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "kubegcd.db")
	start := func(name string) (*testcluster.Kubegcd, string) {
		t.Helper()
		addr := freeAddr(t)
		k, err := testcluster.StartKubegcd(kubegcdBin, filepath.Join(dir, name+".log"), "run", "--kubeconfig", cluster.Kubeconfig,
			"--db", dbPath, "--listen", addr, "--dry-run=false", "--leader-elect=false", "--controllers=ownergc",
			"--max-deletions-per-minute=0", "--kube-api-qps=1000", "--kube-api-burst=1000", "--gc-workers=32")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = k.Stop(15 * time.Second)
			if t.Failed() {
				t.Logf("%s log: %s", name, k.LogPath)
			}
		})
		if err := k.WaitReady(ctx, "http://"+addr+"/readyz", 50*time.Millisecond, 90*time.Second); err != nil {
			t.Fatal(err)
		}
		return k, addr
	}
	left := func() (map[string]types.UID, error) {
		list, err := meta.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns).List(ctx,
			metav1.ListOptions{LabelSelector: "set=doomed"})
		if err != nil {
			return nil, err
		}
		out := map[string]types.UID{}
		for _, it := range list.Items {
			out[it.Name] = it.UID
		}
		return out, nil
	}

	first, _ := start("first")
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Killed once a few hundred dependents are gone, thousands not yet.
	var atKill int
	eventually(t, 2*time.Minute, func() error {
		l, err := left()
		if err != nil {
			return err
		}
		if gone := doomed - len(l); gone < 200 {
			return fmt.Errorf("%d of %d dependents gone", gone, doomed)
		}
		if err := first.Kill(); err != nil {
			return stopError{Err: err}
		}
		atKill = len(l)
		return nil
	})
	l, err := left()
	if err != nil {
		t.Fatal(err)
	}
	if len(l) == 0 || len(l) == doomed {
		t.Fatalf("%d of %d dependents left after the kill: the kill did not land mid-cascade", len(l), doomed)
	}
	open := countRows(t, dbPath, `SELECT count(*) FROM intents`)
	t.Logf("killed with %d of %d dependents left (%d after it); %d intents open", atKill, doomed, len(l), open)

	second, _ := start("second")
	eventually(t, 3*time.Minute, func() error {
		l, err := left()
		if err != nil {
			return err
		}
		if len(l) > 0 {
			return fmt.Errorf("%d dependents left", len(l))
		}
		return nil
	})
	// The shared dependents lose their reference to the gone owner (a
	// patch) and keep the live one.
	eventually(t, time.Minute, func() error {
		for name := range uids["shared"] {
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return stopError{Err: fmt.Errorf("shared dependent %s: %w", name, err)}
			}
			if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != liveOwner.UID {
				return fmt.Errorf("%s has owners %v", name, cm.OwnerReferences)
			}
		}
		return nil
	})
	if err := second.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}

	rows := deletionRows(t, dbPath, ns)
	for name, uid := range uids["doomed"] {
		if got := rows[string(uid)]; len(got) != 1 {
			t.Errorf("dependent %s (%s) is gone with %d deletion rows %v, want exactly 1", name, uid, len(got), got)
		}
	}
	for _, set := range []string{"kept", "shared"} {
		for name, uid := range uids[set] {
			cm, err := cms.Get(ctx, name, metav1.GetOptions{})
			if err != nil || cm.UID != uid {
				t.Errorf("%s dependent %s of a live owner: %v (uid %s, want %s)", set, name, err, cm.UID, uid)
			}
			if got := rows[string(uid)]; len(got) > 0 {
				t.Errorf("%s dependent %s of a live owner has deletion rows %v", set, name, got)
			}
		}
	}
	if cm, err := cms.Get(ctx, liveOwner.Name, metav1.GetOptions{}); err != nil || cm.UID != liveOwner.UID {
		t.Errorf("the live owner: %v", err)
	}
	if open := countRows(t, dbPath, `SELECT count(*) FROM intents`); open != 0 {
		t.Errorf("%d intents still open after the restart", open)
	}
	t.Logf("%d rows settled from intents at start", countRows(t, dbPath,
		`SELECT count(*) FROM audit WHERE reason LIKE 'recovered at start:%'`))
}

// readDB opens the database at path read-only, beside (or after) kubegcd,
// as an operator's sqlite3 would.
func readDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func countRows(t *testing.T, path, query string) int {
	t.Helper()
	var n int
	if err := readDB(t, path).QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// deletionRows returns, by target UID, the outcomes of the deletions
// audited as carried out (applied or not-found, not dry-run) in namespace
// ns.
func deletionRows(t *testing.T, path, ns string) map[string][]string {
	t.Helper()
	rows, err := readDB(t, path).Query(`SELECT uid, outcome FROM audit WHERE namespace = ? AND action = 'delete'
		AND dry_run = 0 AND outcome IN (?, ?) ORDER BY id`, ns, api.OutcomeApplied, api.OutcomeNotFound)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var uid, outcome string
		if err := rows.Scan(&uid, &outcome); err != nil {
			t.Fatal(err)
		}
		out[uid] = append(out[uid], outcome)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
