package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// benchEnv is what a tiny run of a benchmark needs: a control plane of its
// own, kubegcd's binary, a client, a directory and a deadline.
type benchEnv struct {
	ctx     context.Context
	dir     string
	cluster *testcluster.Cluster
	bin     string
	kube    kubernetes.Interface
}

// startBenchEnv starts a control plane for t, stopped when t ends, and
// gives the run five minutes.
func startBenchEnv(t *testing.T) benchEnv {
	t.Helper()
	testutil.NeedsControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := benchEnv{ctx: ctx, dir: t.TempDir()}
	var err error
	if e.cluster, err = testcluster.Start(ctx, testcluster.Options{Dir: filepath.Join(e.dir, "cluster"), Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	if e.bin, err = testcluster.KubegcdBin(); err != nil {
		t.Fatal(err)
	}
	if e.kube, err = kubernetes.NewForConfig(e.cluster.Config); err != nil {
		t.Fatal(err)
	}
	return e
}
