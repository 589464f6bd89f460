package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/dbfault"
)

// The tests of this file and blast_radius_test.go enforce the ownership GC
// on the whole cluster, so they run alone, one after the other (no
// t.Parallel), as the other enforcing tests do.

// enforcing are the flags of a kubegcd that collects garbage on its own.
func enforcing(extra ...string) []string {
	return append([]string{"--dry-run=false", "--leader-elect=false", "--controllers=ownergc", "--resync-period=1s"}, extra...)
}

// leaveNoGarbage deletes what is left in ns when the test ends: an
// enforcing test that leaves garbage behind hands the next one writes that
// count against its blast-radius cap.
func leaveNoGarbage(t *testing.T, ns string) {
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
}

// ownerWithDependents creates a ConfigMap owning n others in ns, and
// returns it and the dependents' UIDs.
func ownerWithDependents(t *testing.T, ns string, n int) (*corev1.ConfigMap, map[types.UID]bool) {
	t.Helper()
	ctx := context.Background()
	cms := kube.CoreV1().ConfigMaps(ns)
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deps := map[types.UID]bool{}
	for i := range n {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("dep-%03d", i),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deps[cm.UID] = true
	}
	return owner, deps
}

// garbage creates n ConfigMaps in ns whose only owner never existed.
func garbage(t *testing.T, ns string, n int) map[types.UID]bool {
	t.Helper()
	out := map[types.UID]bool{}
	for i := range n {
		cm, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("garbage-%02d", i),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "never",
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[cm.UID] = true
	}
	return out
}

// remaining counts the objects of uids still in ns.
func remaining(t *testing.T, ns string, uids map[types.UID]bool) int {
	t.Helper()
	list, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cm := range list.Items {
		if uids[cm.UID] {
			n++
		}
	}
	return n
}

// appliedRows returns the committed ownergc rows of applied writes in ns
// (every namespace when ns is empty), oldest first, read from the database
// beside the daemon (reads work on a full disk and under a held write
// lock).
func appliedRows(t *testing.T, d *daemon, ns string) []db.AuditEntry {
	t.Helper()
	rows, _, err := d.DB(t).Decisions().ListAudit(context.Background(), db.AuditFilter{Controller: "ownergc", Namespace: ns,
		Outcome: api.OutcomeApplied, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows
}

// oneRowPerWrite requires exactly one applied row for every object of uids
// that is gone from the cluster, and none for any other: no write without
// its record.
func oneRowPerWrite(t *testing.T, d *daemon, ns string, uids map[types.UID]bool) error {
	t.Helper()
	if n := remaining(t, ns, uids); n > 0 {
		return fmt.Errorf("%d of %d objects left", n, len(uids))
	}
	rows := map[types.UID]int{}
	for _, e := range appliedRows(t, d, ns) {
		rows[types.UID(e.Target.UID)]++
	}
	for uid := range uids {
		if rows[uid] != 1 {
			return fmt.Errorf("object %s deleted with %d applied audit rows, want 1", uid, rows[uid])
		}
	}
	if len(rows) != len(uids) {
		return fmt.Errorf("%d objects with applied rows, want %d", len(rows), len(uids))
	}
	return nil
}

// settledDeletions waits until no object of uids has been deleted for 2 s
// (the writes under way when enforcement paused have ended) and returns
// how many are gone.
func settledDeletions(t *testing.T, ns string, uids map[types.UID]bool) int {
	t.Helper()
	var gone int
	var since time.Time
	eventually(t, 10*time.Second, func() error {
		now := len(uids) - remaining(t, ns, uids)
		if now != gone || since.IsZero() {
			gone, since = now, time.Now()
		}
		if time.Since(since) < 2*time.Second {
			return fmt.Errorf("deletions settling at %d", gone)
		}
		return nil
	})
	return gone
}

// consistently requires fn to hold for d: something that must not happen
// while it is watched.
func consistently(t *testing.T, d time.Duration, fn func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if err := fn(); err != nil {
			t.Fatal(err)
		}
	}
}

// enforcement is the enforcement section of /status, as a client reads it.
type enforcement struct {
	Paused            bool
	PausedBy          []string
	PausedReason      string
	WritesLastMinute  int
	BlastRadiusResume string
	AuditBacklog      int
}

func enforcementOf(t *testing.T, d *daemon) enforcement {
	t.Helper()
	var st struct{ Enforcement enforcement }
	d.GetJSON(t, "/status", http.StatusOK, &st)
	return st.Enforcement
}

// waitLedgerPaused waits until the daemon reports, in /status, /readyz and
// its metrics, that enforcement is paused because the audit history
// cannot be written.
func waitLedgerPaused(t *testing.T, d *daemon, timeout time.Duration) enforcement {
	t.Helper()
	var st enforcement
	eventually(t, timeout, func() error {
		st = enforcementOf(t, d)
		if !st.Paused || len(st.PausedBy) == 0 || st.PausedBy[0] != "audit-store" ||
			!strings.HasPrefix(st.PausedReason, "audit history cannot be written: ") {
			return fmt.Errorf("enforcement not paused by the audit store: %+v", st)
		}
		return nil
	})
	code, body, err := d.Get("/readyz")
	var e struct{ Error string }
	if err != nil || code != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil ||
		!strings.HasPrefix(e.Error, "enforcement paused: audit history cannot be written: ") || strings.Contains(e.Error, "\n") {
		t.Fatalf("/readyz with the audit store failing: %d %s %v", code, body, err)
	}
	_, metrics, err := d.Get("/metrics")
	if err != nil || !strings.Contains(string(metrics), `kubegcd_reconcile_paused{reason="audit-store"} 1`) {
		t.Fatalf("metrics do not show the pause: %v", err)
	}
	return st
}

// waitResumed waits until enforcement runs again and every object of uids
// is gone, each with exactly one applied row.
func waitResumed(t *testing.T, d *daemon, ns string, uids map[types.UID]bool) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		if st := enforcementOf(t, d); st.Paused || st.AuditBacklog != 0 {
			return fmt.Errorf("enforcement still paused: %+v", st)
		}
		return oneRowPerWrite(t, d, ns, uids)
	})
	var resumed auditPage
	d.GetJSON(t, "/audit?controller=kubegcd", http.StatusOK, &resumed)
	if len(resumed.Items) == 0 || resumed.Items[0].Action != "resume" {
		t.Errorf("no audit row of the recovery: %+v", resumed.Items)
	}
	if !strings.Contains(d.Logs.String(), "enforcement resumed") {
		t.Error(`no "enforcement resumed" in the log`)
	}
}

// On a full disk, the first audit row refused pauses every write at once;
// the rows of the writes already made are kept and written once there is
// room, and enforcement resumes by itself.
func TestFullDiskPausesEnforcement(t *testing.T) {
	ns := namespaces.New(t, "ledger-full-disk")
	leaveNoGarbage(t, ns)
	disk := dbfault.NewFullDisk(t, 64<<20)
	const workers = 4
	d := daemons.Start(t, filepath.Join(disk.Dir, "kubegcd.db"),
		enforcing(fmt.Sprintf("--gc-workers=%d", workers), "--kube-api-qps=20", "--kube-api-burst=1")...)
	owner, deps := ownerWithDependents(t, ns, 200)
	d.WaitReady(t, 60*time.Second)
	d.DB(t) // opened while there is room

	if err := kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if n := len(appliedRows(t, d, ns)); n < 5 {
			return fmt.Errorf("%d dependents deleted and recorded", n)
		}
		return nil
	})
	disk.Fill(t, d.DBPath)

	waitLedgerPaused(t, d, 20*time.Second)
	// The writes whose intents committed before the store failed (one per
	// worker at most; they may still wait on the client's rate limiter) go
	// out; then none.
	gone := settledDeletions(t, ns, deps)
	committed := len(appliedRows(t, d, ns))
	st := enforcementOf(t, d)
	t.Logf("paused with %d of %d dependents deleted, %d rows committed, backlog %d", gone, len(deps), committed, st.AuditBacklog)
	// (The backlog may also hold a row of garbage another test left
	// elsewhere.)
	if gone-committed > 2*workers || st.AuditBacklog < gone-committed {
		t.Fatalf("%d deletions without a committed row (backlog %d), want at most %d, all in the backlog",
			gone-committed, st.AuditBacklog, 2*workers)
	}
	consistently(t, 5*time.Second, func() error {
		if now := len(deps) - remaining(t, ns, deps); now != gone {
			return fmt.Errorf("%d dependents deleted while paused, was %d", now, gone)
		}
		return nil
	})

	disk.Free(t)
	waitResumed(t, d, ns, deps)
}

// A write lock held past the busy timeout (10 s) fails the queued intents
// and rows: no write goes out without its intent, the rows are kept, not
// dropped, enforcement pauses, and resumes by itself once the lock is gone.
func TestLockedDatabasePausesEnforcement(t *testing.T) {
	ns := namespaces.New(t, "ledger-locked")
	leaveNoGarbage(t, ns)
	d := daemons.Start(t, "", enforcing("--gc-workers=4", "--kube-api-qps=5", "--kube-api-burst=1")...)
	owner, deps := ownerWithDependents(t, ns, 150)
	d.WaitReady(t, 60*time.Second)
	d.DB(t)

	if err := kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if n := len(appliedRows(t, d, ns)); n < 5 {
			return fmt.Errorf("%d dependents deleted and recorded", n)
		}
		return nil
	})
	unlock := dbfault.HoldWriteLock(t, d.DBPath)
	st := waitLedgerPaused(t, d, 30*time.Second)
	if !strings.Contains(st.PausedReason, "database is locked") {
		t.Errorf("pause reason %q does not name the lock", st.PausedReason)
	}
	// From the lock on, no write went out but those whose intents had
	// committed before it: the next intents waited for the lock until the
	// busy timeout failed them.
	gone := settledDeletions(t, ns, deps)
	t.Logf("paused with %d of %d dependents deleted; %d rows in the backlog", gone, len(deps), enforcementOf(t, d).AuditBacklog)
	if gone == len(deps) {
		t.Fatal("every dependent was deleted before the pause: nothing shows that writes stop")
	}
	consistently(t, 3*time.Second, func() error {
		if now := len(deps) - remaining(t, ns, deps); now != gone {
			return fmt.Errorf("%d dependents deleted while paused, was %d", now, gone)
		}
		return nil
	})
	unlock()
	waitResumed(t, d, ns, deps)
}
