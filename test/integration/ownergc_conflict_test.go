package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/reconcile/ownergc"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestStaleMirrorConflictIsBounded: the mirror holds a dependent at a
// resourceVersion the cluster has moved past, as a watch that missed an
// update leaves it, and nothing brings it up to date. Its owner is gone, so
// the collector deletes it with a resourceVersion precondition, which the
// API server refuses (409). The collector must not retry that refused
// write again and again: it backs off, reads the object live, deletes the
// live version, and then stays quiet although every resync still finds the
// stale copy in the mirror.
func TestStaleMirrorConflictIsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t)
	kube, meta, store := f.kube, f.meta, f.store
	configMaps := kube.CoreV1().ConfigMaps("stale")
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "stale"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// No garbage collector runs in this cluster: the dependent outlives its
	// deleted owner.
	owner, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dep", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := configMaps.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// The mirror lists the dependent through the write path ingest uses,
	// then misses its next update.
	seen, err := meta.Resource(configMapsGVR).Namespace("stale").Get(ctx, dep.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.list(t, seen.ResourceVersion, ingest.ObjectFromMeta(seen, "v1", "ConfigMap"))
	updated, err := configMaps.Patch(ctx, dep.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"missed":"by-the-mirror"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mirror at resourceVersion %s, cluster at %s", seen.ResourceVersion, updated.ResourceVersion)

	deletesBefore := e2eutil.APIDeletes(t, kube, "configmaps")
	f.runOwnerGC(t, ownergc.Options{Workers: 2, ResyncPeriod: time.Second})

	// counts reports the DELETEs of configmaps the API server answered
	// since the collector started (and how many it refused with 409), and
	// the audit rows about dep, newest first.
	counts := func() (deletes, refused float64, rows []db.AuditEntry) {
		t.Helper()
		d := e2eutil.APIDeletes(t, kube, "configmaps")
		rows, _, err := store.Decisions().ListAudit(ctx, db.AuditFilter{UID: string(dep.UID), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return d.Sum() - deletesBefore.Sum(), d["409"] - deletesBefore["409"], rows
	}
	const maxDeletes, maxRows = 4, 4
	bounded := func() error {
		deletes, refused, rows := counts()
		if deletes > maxDeletes || len(rows) > maxRows {
			return e2eutil.StopError{Err: fmt.Errorf("%v DELETEs of configmaps reached the API server (%v refused with 409) and %d audit rows were written about dep, want at most %d and %d",
				deletes, refused, len(rows), maxDeletes, maxRows)}
		}
		return nil
	}

	// Collected, after one refused delete and a live read.
	e2eutil.Eventually(t, 10*time.Second, func() error {
		if err := bounded(); err != nil {
			return err
		}
		_, err := configMaps.Get(ctx, dep.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			deletes, refused, rows := counts()
			return fmt.Errorf("ConfigMap dep still exists (get: %v) after %v DELETEs (%v refused) and %d audit rows", err, deletes, refused, len(rows))
		}
		// The applied row is queued to the writer just after the delete.
		if _, _, rows := counts(); len(rows) == 0 || rows[0].Outcome != api.OutcomeApplied {
			return fmt.Errorf("dep deleted; audit rows about it %+v, want the newest applied", rows)
		}
		return nil
	})

	// Quiet afterwards, though every resync (each second) still finds the
	// stale copy in the mirror.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := bounded(); err != nil {
			t.Fatal(err)
		}
	}
	deletes, refused, rows := counts()
	var outcomes []api.Outcome
	for _, r := range rows {
		outcomes = append(outcomes, r.Outcome)
	}
	t.Logf("%v DELETEs (%v refused), audit outcomes newest first %v", deletes, refused, outcomes)
	if refused < 1 {
		t.Fatal("no DELETE was refused: the mirror was not stale, so the test proves nothing")
	}
}
