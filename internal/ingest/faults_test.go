package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
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
	cluster := controlPlane(t)
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
	ing, err := New(Options{Config: cluster.Config, DB: store.Mirror(), Registerer: prometheus.NewRegistry(),
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
		got, err := store.Objects().GetObject(ctx, string(cm.UID))
		if err != nil {
			return fmt.Errorf("%s: %w", cm.Name, err)
		}
		if got.ResourceVersion != cm.ResourceVersion {
			return fmt.Errorf("%s: resourceVersion %s in the mirror, %s in the cluster", cm.Name, got.ResourceVersion, cm.ResourceVersion)
		}
		if !ing.ResourceSynced("", "configmaps") {
			return errors.New("configmaps not synced again")
		}
		stats, err := store.Objects().ResourceStats(ctx)
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

// configMapsIn records ConfigMaps as a resource of store and returns it,
// its ID set.
func configMapsIn(t *testing.T, store *db.DB) db.Resource {
	t.Helper()
	res := db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}
	var err error
	if res.ID, err = store.Mirror().EnsureResource(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	return res
}

// expiringSource is a resource whose first watch ends at once in 410
// Gone, and whose first list waits for release: the test looks at the
// watcher while it relists. Later watches stay open.
type expiringSource struct {
	listing, release chan struct{}
	watches          *atomic.Int32
}

func (s expiringSource) list(ctx context.Context, _ metav1.ListOptions) ([]runtime.Object, string, string, error) {
	select {
	case s.listing <- struct{}{}:
		<-s.release
	case <-s.release:
	case <-ctx.Done():
		return nil, "", "", ctx.Err()
	}
	return nil, "2", "", nil
}

func (s expiringSource) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	w := watch.NewFakeWithChanSize(1, false)
	if s.watches.Add(1) == 1 {
		w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
	}
	return w, nil
}

// TestExpiredWatchUnsyncs: a watch that expires has lost the events since
// its resourceVersion, so the mirror is stale until the relist is done,
// and the resource must be out of sync meanwhile; controllers and /readyz
// must not take the stale view for a live one.
func TestExpiredWatchUnsyncs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := dbtest.Open(t)
	res := configMapsIn(t, store)
	m := newMetrics(prometheus.NewRegistry())
	src := expiringSource{listing: make(chan struct{}), release: make(chan struct{}), watches: new(atomic.Int32)}
	w := &watcher{res: res, apiVersion: "v1", label: "configmaps", src: src, db: store.Mirror(), metrics: m,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
	// A live watch from resourceVersion 1 that expires mid-stream.
	w.markSynced()
	go w.run(ctx, "1")
	select {
	case <-src.listing:
	case <-time.After(10 * time.Second):
		t.Fatal("no relist after the watch expired")
	}
	if w.synced.Load() || !w.behind.Load() {
		t.Errorf("synced %v, behind %v while relisting after an expired watch; want out of sync and behind", w.synced.Load(), w.behind.Load())
	}
	if got := testutil.ToFloat64(m.synced.WithLabelValues("configmaps")); got != 0 {
		t.Errorf("kubegcd_ingest_resource_synced = %v while relisting, want 0", got)
	}
	close(src.release)
	waitFor(t, 10*time.Second, func() error {
		if !w.synced.Load() {
			return errors.New("not synced after the relist")
		}
		return nil
	})
	cancel()
	<-w.done
}

// stalledSource is a resource whose watch does not start until release, as
// when client-go retries a connection the API server no longer answers.
type stalledSource struct {
	release chan struct{}
}

func (s stalledSource) list(context.Context, metav1.ListOptions) ([]runtime.Object, string, string, error) {
	return nil, "2", "", nil
}

func (s stalledSource) watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return watch.NewFake(), nil
}

// TestStalledWatchUnsyncs: a watch that cannot be resumed leaves the mirror
// behind the cluster, so the resource must leave sync once resuming takes
// longer than resumeGrace, and come back when the watch starts.
func TestStalledWatchUnsyncs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := dbtest.Open(t)
	res := configMapsIn(t, store)
	m := newMetrics(prometheus.NewRegistry())
	src := stalledSource{release: make(chan struct{})}
	w := &watcher{res: res, apiVersion: "v1", label: "configmaps", src: src, db: store.Mirror(), metrics: m,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
	w.markSynced() // as after a list, the watch of which broke
	go w.run(ctx, "1")
	waitFor(t, resumeGrace+5*time.Second, func() error {
		if w.synced.Load() || !w.behind.Load() {
			return errors.New("still synced (or not behind) while its watch does not start")
		}
		return nil
	})
	close(src.release)
	waitFor(t, 10*time.Second, func() error {
		if !w.synced.Load() || w.behind.Load() {
			return errors.New("not synced (or still behind) once its watch started")
		}
		return nil
	})
	cancel()
	<-w.done
}

// closedSource is a resource whose every watch is client-go's empty watch,
// closed at once: what a watch call returns when its retries of a broken
// connection have run out.
type closedSource struct{}

func (closedSource) list(context.Context, metav1.ListOptions) ([]runtime.Object, string, string, error) {
	return nil, "2", "", nil
}

func (closedSource) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

// TestEmptyWatchIsNoResume: an empty watch that closes at once never puts
// the resource back in sync, and counts as a failed watch.
func TestEmptyWatchIsNoResume(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := dbtest.Open(t)
	res := configMapsIn(t, store)
	m := newMetrics(prometheus.NewRegistry())
	w := &watcher{res: res, apiVersion: "v1", label: "configmaps", src: closedSource{}, db: store.Mirror(), metrics: m,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
	go w.run(ctx, "1")
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if w.synced.Load() {
			t.Fatal("synced by a watch that closed at once")
		}
	}
	if n := testutil.ToFloat64(m.errors.WithLabelValues("configmaps", "watch")); n < 1 {
		t.Errorf("errors{operation=watch} = %v, want at least 1", n)
	}
	cancel()
	<-w.done
}

// refusedSource is a resource the API server answers for with 503, as the
// aggregator does for an APIService whose server is down.
type refusedSource struct{}

func (refusedSource) list(context.Context, metav1.ListOptions) ([]runtime.Object, string, string, error) {
	return nil, "", "", apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
}

func (refusedSource) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
}

// TestBehindOrRefused: a resource the API server refuses to serve is out
// of sync but not behind (CaughtUp does not wait for it, so one failing API
// group does not hold the collector), while a watch that closes unanswered,
// as when the server cannot be reached, leaves it behind.
func TestBehindOrRefused(t *testing.T) {
	for _, tt := range []struct {
		name       string
		src        source
		wantBehind bool
	}{
		{"refused with 503", refusedSource{}, false},
		{"unreachable", closedSource{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			store := dbtest.Open(t)
			res := configMapsIn(t, store)
			m := newMetrics(prometheus.NewRegistry())
			w := &watcher{res: res, apiVersion: "v1", label: "configmaps", src: tt.src, db: store.Mirror(), metrics: m,
				log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
			go w.run(ctx, "1") // resuming, as after a broken watch
			waitFor(t, 10*time.Second, func() error {
				if w.synced.Load() || testutil.ToFloat64(m.errors.WithLabelValues("configmaps", "watch")) < 1 {
					return errors.New("no failed watch yet")
				}
				return nil
			})
			if got := w.behind.Load(); got != tt.wantBehind {
				t.Errorf("behind = %v, want %v", got, tt.wantBehind)
			}
			cancel()
			<-w.done
		})
	}
}
