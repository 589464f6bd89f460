package e2efaults

import (
	"context"
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tests run at once, each with a kubegcd that collects garbage, and a
// kubegcd collects the whole cluster: one test's garbage would be another's
// daemon's to take, during the very fault that should hold it back. So
// each daemon reads everything but may write only in its own test's
// namespace, as the service account these roles are bound to.
const (
	readRole  = "e2efaults-read"
	writeRole = "e2efaults-write"
)

func createRoles(ctx context.Context) error {
	all := []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}}}
	for name, rules := range map[string][]rbacv1.PolicyRule{
		readRole:  all,
		writeRole: {{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	} {
		r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ClusterRole %s: %w", name, err)
		}
	}
	return nil
}

// confinedToken returns the token of a service account of namespace ns
// that reads the whole cluster and writes in ns alone.
func confinedToken(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	const sa = "kubegcd"
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2efaults-" + ns}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: readRole}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubegcd"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: writeRole}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
