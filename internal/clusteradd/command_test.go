package clusteradd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// testCA stands for a cluster's CA certificate: the written kubeconfig
// must carry these bytes.
const testCA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"

// fixture is a fake cluster and a caller's kubeconfig for it, with its CA
// in a file beside it.
type fixture struct {
	cs         *fake.Clientset
	dir        string
	kubeconfig string
	// tokens counts the TokenRequests the cluster answered.
	tokens int
	// noTokenController leaves token Secrets empty.
	noTokenController bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{cs: fake.NewClientset(), dir: t.TempDir()}
	// The token controller: a token Secret gets its token once created.
	f.cs.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret)
		if s.Type == corev1.SecretTypeServiceAccountToken && !f.noTokenController {
			s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte("secret-token")}
		}
		return false, nil, nil
	})
	f.cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		f.tokens++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		tr.Status = authenticationv1.TokenRequestStatus{Token: "requested-token-" + string(rune('0'+f.tokens)),
			ExpirationTimestamp: metav1.NewTime(testNow.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
		return true, tr, nil
	})
	ca := filepath.Join(f.dir, "ca.crt")
	if err := os.WriteFile(ca, []byte(testCA), 0o644); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["prod-cluster"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443", CertificateAuthority: ca}
	kc.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other.example:6443", InsecureSkipTLSVerify: true}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
	kc.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod-cluster", AuthInfo: "admin"}
	kc.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "admin"}
	kc.CurrentContext = "other"
	f.kubeconfig = filepath.Join(f.dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, f.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return f
}

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// run runs kubegcd cluster with args against the fixture's cluster, as
// cmdline.Execute runs every command, and returns the exit code and what
// it wrote.
func (f *fixture) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	e := &env{stdout: &out, stderr: &errs, now: func() time.Time { return testNow }, tokenWait: time.Second,
		tokenPoll: 10 * time.Millisecond, portFree: func(int) bool { return true },
		newClient: func(*rest.Config) (kubernetes.Interface, error) { return f.cs, nil },
		authenticates: func(_ context.Context, cfg *rest.Config) (string, error) {
			if cfg.BearerToken == "" {
				return "", errors.New("no token")
			}
			return "system:serviceaccount:kube-system:kubegcd", nil
		}}
	root := &cobra.Command{Use: "kubegcd", Args: cmdline.RejectCommand}
	root.AddCommand(e.command())
	code = cmdline.Execute(context.Background(), root, append([]string{"cluster"}, args...), &errs, nil)
	return code, out.String(), errs.String()
}

func TestAddTwiceChangesNothing(t *testing.T) {
	f := newFixture(t)
	etc := filepath.Join(f.dir, "etc")
	args := []string{"add", "--kubeconfig", f.kubeconfig, "--context", "prod", "--config-dir", etc, "--name", "prod"}
	code, out, errs := f.run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	kcPath, confPath := filepath.Join(etc, "prod.kubeconfig"), filepath.Join(etc, "prod.conf")
	want := `ServiceAccount kube-system/kubegcd: created
ClusterRole kubegcd: created
ClusterRoleBinding kubegcd: created
Role kube-system/kubegcd-leader-election: created
RoleBinding kube-system/kubegcd-leader-election: created
Secret kube-system/kubegcd-token: created
token: from Secret kube-system/kubegcd-token (kubernetes.io/service-account-token); it does not expire: kubegcd cluster remove revokes it
` + kcPath + `: created (mode 0600; context prod, server https://prod.example:6443, the cluster's CA inline)
` + confPath + `: created (listen 127.0.0.1:8080, db /var/lib/kubegcd/prod/kubegcd.db)
run it: kubegcd run --config ` + confPath + ` --kubeconfig ` + kcPath + `
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("first run (-want +got):\n%s", diff)
	}
	written := readKubeconfig(t, kcPath)

	code, out, errs = f.run(t, args...)
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, errs)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "token:") || strings.HasPrefix(line, "run it:") {
			continue
		}
		if !strings.Contains(line, ": unchanged") && line != "nothing changed" {
			t.Errorf("second run: %q, want unchanged", line)
		}
	}
	if !strings.Contains(out, "\nnothing changed\n") {
		t.Errorf("the second run does not say that nothing changed:\n%s", out)
	}
	if diff := cmp.Diff(written, readKubeconfig(t, kcPath)); diff != "" {
		t.Errorf("the second run changed the kubeconfig (-first +second):\n%s", diff)
	}

	// Drift is put right, and said so.
	ctx := context.Background()
	cr, _ := f.cs.RbacV1().ClusterRoles().Get(ctx, "kubegcd", metav1.GetOptions{})
	cr.Rules = cr.Rules[:1]
	if _, err := f.cs.RbacV1().ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb, _ := f.cs.RbacV1().ClusterRoleBindings().Get(ctx, "kubegcd", metav1.GetOptions{})
	crb.RoleRef.Name = "cluster-admin"
	if _, err := f.cs.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, out, _ = f.run(t, args...)
	for _, want := range []string{"ClusterRole kubegcd: updated\n", "ClusterRoleBinding kubegcd: replaced\n", "ServiceAccount kube-system/kubegcd: unchanged\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("after drift the run does not say %q:\n%s", want, out)
		}
	}
	if crb, _ := f.cs.RbacV1().ClusterRoleBindings().Get(ctx, "kubegcd", metav1.GetOptions{}); crb.RoleRef.Name != "kubegcd" {
		t.Errorf("ClusterRoleBinding refers to %s after the run, want kubegcd", crb.RoleRef.Name)
	}
	if strings.Contains(out, "nothing changed") {
		t.Errorf("a run that changed objects says nothing changed:\n%s", out)
	}
}

// readKubeconfig reads a kubeconfig cluster add wrote, checking its mode.
func readKubeconfig(t *testing.T, path string) *clientcmdapi.Config {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, st.Mode().Perm())
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func TestWrittenKubeconfig(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(f.dir, "out", "kubegcd.kubeconfig")
	code, stdout, errs := f.run(t, "add", "--kubeconfig", f.kubeconfig, "--context", "prod", "--out", out, "--token-duration", "24h")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	kc := readKubeconfig(t, out)
	want := clientcmdapi.NewConfig()
	want.Clusters["prod-cluster"] = &clientcmdapi.Cluster{Server: "https://prod.example:6443", CertificateAuthorityData: []byte(testCA),
		LocationOfOrigin: out, Extensions: map[string]runtime.Object{}}
	want.AuthInfos["kubegcd"] = &clientcmdapi.AuthInfo{Token: "requested-token-1", LocationOfOrigin: out, Extensions: map[string]runtime.Object{}}
	want.Contexts["prod"] = &clientcmdapi.Context{Cluster: "prod-cluster", AuthInfo: "kubegcd", LocationOfOrigin: out, Extensions: map[string]runtime.Object{}}
	want.CurrentContext = "prod"
	if diff := cmp.Diff(want, kc); diff != "" {
		t.Errorf("written kubeconfig (-want +got):\n%s", diff)
	}
	// TokenRequest: it says so, and when the token expires.
	wantLine := "token: from a TokenRequest for ServiceAccount kube-system/kubegcd; it expires at 2026-11-30T12:00:00Z (in 24h0m0s); run cluster add again before then\n"
	if !strings.Contains(stdout, wantLine) {
		t.Errorf("output lacks %q:\n%s", wantLine, stdout)
	}
	if strings.Contains(stdout, "Secret kube-system/kubegcd-token") {
		t.Errorf("a TokenRequest run applied the token Secret:\n%s", stdout)
	}
	if !strings.HasSuffix(stdout, "run it: kubegcd run --kubeconfig "+out+"\n") {
		t.Errorf("output does not end saying how to run kubegcd with %s:\n%s", out, stdout)
	}

	// Again: the objects are unchanged, the token is new.
	_, stdout, _ = f.run(t, "add", "--kubeconfig", f.kubeconfig, "--context", "prod", "--out", out, "--token-duration", "24h")
	if !strings.Contains(stdout, out+": updated") || readKubeconfig(t, out).AuthInfos["kubegcd"].Token != "requested-token-2" {
		t.Errorf("a second TokenRequest run did not write its new token:\n%s", stdout)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	f := newFixture(t)
	etc := filepath.Join(f.dir, "etc")
	code, out, errs := f.run(t, "add", "--dry-run", "--kubeconfig", f.kubeconfig, "--config-dir", etc, "--name", "prod")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m, _ := shippedManifests(true)
	want, _ := m.YAML()
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	if len(f.cs.Actions()) != 0 {
		t.Errorf("a dry run asked the cluster: %v", f.cs.Actions())
	}
	if _, err := os.Stat(etc); err == nil {
		t.Errorf("a dry run made %s", etc)
	}

	// With --no-secrets it asks discovery, and only discovery.
	f.cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps"}, {Name: "secrets"}}}}
	code, out, errs = f.run(t, "add", "--dry-run", "--no-secrets", "--kubeconfig", f.kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "  - configmaps\n") || strings.Contains(out, "  - secrets\n") || strings.Contains(out, "'*'") {
		t.Errorf("--no-secrets --dry-run printed no role narrowed to configmaps:\n%s", out)
	}
	for _, a := range f.cs.Actions() {
		if r := a.GetResource().Resource; a.GetVerb() != "get" || r != "group" && r != "resource" {
			t.Errorf("a dry run sent %s %s", a.GetVerb(), a.GetResource())
		}
	}
}

func TestNoSecretsApplied(t *testing.T) {
	f := newFixture(t)
	f.cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps"}, {Name: "secrets"}, {Name: "pods"}}}}
	args := []string{"add", "--no-secrets", "--kubeconfig", f.kubeconfig, "--out", filepath.Join(f.dir, "kc"), "--token-duration", "1h"}
	if code, _, errs := f.run(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	cr, err := f.cs.RbacV1().ClusterRoles().Get(context.Background(), "kubegcd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cr.Rules {
		for _, res := range r.Resources {
			if res == "secrets" || res == "*" {
				t.Errorf("the --no-secrets role grants %s on %s", r.Verbs, res)
			}
		}
	}
	// Again without: the shipped role comes back.
	_, out, _ := f.run(t, append([]string{"add"}, args[2:]...)...)
	if !strings.Contains(out, "ClusterRole kubegcd: updated\n") {
		t.Errorf("a run without --no-secrets does not put the shipped role back:\n%s", out)
	}
}

func TestRemove(t *testing.T) {
	f := newFixture(t)
	etc := filepath.Join(f.dir, "etc")
	common := []string{"--kubeconfig", f.kubeconfig, "--config-dir", etc, "--name", "prod"}
	if code, _, errs := f.run(t, append([]string{"add"}, common...)...); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	code, out, errs := f.run(t, append([]string{"remove"}, common...)...)
	if code != 0 {
		t.Fatalf("remove: exit %d: %s", code, errs)
	}
	want := `Secret kube-system/kubegcd-token: deleted
RoleBinding kube-system/kubegcd-leader-election: deleted
Role kube-system/kubegcd-leader-election: deleted
ClusterRoleBinding kubegcd: deleted
ClusterRole kubegcd: deleted
ServiceAccount kube-system/kubegcd: deleted
` + filepath.Join(etc, "prod.kubeconfig") + `: deleted
` + filepath.Join(etc, "prod.conf") + `: deleted
stop the instance if it runs: systemctl disable --now kubegcd@prod
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("remove (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(etc)
	if len(entries) != 0 {
		t.Errorf("%s holds %v after remove", etc, entries)
	}
	ctx := context.Background()
	if l, _ := f.cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("ClusterRoles left: %v", l.Items)
	}
	if l, _ := f.cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("ServiceAccounts left: %v", l.Items)
	}

	_, out, _ = f.run(t, append([]string{"remove"}, common...)...)
	if !strings.Contains(out, "ClusterRole kubegcd: not found\n") || !strings.Contains(out, "\nnothing to remove\n") {
		t.Errorf("a second remove does not say there was nothing to remove:\n%s", out)
	}
}

// TestUsageErrors: one line, exit 2, before anything is asked of the
// cluster or written.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "kubegcd: cluster needs a command: add or remove (see 'kubegcd help cluster')\n"},
		{"unknown command", []string{"ad"}, `kubegcd: unknown command "ad", did you mean "add"? (see 'kubegcd help cluster')` + "\n"},
		{"argument", []string{"add", "prod"}, `kubegcd: unexpected argument "prod" (see 'kubegcd help cluster add')` + "\n"},
		{"bad name", []string{"add", "--name", "Prod/1"}, `kubegcd: invalid --name "Prod/1": want lower-case letters`},
		{"the single instance's name", []string{"add", "--name", "kubegcd"}, "kubegcd: --name kubegcd: kubegcd.conf is kubegcd.service's"},
		{"short token", []string{"add", "--token-duration", "5m"}, "kubegcd: --token-duration 5m0s: want at least 10m0s"},
		{"bad duration", []string{"add", "--token-duration", "a day"}, `kubegcd: invalid --token-duration "a day": want a duration`},
		{"no such context", []string{"add", "--context", "prd"}, "kubegcd: --context prd: no such context in the kubeconfig (contexts: other, prod)"},
		{"the caller's kubeconfig", []string{"add", "--out", "KUBECONFIG"}, "is the kubeconfig cluster add reads: choose another file with --out"},
		{"remove: bad name", []string{"remove", "--name", "-x"}, `kubegcd: invalid --name "-x": want`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			args := append([]string(nil), tt.args...)
			for i, a := range args {
				if a == "KUBECONFIG" {
					args[i] = f.kubeconfig
				}
			}
			if len(args) > 0 && (args[0] == "add" || args[0] == "remove") {
				args = append(args, "--kubeconfig", f.kubeconfig, "--config-dir", filepath.Join(f.dir, "etc"))
			}
			code, out, errs := f.run(t, args...)
			if code != 2 || !strings.HasPrefix(errs, tt.want) && !strings.Contains(errs, tt.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line with %q", code, errs, tt.want)
			}
			if out != "" || len(f.cs.Actions()) != 0 {
				t.Errorf("a usage error printed %q and asked the cluster %v", out, f.cs.Actions())
			}
		})
	}
}

func TestNoKubeconfig(t *testing.T) {
	f := newFixture(t)
	t.Setenv("KUBECONFIG", filepath.Join(f.dir, "none"))
	t.Setenv("HOME", f.dir)
	code, _, errs := f.run(t, "add", "--out", filepath.Join(f.dir, "kc"))
	want := "kubegcd: no kubeconfig to read (--kubeconfig, $KUBECONFIG, ~/.kube/config): cluster add needs your own, with rights to create roles\n"
	if code != 1 || errs != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs, want)
	}
}

// TestNotWritable: a kubeconfig that cannot be written is said before the
// cluster is changed.
func TestNotWritable(t *testing.T) {
	// A file where the directory should be: even root cannot write there.
	f := newFixture(t)
	blocker := filepath.Join(f.dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := f.run(t, "add", "--kubeconfig", f.kubeconfig, "--out", filepath.Join(blocker, "kubeconfig"))
	if code != 1 || !strings.HasPrefix(errs, "kubegcd: cannot write "+filepath.Join(blocker, "kubeconfig")+": ") ||
		!strings.HasSuffix(errs, "(run as root, or choose another file with --out)\n") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if len(f.cs.Actions()) != 0 {
		t.Errorf("the cluster was changed before the write failed: %v", f.cs.Actions())
	}
}

func TestTokenSecretNeverFilled(t *testing.T) {
	f := newFixture(t)
	f.noTokenController = true
	code, _, errs := f.run(t, "add", "--kubeconfig", f.kubeconfig, "--out", filepath.Join(f.dir, "kc"))
	want := "kubegcd: the Secret kube-system/kubegcd-token has no token after 1s: kube-controller-manager's token controller fills it; " +
		"without one, ask for a TokenRequest token with --token-duration\n"
	if code != 1 || errs != want {
		t.Errorf("exit %d, stderr %q, want 1 and %q", code, errs, want)
	}
}

func TestSecretOfAnotherTypeIsReplaced(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.cs.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubegcd-token",
		Namespace: "kube-system"}, Type: corev1.SecretTypeOpaque}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, out, errs := f.run(t, "add", "--kubeconfig", f.kubeconfig, "--out", filepath.Join(f.dir, "kc"))
	if !strings.Contains(out, "Secret kube-system/kubegcd-token: replaced\n") {
		t.Errorf("output %q (%s), want the Secret replaced", out, errs)
	}
	s, _ := f.cs.CoreV1().Secrets("kube-system").Get(ctx, "kubegcd-token", metav1.GetOptions{})
	if s.Type != corev1.SecretTypeServiceAccountToken {
		t.Errorf("Secret type %s after the run", s.Type)
	}
}
