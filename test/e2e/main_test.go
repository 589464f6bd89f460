// Package e2e runs kubegcd against a real etcd + kube-apiserver. One control
// plane serves the whole package; each test works in its own namespace and
// runs its own kubegcd (in-process through app.Main, or the built binary
// where exit codes and signals matter).
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

var (
	cluster    *testcluster.Cluster
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	meta       metadata.Interface
	kubegcdBin string
	// auditLog is the API server's log of deletions.
	auditLog string
	// daemons start kubegcd against the cluster, checking that an
	// enforcing one runs alone (see mustEnforceAlone).
	daemons e2eutil.DaemonOptions
	// namespaces make each test's namespaces; a test that fails logs the
	// deletions the API server recorded in them.
	namespaces e2eutil.NamespaceOptions
)

// deletionsAuditPolicy logs every deletion, with who sent it, and nothing
// else.
const deletionsAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["delete", "deletecollection"]
- level: None
`

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// The API server logs who deleted what, so that a test whose objects
	// vanish can say who took them (see namespaces).
	auditDir, err := os.MkdirTemp("", "kubegcd-e2e-audit-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(auditDir)
	policy := filepath.Join(auditDir, "policy.yaml")
	auditLog = filepath.Join(auditDir, "audit.log")
	if err := os.WriteFile(policy, []byte(deletionsAuditPolicy), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	cp, err := e2eutil.StartControlPlane(testcluster.Options{APIServerArgs: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog, "--audit-log-format=json"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	cluster, kube, dyn, meta = cp.Cluster, cp.Kube, cp.Dyn, cp.Meta
	daemons = e2eutil.DaemonOptions{Kubeconfig: cluster.Kubeconfig, Check: mustEnforceAlone}
	namespaces = e2eutil.NamespaceOptions{Kube: kube, AuditLog: auditLog}

	binDir, err := os.MkdirTemp("", "kubegcd-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(binDir)
	kubegcdBin = filepath.Join(binDir, "kubegcd")
	build := exec.Command("go", "build", "-o", kubegcdBin, "github.com/kubegcd/kubegcd/cmd/kubegcd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building kubegcd:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := installWidgetCRD(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: installing the test CRD:", err)
		return 1
	}
	code := m.Run()
	// Every answer read through a daemon's client was checked against the
	// API's OpenAPI document: say how many, of which endpoints.
	fmt.Print(e2eutil.ContractCounts())
	return code
}
