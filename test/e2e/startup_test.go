package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestStartupTimeoutNamesTheRefusal: a kubeconfig the API server answers
// but does not let kubegcd work with ends the start at --startup-timeout,
// exit 1, in one line that gives the status code and what to do. The
// test cluster authorizes with RBAC and lets anonymous requests in, as
// kube-apiserver does by default. A kubeconfig without credentials is
// system:anonymous, who may read /version but not discover the API. A
// user bound to no role may discover the API but not list anything.
func TestStartupTimeoutNamesTheRefusal(t *testing.T) {
	t.Parallel()
	const timeout = 5 * time.Second
	tests := []struct {
		name       string
		kubeconfig func(*clientcmdapi.Config)
		want       []string
	}{
		{name: "anonymous", kubeconfig: func(c *clientcmdapi.Config) {
			for _, a := range c.AuthInfos {
				a.Token = ""
			}
		}, want: []string{"403 Forbidden", `"system:anonymous"`,
			"the kubeconfig authenticates as system:anonymous: give it a token or client certificate"}},
		{name: "no role bound", kubeconfig: func(c *clientcmdapi.Config) {
			for _, a := range c.AuthInfos {
				a.Impersonate = "kubegcd-e2e-unbound"
			}
		}, want: []string{"403 Forbidden", `"kubegcd-e2e-unbound"`, "deploy/clusterrole.yaml"}},
		{name: "unreachable", kubeconfig: func(c *clientcmdapi.Config) {
			for _, cl := range c.Clusters {
				cl.Server = "https://127.0.0.1:1"
			}
		}, want: []string{"cannot reach the API server at https://127.0.0.1:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kc, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			tc.kubeconfig(kc)
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := clientcmd.WriteToFile(*kc, path); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, _, stderr := runBinary(t, timeout+30*time.Second, "run", "--kubeconfig", path,
				"--db", filepath.Join(t.TempDir(), "k.db"), "--listen", freeAddr(t), "--startup-timeout", timeout.String())
			took := time.Since(start)
			t.Logf("exit %d after %s: %s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
			if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "kubegcd: ") {
				t.Fatalf("exit %d after %s, stderr %q; want 1 and one line", code, took.Round(time.Millisecond), stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			// The start gives up at the timeout, not before it nor long after.
			// The margin covers the process's own start on a busy machine.
			if took < timeout || took > timeout+8*time.Second {
				t.Errorf("exited after %s, want within 8s after --startup-timeout %s", took.Round(time.Millisecond), timeout)
			}
		})
	}
}
