// Package e2efaults drives kubegcd through the faults of a real control
// plane, each test ending in kubegcd having stopped acting and said so,
// then recovering: the API server unreachable, one aggregated API group
// failing discovery, watches expiring (410 Gone) and the leader's Lease
// taken. It runs its own etcd and kube-apiserver, so that cutting,
// compacting and stealing never disturb the tests of other packages.
//
// The API server runs without its watch cache: watches then read etcd
// directly, and a watch resumed from a compacted revision really gets 410,
// as a lagging client's does in a real cluster.
package e2efaults

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

var (
	cluster *testcluster.Cluster
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	meta    metadata.Interface
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	cluster, err = testcluster.Start(ctx, testcluster.Options{APIServerArgs: []string{"--watch-cache=false"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2efaults: starting the control plane:", err)
		return 1
	}
	defer cluster.Stop()
	kube = kubernetes.NewForConfigOrDie(cluster.Config)
	dyn = dynamic.NewForConfigOrDie(cluster.Config)
	meta = metadata.NewForConfigOrDie(cluster.Config)
	if err := createRoles(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2efaults:", err)
		return 1
	}
	return m.Run()
}
