package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// The referrers benchmark, tiny, with the build as its own baseline: each
// step creates its objects and both binaries sync them, so the benchmark
// does not rot between runs of make bench.
func TestReferrersBenchmarkRuns(t *testing.T) {
	testutil.NeedsControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cluster, err := testcluster.Start(ctx, testcluster.Options{Dir: filepath.Join(dir, "cluster"), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	}()
	bin, err := testcluster.KubegcdBin()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{workers: 8, refObjects: 40, refBaseline: bin, rounds: 1}
	if err := runReferrers(ctx, cfg, cluster, kube, bin, dir); err != nil {
		t.Fatal(err)
	}
	var pods int
	for i := range refNamespaces {
		list, err := kube.CoreV1().Pods(refNamespace(i)).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods += len(list.Items)
	}
	if pods != cfg.refObjects {
		t.Fatalf("the fixture made %d pods, want %d", pods, cfg.refObjects)
	}
}
