package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// SIGKILL while kubegcd fills a new database, then a restart on it. The
// database is consistent after the kill, and the half-filled resource is
// listed again at the restart. Nothing was collected from the half-filled
// mirror: every dependent of a live owner is still there, with no
// deletion row, while the dependents of an owner that never existed go
// after the restart. It enforces on the whole cluster, so it does not run
// in parallel.
func TestSIGKILLMidColdStart(t *testing.T) {
	const filler, kept, garbage = 10000, 50, 20
	// Each filler keeps a 4 KB annotation (--mirror-annotations), so that
	// a first-fill batch of 16 MB holds about 3,500 of them: the list
	// takes three commits.
	big := map[string]string{"example.com/big": strings.Repeat("x", 4<<10)}
	ctx := context.Background()
	ns := namespaces.New(t, "coldkill")
	cms := kube.CoreV1().ConfigMaps(ns)
	ownerCM, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownerSecret, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "owner"}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live := []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: ownerCM.Name, UID: ownerCM.UID},
		{APIVersion: "v1", Kind: "Secret", Name: ownerSecret.Name, UID: ownerSecret.UID},
	}
	never := metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: "never", UID: "00000000-0000-0000-0000-00000000c01d"}
	var mu sync.Mutex
	keptUIDs, garbageUIDs := map[string]types.UID{}, map[string]types.UID{}
	var wg sync.WaitGroup
	work := make(chan func(), 64)
	for range 16 {
		wg.Go(func() {
			for fn := range work {
				fn()
			}
		})
	}
	add := func(name string, into map[string]types.UID, owners ...metav1.OwnerReference) {
		work <- func() {
			meta := metav1.ObjectMeta{Name: name, OwnerReferences: owners}
			if into == nil {
				meta.Annotations = big
			}
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			if into != nil {
				mu.Lock()
				into[name] = cm.UID
				mu.Unlock()
			}
		}
	}
	// Dependents first and last in the list's order, around the filler.
	for i := range kept {
		add(fmt.Sprintf("a-kept-%03d", i), keptUIDs, live[i%2])
		add(fmt.Sprintf("z-kept-%03d", i), keptUIDs, live[i%2])
	}
	for i := range garbage {
		add(fmt.Sprintf("garbage-%03d", i), garbageUIDs, never)
	}
	for i := range filler {
		add(fmt.Sprintf("filler-%05d", i), nil)
	}
	close(work)
	// The shared cluster has no namespace controller to remove them with
	// the namespace, and every later test's kubegcd would list them.
	t.Cleanup(func() {
		if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("deleting the ConfigMaps of %s: %v", ns, err)
			return
		}
		eventually(t, 2*time.Minute, func() error {
			l, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil || len(l.Items) > 0 {
				return fmt.Errorf("ConfigMaps of %s left (%v)", ns, err)
			}
			return nil
		})
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "kubegcd.db")
	args := func(addr string) []string {
		return []string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", dbPath, "--listen", addr,
			"--dry-run=false", "--leader-elect=false", "--controllers=ownergc", "--max-deletions-per-minute=0",
			"--kube-api-qps=1000", "--kube-api-burst=1000", "--mirror-annotations=configmaps=[example.com/big]"}
	}
	first, err := testcluster.StartKubegcd(kubegcdBin, filepath.Join(dir, "first.log"), args(freeAddr(t))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Stop(5 * time.Second) })
	// Killed once the first of the ConfigMaps' commits has landed. A first
	// fill commits a batch at a time, in the list's order: the a-kept
	// dependents and the first filler, before their owner.
	conn := readDB(t, dbPath)
	mirrored := func() int {
		var n int
		if err := conn.QueryRow(`SELECT count(*) FROM objects WHERE kind = 'ConfigMap' AND namespace = ?`,
			ns).Scan(&n); err != nil {
			return 0 // not made yet, or its schema not yet migrated
		}
		return n
	}
	total := filler + 2*kept + garbage + 1
	deadline := time.Now().Add(2 * time.Minute)
	for mirrored() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no ConfigMap mirrored within 2m")
		}
		time.Sleep(5 * time.Millisecond) // polling a row count, not waiting for time to pass
	}
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	atKill := mirrored()
	if atKill == 0 || atKill >= total {
		t.Fatalf("%d of %d ConfigMaps mirrored at the kill: it did not land mid-fill", atKill, total)
	}
	// The killed database is whole, and says the ConfigMaps must be listed
	// again.
	var check string
	if err := conn.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check after the kill: %q, %v", check, err)
	}
	if rows, err := conn.Query(`PRAGMA foreign_key_check`); err != nil {
		t.Fatal(err)
	} else {
		if rows.Next() {
			t.Errorf("foreign_key_check after the kill found a row without its parent")
		}
		rows.Close()
	}
	// A resource the kill found unrecorded is listed at the restart too.
	var synced int
	var resume string
	switch err := conn.QueryRow(`SELECT synced, resume_resource_version FROM resources WHERE api_group = ''
		AND resource = 'configmaps'`).Scan(&synced, &resume); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		t.Fatal(err)
	case synced != 0 || resume != "":
		t.Errorf("configmaps after the kill: synced %d, resume point %q; want 0 and none", synced, resume)
	}
	if n := countRows(t, dbPath, `SELECT count(*) FROM audit WHERE action = 'delete'`); n != 0 {
		t.Errorf("%d deletions audited before the mirror was filled", n)
	}
	t.Logf("killed with %d of the %d ConfigMaps of %s mirrored", atKill, total, ns)

	addr := freeAddr(t)
	second, err := testcluster.StartKubegcd(kubegcdBin, filepath.Join(dir, "second.log"), args(addr)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Stop(15 * time.Second) })
	if err := second.WaitReady(ctx, "http://"+addr+"/readyz", 50*time.Millisecond, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, func() error {
		for name := range garbageUIDs {
			if _, err := cms.Get(ctx, name, metav1.GetOptions{}); err == nil {
				return fmt.Errorf("garbage %s is still there", name)
			}
		}
		return nil
	})
	// The mirror then holds every ConfigMap left, as its watch reports the
	// deletions.
	eventually(t, time.Minute, func() error {
		if n := mirrored(); n != total-garbage {
			return fmt.Errorf("the mirror holds %d ConfigMaps of %s after the restart, want %d", n, ns, total-garbage)
		}
		return nil
	})
	if err := second.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	rows := deletionRows(t, dbPath, ns)
	for name, uid := range keptUIDs {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil || cm.UID != uid {
			t.Errorf("dependent %s of a live owner: %v", name, err)
		}
		if got := rows[string(uid)]; len(got) > 0 {
			t.Errorf("dependent %s of a live owner has deletion rows %v", name, got)
		}
	}
	for name, uid := range garbageUIDs {
		if got := rows[string(uid)]; len(got) != 1 {
			t.Errorf("garbage %s has deletion rows %v, want one", name, got)
		}
	}
}
