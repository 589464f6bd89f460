// Package e2enodes runs the node-wide controllers, podgc and ttl, against a
// real etcd + kube-apiserver of their own: both act on the whole cluster
// (every terminated pod counts against the threshold, every node against
// the size band), so they cannot share a control plane with other tests.
// The tests run one after the other, and each removes the pods and nodes
// it made.
package e2enodes

import (
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

var (
	cluster *testcluster.Cluster
	kube    kubernetes.Interface
	// daemons start kubegcd against the cluster and wait until it is ready.
	daemons e2eutil.DaemonOptions
	// namespaces make each test's namespaces and force-remove their pods
	// at the end, so that no terminated or orphaned pod is left for the
	// next test's controllers.
	namespaces e2eutil.NamespaceOptions
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	cp, err := e2eutil.StartControlPlane(testcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2enodes: starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	cluster, kube = cp.Cluster, cp.Kube
	daemons = e2eutil.DaemonOptions{Kubeconfig: cluster.Kubeconfig, ReadyTimeout: time.Minute}
	namespaces = e2eutil.NamespaceOptions{Kube: kube, RemovePods: true}
	return m.Run()
}
