package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
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
)

// smallDisk returns a directory on a file system of its own, small enough to
// fill: a tmpfs, which root can mount (here and in CI). Elsewhere it is a
// plain directory and fill falls back to RLIMIT_FSIZE.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		return dir
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fill makes writes to the database at path fail as on a full disk and
// returns the function that frees the space. The WAL is truncated first, so
// that the next commit needs new space rather than reusing the file's.
func fill(t *testing.T, path string) (free func()) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		// Not root, so no tmpfs: a file size limit of 0 fails every write
		// of this process as ENOSPC would. SIGXFSZ would kill the process at
		// the first such write; Go ignores it by default, and the test must
		// not depend on that default.
		signal.Ignore(syscall.SIGXFSZ)
		var old syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 0, Max: old.Max}); err != nil {
			t.Fatal(err)
		}
		free = func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Errorf("restoring RLIMIT_FSIZE: %v", err)
			}
		}
		t.Cleanup(free)
		return free
	}
	filler := filepath.Join(filepath.Dir(path), "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Large writes, then page-sized ones for what is left.
	for _, size := range []int{1 << 20, 4 << 10} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling the disk: %v", err)
				}
				break
			}
		}
	}
	free = func() {
		if err := os.Remove(filler); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("freeing the disk: %v", err)
		}
	}
	t.Cleanup(free)
	return free
}

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
	path := filepath.Join(smallDisk(t), "k.db")
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

	free := fill(t, path)
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
	free()

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
