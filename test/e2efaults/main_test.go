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

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

var (
	cluster *testcluster.Cluster
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	meta    metadata.Interface
	// namespaces make each test's namespaces, with a random suffix.
	namespaces e2eutil.NamespaceOptions
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	cp, err := e2eutil.StartControlPlane(testcluster.Options{APIServerArgs: []string{"--watch-cache=false"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2efaults: starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	cluster, kube, dyn, meta = cp.Cluster, cp.Kube, cp.Dyn, cp.Meta
	namespaces = e2eutil.NamespaceOptions{Kube: kube, RandomSuffix: true}
	if err := createRoles(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "e2efaults:", err)
		return 1
	}
	return m.Run()
}
