package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/testcluster"
	kgtest "github.com/kubegcd/kubegcd/internal/testutil"
)

var _ Mirror = db.Mirror{}

// sharedCluster is the control plane the tests that need one share,
// started by the first of them: the package's other tests run without one.
var sharedCluster struct {
	once sync.Once
	c    *testcluster.Cluster
	err  error
}

// controlPlane returns the shared control plane, started on first use.
// Frequent compaction, and no watch cache for configmaps (which would
// otherwise serve old resourceVersions from its own window), let a test
// reach a resourceVersion etcd no longer has: a watch from it expires
// (410) as watches of a lagging client do in real clusters.
func controlPlane(t *testing.T) *testcluster.Cluster {
	t.Helper()
	kgtest.NeedsControlPlane(t)
	sharedCluster.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sharedCluster.c, sharedCluster.err = testcluster.Start(ctx, testcluster.Options{
			APIServerArgs: []string{"--etcd-compaction-interval=2s", "--watch-cache-sizes=configmaps#0"}})
	})
	if sharedCluster.err != nil {
		t.Fatalf("starting the control plane: %v", sharedCluster.err)
	}
	return sharedCluster.c
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedCluster.c != nil {
		if err := sharedCluster.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "ingest: stopping the control plane:", err)
		}
	}
	os.Exit(code)
}

// offlineConfig is a rest config for tests whose clients never reach a
// server.
var offlineConfig = &rest.Config{Host: "https://127.0.0.1:1"}

// TestExpiredWatchRelists starts a watch from a resourceVersion the API
// server no longer has (410 Gone): the watcher must relist and drop what
// vanished meanwhile.
func TestExpiredWatchRelists(t *testing.T) {
	cluster := controlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cluster.Config)
	cm, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Wait until resourceVersion 1 has been compacted away.
	deadline := time.Now().Add(30 * time.Second)
	for {
		w, err := kube.CoreV1().ConfigMaps("").Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
		if err == nil {
			ev := <-w.ResultChan()
			w.Stop()
			if ev.Type == watch.Error && apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
				break
			}
		} else if isExpired(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("resourceVersion 1 was not compacted within 30s (last err %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	store := dbtest.Open(t)
	reg := prometheus.NewRegistry()
	ing, err := New(Options{Config: cluster.Config, DB: store.Mirror(), Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	ghost := &db.Object{UID: "ghost-uid", APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "ghost", ResourceVersion: "1"}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Object: ghost}}); err != nil {
		t.Fatal(err)
	}

	var deleted []string
	ing.Subscribe(func(changes []db.Change) {
		for _, c := range changes {
			if c.Type == db.ChangeDeleted {
				deleted = append(deleted, c.UID)
			}
		}
	})
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if err := ing.startWatcher(ctx, gvr, resourceInfo{kind: "ConfigMap", namespaced: true}, "1"); err != nil {
		t.Fatal(err)
	}
	defer ing.stopAll()

	deadline = time.Now().Add(20 * time.Second)
	for {
		_, ghostErr := store.Objects().GetObject(ctx, "ghost-uid")
		_, survivorErr := store.Objects().GetObject(ctx, string(cm.UID))
		if errors.Is(ghostErr, db.ErrNotFound) && survivorErr == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after an expired watch: ghost err %v, survivor err %v", ghostErr, survivorErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := testutil.ToFloat64(ing.metrics.relists.WithLabelValues("configmaps", "expired")); n != 1 {
		t.Errorf("relists{reason=expired} = %v, want 1", n)
	}
	ing.stopAll()
	if len(deleted) != 1 || deleted[0] != "ghost-uid" {
		t.Errorf("deletions notified: %v, want [ghost-uid]", deleted)
	}
}

func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	store := dbtest.Open(t, db.Options{Registerer: reg})
	ing, err := New(Options{Config: offlineConfig, DB: store.Mirror(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ing.metrics.events.WithLabelValues("configmaps", "added").Inc()
	ing.metrics.errors.WithLabelValues("configmaps", "watch").Inc()
	ing.metrics.relists.WithLabelValues("configmaps", "expired").Inc()
	ing.metrics.synced.WithLabelValues("configmaps").Set(1)
	ing.metrics.discoveryFailed.WithLabelValues("dead.example.com/v1").Set(1)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric %s: %s", p.Metric, p.Text)
	}
}

// TestDiscoveryKeepsShortNames reads the real API server's discovery: the
// short names it lists reach the resources table, where lookups by kind
// accept them (cm, deploy).
func TestDiscoveryKeepsShortNames(t *testing.T) {
	cluster := controlPlane(t)
	found, failed, err := deletableResources(discovery.NewDiscoveryClientForConfigOrDie(cluster.Config))
	if err != nil || len(failed) > 0 {
		t.Fatalf("discovery: %v, failed groups %v", err, failed)
	}
	for gvr, want := range map[schema.GroupVersionResource][]string{
		{Version: "v1", Resource: "configmaps"}:                 {"cm"},
		{Group: "apps", Version: "v1", Resource: "deployments"}: {"deploy"},
		{Version: "v1", Resource: "secrets"}:                    nil,
	} {
		if got := found[gvr].shortNames; !slices.Equal(got, want) {
			t.Errorf("%s: short names %q, want %q", gvr, got, want)
		}
	}
}

// TestDiscoveryFailedMetric: the metric names the group/versions of the
// last discovery's failures, and only those.
func TestDiscoveryFailedMetric(t *testing.T) {
	store := dbtest.Open(t)
	ing, err := New(Options{Config: offlineConfig, DB: store.Mirror(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	dead := schema.GroupVersion{Group: "dead.example.com", Version: "v1"}
	ing.setDiscoveryFailures(map[schema.GroupVersion]error{dead: errors.New("the server is currently unable to handle the request")})
	if n := testutil.CollectAndCount(ing.metrics.discoveryFailed); n != 1 {
		t.Errorf("%d series while one group fails, want 1", n)
	}
	if v := testutil.ToFloat64(ing.metrics.discoveryFailed.WithLabelValues("dead.example.com/v1")); v != 1 {
		t.Errorf("kubegcd_ingest_discovery_failed{group_version=dead.example.com/v1} = %v, want 1", v)
	}
	ing.setDiscoveryFailures(nil)
	if n := testutil.CollectAndCount(ing.metrics.discoveryFailed); n != 0 {
		t.Errorf("%d series once discovery succeeds, want 0", n)
	}
}
