// Package e2elease runs kubegcd against a real etcd + kube-apiserver of its
// own, started with coordinated leader election on: the
// CoordinatedLeaderElection feature gate, and coordination.k8s.io/v1beta1
// served for LeaseCandidates. kube-apiserver then elects the holders of
// coordinated Leases and collects expired LeaseCandidates itself. The
// suites on the default control plane show the same features off. API
// Priority and Fairness is on here, as in a real cluster, so that the
// shipped FlowSchema can be checked; the default control plane turns it off
// for the benchmarks' load.
package e2elease

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
	// namespaces make each test's namespaces.
	namespaces e2eutil.NamespaceOptions
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	cp, err := e2eutil.StartControlPlane(testcluster.Options{CoordinatedLeaderElection: true,
		APIServerArgs: []string{"--enable-priority-and-fairness=true"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2elease: starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	cluster, kube = cp.Cluster, cp.Kube
	daemons = e2eutil.DaemonOptions{Kubeconfig: cluster.Kubeconfig, ReadyTimeout: time.Minute}
	namespaces = e2eutil.NamespaceOptions{Kube: kube}
	code := m.Run()
	fmt.Print(e2eutil.ContractCounts())
	return code
}
