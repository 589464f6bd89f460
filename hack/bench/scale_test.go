package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// The scale benchmark, tiny: kwok runs its nodes and pods, kubegcd and
// kube-controller-manager sync and watch the heartbeats, and each collects
// the cascade, so the benchmark does not rot between runs of make bench.
func TestScaleBenchmarkRuns(t *testing.T) {
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
	sc := scaleConfig{nodes: 5, pods: 60, others: 200, cascadeDeployments: 2, cascadePods: 20,
		heartbeat: 10 * time.Second, workers: 8, gcWorkers: 8}
	if err := runScale(ctx, sc, cluster, dir); err != nil {
		t.Fatal(err)
	}
}
