package e2einstall

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// added are the objects cluster add applies, as its lines name them, and
// how to read each back.
var added = []struct {
	name string
	get  func(ctx context.Context) (metav1.Object, error)
}{
	{"ServiceAccount kube-system/kubegcd", func(ctx context.Context) (metav1.Object, error) {
		return kube.CoreV1().ServiceAccounts("kube-system").Get(ctx, "kubegcd", metav1.GetOptions{})
	}},
	{"ClusterRole kubegcd", func(ctx context.Context) (metav1.Object, error) {
		return kube.RbacV1().ClusterRoles().Get(ctx, "kubegcd", metav1.GetOptions{})
	}},
	{"ClusterRoleBinding kubegcd", func(ctx context.Context) (metav1.Object, error) {
		return kube.RbacV1().ClusterRoleBindings().Get(ctx, "kubegcd", metav1.GetOptions{})
	}},
	{"Role kube-system/kubegcd-leader-election", func(ctx context.Context) (metav1.Object, error) {
		return kube.RbacV1().Roles("kube-system").Get(ctx, "kubegcd-leader-election", metav1.GetOptions{})
	}},
	{"RoleBinding kube-system/kubegcd-leader-election", func(ctx context.Context) (metav1.Object, error) {
		return kube.RbacV1().RoleBindings("kube-system").Get(ctx, "kubegcd-leader-election", metav1.GetOptions{})
	}},
	{"Secret kube-system/kubegcd-token", func(ctx context.Context) (metav1.Object, error) {
		return kube.CoreV1().Secrets("kube-system").Get(ctx, "kubegcd-token", metav1.GetOptions{})
	}},
}

// resourceVersions are the resourceVersions of the objects cluster add
// applied, by name; an object that is not there is left out.
func resourceVersions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range added {
		o, err := a.get(context.Background())
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Fatalf("%s: %v", a.name, err)
		default:
			out[a.name] = o.GetResourceVersion()
		}
	}
	return out
}

// TestClusterAddThenRemove: cluster add with a Secret's token (the token
// controller of kube-controller-manager runs, alone); kubegcd, enforcing,
// with only the kubeconfig add wrote, syncs without a refusal and collects
// an orphan; a second add changes nothing and says so; remove leaves none of
// it behind, and the token no longer authenticates.
func TestClusterAddThenRemove(t *testing.T) {
	ctx := context.Background()
	stop, err := cluster.StartControllerManager(ctx, "--controllers=serviceaccount-token")
	if err != nil {
		t.Fatalf("starting kube-controller-manager: %v", err)
	}
	defer stop()
	written := filepath.Join(t.TempDir(), "kubegcd.kubeconfig")
	out := clusterCmd(t, "add", "--out", written)
	t.Cleanup(func() { clusterCmd(t, "remove", "--out", written) })
	for _, a := range added {
		if !strings.Contains(out, a.name+": created\n") {
			t.Errorf("cluster add does not say it created %s:\n%s", a.name, out)
		}
	}
	if !strings.Contains(out, "token: from Secret kube-system/kubegcd-token (kubernetes.io/service-account-token); it does not expire") {
		t.Errorf("cluster add does not say the token is a Secret's, which does not expire:\n%s", out)
	}
	kc := checkKubeconfig(t, written)

	// kubegcd with that kubeconfig alone.
	ns := namespaces.New(t, "add")
	d := e2eutil.DaemonOptions{Kubeconfig: written}.Start(t, "", "--dry-run=false", "--resync-period=1s")
	d.WaitReady(t, time.Minute)
	orphanCollected(t, d, ns, "orphan")
	if logs := d.Logs.String(); strings.Contains(strings.ToLower(logs), "forbidden") {
		t.Errorf("a request of kubegcd was refused:\n%s", logs)
	}
	d.Stop()

	// Again: nothing changes, and it says so.
	before := resourceVersions(t)
	again := clusterCmd(t, "add", "--out", written)
	for _, line := range strings.Split(strings.TrimSpace(again), "\n") {
		if !strings.HasSuffix(line, ": unchanged") && !strings.Contains(line, ": unchanged (") &&
			!strings.HasPrefix(line, "token:") && !strings.HasPrefix(line, "run it:") && line != "nothing changed" {
			t.Errorf("the second cluster add says %q", line)
		}
	}
	if !strings.Contains(again, "\nnothing changed\n") {
		t.Errorf("the second cluster add does not say nothing changed:\n%s", again)
	}
	if after := resourceVersions(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the second cluster add changed objects: resourceVersions %v, then %v", before, after)
	}
	if again := readFile(t, written); !bytes.Equal(again, kc) {
		t.Errorf("the second cluster add rewrote the kubeconfig")
	}

	// remove: nothing left, and the token is dead.
	token := tokenOf(t, written)
	gone := clusterCmd(t, "remove", "--out", written)
	for _, a := range added {
		if !strings.Contains(gone, a.name+": deleted\n") {
			t.Errorf("cluster remove does not say it deleted %s:\n%s", a.name, gone)
		}
	}
	nothingLeft(t, written)
	eventually(t, 30*time.Second, func() error {
		cfg := rest.CopyConfig(cluster.Config)
		cfg.BearerToken = token
		_, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx,
			&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if !apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the removed account's token: %v, want 401", err)
		}
		return nil
	})
}

// TestClusterAddNoSecrets: with --no-secrets the written kubeconfig may
// neither list nor get Secrets, and kubegcd, refused Secrets, still runs
// and collects an orphan ConfigMap. The token is a TokenRequest's, and
// cluster add says when it expires.
func TestClusterAddNoSecrets(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "nosecrets")
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "password"},
		StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(t.TempDir(), "kubegcd.kubeconfig")
	begin := time.Now()
	out := clusterCmd(t, "add", "--no-secrets", "--token-duration", "2h", "--out", written)
	t.Cleanup(func() { clusterCmd(t, "remove", "--out", written) })
	if !strings.Contains(out, "token: from a TokenRequest for ServiceAccount kube-system/kubegcd; it expires at ") {
		t.Errorf("cluster add does not say the token is a TokenRequest's, and when it expires:\n%s", out)
	}
	if strings.Contains(out, "Secret kube-system/kubegcd-token") {
		t.Errorf("cluster add with --token-duration applied a token Secret:\n%s", out)
	}
	checkKubeconfig(t, written)
	if exp := tokenExpiry(t, tokenOf(t, written)); exp.Before(begin.Add(2*time.Hour-time.Minute)) || exp.After(time.Now().Add(2*time.Hour+time.Minute)) {
		t.Errorf("the token expires at %v, want in 2h", exp)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", written)
	if err != nil {
		t.Fatal(err)
	}
	asKubegcd := kubernetes.NewForConfigOrDie(cfg)
	if _, err := asKubegcd.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("listing Secrets with the written kubeconfig: %v, want 403", err)
	}
	if _, err := asKubegcd.CoreV1().Secrets(ns).Get(ctx, "password", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("getting a Secret with the written kubeconfig: %v, want 403", err)
	}
	if _, err := asKubegcd.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing ConfigMaps with the written kubeconfig: %v", err)
	}

	d := e2eutil.DaemonOptions{Kubeconfig: written}.Start(t, "", "--dry-run=false", "--resync-period=1s")
	orphanCollected(t, d, ns, "orphan")
	var st api.Status
	d.GetJSON(t, "/status", 200, &st)
	for _, r := range st.Resources {
		if r.Group == "" && r.Resource == "secrets" && r.Synced {
			t.Errorf("/status says Secrets are in sync, which kubegcd may not list")
		}
	}
	if code, ok := d.Exited(); ok {
		t.Errorf("kubegcd exited with %d", code)
	}
}

// orphanCollected creates a ConfigMap whose owner never existed in ns and
// waits until kubegcd d has deleted it.
func orphanCollected(t *testing.T, d *e2eutil.Daemon, ns, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "never",
			UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", time.Now().UnixNano()%1e12))}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		if code, ok := d.Exited(); ok {
			return e2eutil.StopError{Err: fmt.Errorf("kubegcd exited with %d", code)}
		}
		if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the orphan %s/%s is still there (%v)", ns, name, err)
		}
		return nil
	})
}

// checkKubeconfig checks the kubeconfig cluster add wrote: mode 0600, the
// context asked for, the API server's CA inline and no way around it, and
// a token that authenticates as kubegcd's ServiceAccount over TLS checked
// with that CA. It returns the file's content.
func checkKubeconfig(t *testing.T, path string) []byte {
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
	c := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	if kc.CurrentContext != "test" || c == nil || c.Server != cluster.Config.Host {
		t.Fatalf("%s: context %q, cluster %+v; want the context test of %s", path, kc.CurrentContext, c, cluster.Config.Host)
	}
	if !bytes.Equal(c.CertificateAuthorityData, caPEM) || c.CertificateAuthority != "" || c.InsecureSkipTLSVerify {
		t.Errorf("%s does not carry the API server's CA inline, alone", path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(context.Background(),
		&authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("asking who %s is: %v", path, err)
	}
	if u := r.Status.UserInfo.Username; u != "system:serviceaccount:kube-system:kubegcd" {
		t.Errorf("%s authenticates as %s", path, u)
	}
	return readFile(t, path)
}

// nothingLeft checks that no object cluster add applies, and no file it
// wrote, remains.
func nothingLeft(t *testing.T, files ...string) {
	t.Helper()
	ctx := context.Background()
	for _, a := range added {
		if _, err := a.get(ctx); !apierrors.IsNotFound(err) {
			t.Errorf("%s after cluster remove: %v, want not found", a.name, err)
		}
	}
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubegcd"}
	crs, _ := kube.RbacV1().ClusterRoles().List(ctx, sel)
	crbs, _ := kube.RbacV1().ClusterRoleBindings().List(ctx, sel)
	sas, _ := kube.CoreV1().ServiceAccounts("").List(ctx, sel)
	secrets, _ := kube.CoreV1().Secrets("").List(ctx, sel)
	if n := len(crs.Items) + len(crbs.Items) + len(sas.Items) + len(secrets.Items); n > 0 {
		t.Errorf("%d objects labelled as kubegcd's remain after cluster remove", n)
	}
	for _, f := range files {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s after cluster remove: %v, want gone", f, err)
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// tokenOf is the token of the kubeconfig at path.
func tokenOf(t *testing.T, path string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token
}

// tokenExpiry is the expiry a ServiceAccount token (a JWT) claims.
func tokenExpiry(t *testing.T, token string) time.Time {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the token is not a JWT")
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err == nil {
		err = json.Unmarshal(data, &claims)
	}
	if err != nil {
		t.Fatalf("the token's claims: %v", err)
	}
	return time.Unix(claims.Exp, 0)
}

func eventually(t *testing.T, timeout time.Duration, fn func() error) {
	t.Helper()
	e2eutil.Eventually(t, timeout, fn)
}
