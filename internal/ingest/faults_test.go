package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/dbfault"
)

// waitFor polls cond until it holds, failing the test at the deadline.
func waitFor(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFailedWriteRelists fills the disk under the database while a
// ConfigMap is created, so the batch carrying its event fails. The resource
// must be unsynced for the controllers (ResourceSynced) until a relist has
// brought the lost object back, once space is freed; then synced again,
// its resources.synced row too.
func TestFailedWriteRelists(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cluster.Config)
	disk := dbfault.NewFullDisk(t, 16<<20)
	path := filepath.Join(disk.Dir, "k.db")
	store, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ing, err := New(Options{Config: cluster.Config, DB: store, Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if ing.ResourceSynced("", "configmaps") {
		t.Errorf("configmaps synced before they are watched")
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if err := ing.startWatcher(ctx, gvr, resourceInfo{kind: "ConfigMap", namespaced: true}, ""); err != nil {
		t.Fatal(err)
	}
	defer ing.stopAll()
	waitFor(t, 20*time.Second, func() error {
		if !ing.ResourceSynced("", "configmaps") {
			return errors.New("configmaps not synced")
		}
		return nil
	})

	disk.Fill(t, path)
	cm, err := kube.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "disk-full-" + rand.String(5)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps("default").Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
	})
	waitFor(t, 20*time.Second, func() error {
		if n := testutil.ToFloat64(ing.metrics.errors.WithLabelValues("configmaps", "write")); n < 1 {
			return errors.New("no failed write yet")
		}
		if ing.ResourceSynced("", "configmaps") {
			return errors.New("configmaps still synced after a failed write")
		}
		return nil
	})
	disk.Free(t)

	waitFor(t, 30*time.Second, func() error {
		got, err := store.GetObject(ctx, string(cm.UID))
		if err != nil {
			return fmt.Errorf("%s: %w", cm.Name, err)
		}
		if got.ResourceVersion != cm.ResourceVersion {
			return fmt.Errorf("%s: resourceVersion %s in the mirror, %s in the cluster", cm.Name, got.ResourceVersion, cm.ResourceVersion)
		}
		if !ing.ResourceSynced("", "configmaps") {
			return errors.New("configmaps not synced again")
		}
		stats, err := store.ResourceStats(ctx)
		if err != nil {
			return err
		}
		for _, s := range stats {
			if s.Resource.Resource == "configmaps" && !s.Synced {
				return errors.New("resources.synced is 0 for configmaps")
			}
		}
		return nil
	})
	if n := testutil.ToFloat64(ing.metrics.relists.WithLabelValues("configmaps", "write-failed")); n < 1 {
		t.Errorf("relists{reason=write-failed} = %v, want at least 1", n)
	}
}
