// Package e2einstall installs kubegcd on a real etcd + kube-apiserver of
// its own (RBAC on), as an operator does: kubegcd cluster add gives it its
// identity, kubegcd runs with nothing but the kubeconfig it wrote, cluster
// remove takes the identity away, and the template unit kubegcd@.service
// runs two instances side by side. cluster add applies objects of fixed
// names in kube-system, so the tests run one after another.
package e2einstall

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegcd/kubegcd/internal/app"
	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

var (
	cluster *testcluster.Cluster
	kube    kubernetes.Interface
	// adminKubeconfig is the caller's kubeconfig of cluster add: the
	// admin's token, and the API server's CA in a file, as a kubeconfig
	// from a real cluster names it.
	adminKubeconfig string
	// caPEM is that file's content, which a written kubeconfig carries.
	caPEM      []byte
	kubegcdBin string
	namespaces e2eutil.NamespaceOptions
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	cp, err := e2eutil.StartControlPlane(testcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2einstall: starting the control plane:", err)
		return 1
	}
	defer cp.Stop()
	cluster, kube = cp.Cluster, cp.Kube
	namespaces = e2eutil.NamespaceOptions{Kube: kube}

	dir, err := os.MkdirTemp("", "kubegcd-e2einstall-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2einstall:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := writeAdminKubeconfig(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2einstall:", err)
		return 1
	}
	kubegcdBin = filepath.Join(dir, "kubegcd")
	build := exec.Command("go", "build", "-o", kubegcdBin, "github.com/kubegcd/kubegcd/cmd/kubegcd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2einstall: building kubegcd:", err)
		return 1
	}
	return m.Run()
}

// writeAdminKubeconfig writes adminKubeconfig: the test cluster's own
// skips the server's certificate, which kube-apiserver signed with a CA of
// its own in its --cert-dir (the serving certificate, then the CA's).
func writeAdminKubeconfig(dir string) error {
	var err error
	caFile := filepath.Join(cluster.Dir, "certs", "apiserver.crt")
	if caPEM, err = os.ReadFile(caFile); err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	// A context that is not current: cluster add must take --context's.
	kc.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cluster.Config.Host, CertificateAuthority: caFile}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cluster.Token}
	kc.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "elsewhere", AuthInfo: "admin"}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "elsewhere"
	adminKubeconfig = filepath.Join(dir, "admin.kubeconfig")
	return clientcmd.WriteToFile(*kc, adminKubeconfig)
}

// clusterCmd runs kubegcd cluster with args, the admin's kubeconfig and
// its context test, as the binary does, and returns its output; it fails
// the test unless it exits 0.
func clusterCmd(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	full := append(append([]string{"cluster"}, args...), "--kubeconfig", adminKubeconfig, "--context", "test")
	if code := app.Main(ctx, full, &out, &errs); code != 0 {
		t.Fatalf("kubegcd %v: exit %d\n%s%s", full, code, out.String(), errs.String())
	}
	if errs.Len() > 0 {
		t.Errorf("kubegcd %v wrote to stderr:\n%s", full, errs.String())
	}
	t.Logf("kubegcd %v:\n%s", full, out.String())
	return out.String()
}
