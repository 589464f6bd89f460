package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestShippedRBAC runs kubegcd, enforcing, with exactly the rights
// deploy/clusterrole.yaml grants (the test cluster authorizes with RBAC):
// the admin's kubeconfig impersonates a user bound only by the shipped
// ClusterRole and leader-election Role. kubegcd must sync every resource
// without a refusal, collect an orphan, orphan dependents (a patch) and take
// its Lease; and the role must be in force: what it does not grant is
// refused.
//
// It enforces, so it runs alone (see mustEnforceAlone).
func TestShippedRBAC(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "rbac")
	user := "kubegcd-e2e-rbac"
	applyShippedRBAC(t, user, ns)

	// The admin's kubeconfig, acting as the user.
	kc, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kc.AuthInfos {
		a.Impersonate = user
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	args := []string{"--dry-run=false", "--resync-period=1s", "--leader-elect-namespace=" + ns}
	mustEnforceAlone(t, args)
	d := e2eutil.DaemonOptions{Kubeconfig: kubeconfig}.Start(t, "", args...)
	d.WaitReady(t, 60*time.Second)
	in := &instance{url: d.URL}

	// Leader election in the Role's namespace.
	leaderOf(t, 30*time.Second, in)
	st, err := in.status(t)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := kube.CoordinationV1().Leases(ns).Get(ctx, "kubegcd", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the leader's Lease: %v", err)
	}
	if h := lease.Spec.HolderIdentity; h == nil || *h != st.LeaderElection.Identity {
		t.Errorf("Lease %s/kubegcd held by %v, want %s", ns, h, st.LeaderElection.Identity)
	}

	// A delete: garbage whose owner never existed.
	collected(t, ns, "garbage", in)
	// Patches: an owner deleted with orphan propagation has its dependent's
	// reference and then its own orphan finalizer removed.
	owner, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "owner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("owner still there (%v)", err)
		}
		dep, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		if err != nil {
			return stopError{Err: fmt.Errorf("the orphaned dependent: %w", err)}
		}
		if refs := dep.OwnerReferences; len(refs) != 0 {
			return stopError{Err: fmt.Errorf("the orphaned dependent keeps %v", refs)}
		}
		return nil
	})

	// Nothing kubegcd did was refused.
	if logs := d.Logs.String(); strings.Contains(strings.ToLower(logs), "forbidden") {
		t.Errorf("a request was refused:\n%s", grepLines(logs, "forbidden"))
	}

	// The role is in force: the user may do what it grants, and nothing more.
	tests := []struct {
		verb, group, resource, subresource, namespace, name string
		want                                                bool
	}{
		{"list", "", "secrets", "", "", "", true},
		{"watch", "apps", "deployments", "", "", "", true},
		{"delete", "e2e.kubegcd.io", "widgets", "", ns, "w", true},
		{"patch", "", "pods", "status", ns, "p", true},
		{"patch", "", "nodes", "", "", "n", true},
		{"update", "internal.apiserver.k8s.io", "storageversions", "status", "", "sv", true},
		{"create", "", "events", "", ns, "", true},
		{"create", "coordination.k8s.io", "leases", "", ns, "", true},
		{"update", "coordination.k8s.io", "leases", "", ns, "kubegcd", true},
		{"update", "coordination.k8s.io", "leases", "", ns, "another", false},
		{"create", "coordination.k8s.io", "leases", "", "kube-system", "", false},
		{"create", "coordination.k8s.io", "leasecandidates", "", ns, "", true},
		{"update", "coordination.k8s.io", "leasecandidates", "", ns, "kubegcd-host_0a1b", true},
		{"delete", "coordination.k8s.io", "leasecandidates", "", "kube-system", "x", true},
		{"create", "coordination.k8s.io", "leasecandidates", "", "kube-system", "", false},
		{"create", "", "configmaps", "", ns, "", false},
		{"update", "", "secrets", "", ns, "s", false},
		{"create", "", "pods", "eviction", ns, "p", false},
		{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", "", "", false},
		{"impersonate", "", "users", "", "", "admin", false},
	}
	for _, tt := range tests {
		review, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tt.verb, Group: tt.group, Resource: tt.resource,
					Subresource: tt.subresource, Namespace: tt.namespace, Name: tt.name}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := review.Status.Allowed; got != tt.want {
			t.Errorf("%s %s/%s/%s in %q named %q: allowed %v, want %v", tt.verb, tt.group, tt.resource, tt.subresource,
				tt.namespace, tt.name, got, tt.want)
		}
	}
	// And the API server refuses the user a write the role does not grant.
	asUser := rest.CopyConfig(cluster.Config)
	asUser.Impersonate = rest.ImpersonationConfig{UserName: user}
	_, err = kubernetes.NewForConfigOrDie(asUser).CoreV1().ConfigMaps(ns).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("creating a ConfigMap as %s: %v, want forbidden", user, err)
	}
}

// applyShippedRBAC creates the objects of deploy/clusterrole.yaml, renamed
// for the test, bound to user alone, the Role in namespace ns (the test's
// --leader-elect-namespace); they are deleted when the test ends.
func applyShippedRBAC(t *testing.T, user, ns string) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile("../../deploy/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	rbac := kube.RbacV1()
	kinds := map[string]int{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("deploy/clusterrole.yaml: %v", err)
		}
		kinds[fmt.Sprintf("%T", obj)]++
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			o.Name = user
			_, err = rbac.ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
			t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}) })
		case *rbacv1.ClusterRoleBinding:
			o.Name, o.RoleRef.Name, o.Subjects = user, user, subjects
			_, err = rbac.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
			t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{}) })
		case *rbacv1.Role:
			o.Namespace = ns
			_, err = rbac.Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			o.Namespace, o.Subjects = ns, subjects
			_, err = rbac.RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("deploy/clusterrole.yaml holds a %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{"*v1.ClusterRole": 1, "*v1.ClusterRoleBinding": 1, "*v1.Role": 1, "*v1.RoleBinding": 1}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("deploy/clusterrole.yaml holds %v, want %v", kinds, want)
	}
}

// grepLines returns the lines of s that contain sub, case-insensitively.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
