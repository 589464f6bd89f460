package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/reconcile/ownergc"
	"github.com/kubegcd/kubegcd/internal/testcluster"
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
	cluster := startCluster(t)
	kube := kubernetes.NewForConfigOrDie(cluster.Config)
	meta := metadata.NewForConfigOrDie(cluster.Config)
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
	store := dbtest.Open(t)
	seen, err := meta.Resource(configMapsGVR).Namespace("stale").Get(ctx, dep.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := store.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Mirror().WriteListPage(ctx, rid, epoch, []*db.Object{ingest.ObjectFromMeta(seen, "v1", "ConfigMap")}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().FinishList(ctx, rid, epoch, seen.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	updated, err := configMaps.Patch(ctx, dep.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"missed":"by-the-mirror"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mirror at resourceVersion %s, cluster at %s", seen.ResourceVersion, updated.ResourceVersion)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), Instance: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := ownergc.New(ownergc.Options{
		ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Synced: func() bool { return true }}, DB: store.OwnerGC(), Client: meta,
		Workers: 2, ResyncPeriod: time.Second, UnknownKindRetry: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	deletesBefore := apiDeletes(t, kube)
	done := make(chan error, 1)
	go func() { done <- gc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	// counts reports the DELETEs of configmaps the API server answered
	// since the collector started (and how many it refused with 409), and
	// the audit rows about dep, newest first.
	counts := func() (deletes, refused float64, rows []db.AuditEntry) {
		t.Helper()
		d := apiDeletes(t, kube)
		rows, _, err := store.Decisions().ListAudit(ctx, db.AuditFilter{UID: string(dep.UID), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return d.total - deletesBefore.total, d.refused - deletesBefore.refused, rows
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
		if _, _, rows := counts(); len(rows) == 0 || rows[0].Outcome != db.OutcomeApplied {
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
	var outcomes []string
	for _, r := range rows {
		outcomes = append(outcomes, r.Outcome)
	}
	t.Logf("%v DELETEs (%v refused), audit outcomes newest first %v", deletes, refused, outcomes)
	if refused < 1 {
		t.Fatal("no DELETE was refused: the mirror was not stale, so the test proves nothing")
	}
}

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func startCluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{})
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

type deleteCounts struct{ total, refused float64 }

// apiDeletes reads, from the API server's own metrics, how many DELETEs of
// configmaps it has answered, and how many of them with 409.
func apiDeletes(t *testing.T, kube kubernetes.Interface) deleteCounts {
	t.Helper()
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var c deleteCounts
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") ||
			!strings.Contains(line, `verb="DELETE"`) || !strings.Contains(line, `resource="configmaps"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("apiserver metrics line %q: %v", line, err)
		}
		c.total += v
		if strings.Contains(line, `code="409"`) {
			c.refused += v
		}
	}
	return c
}
