package clusteradd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestShippedManifests(t *testing.T) {
	for _, secret := range []bool{true, false} {
		m, err := shippedManifests(secret)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range m.objects() {
			got = append(got, describe(o))
			if l := o.(metav1.Object).GetLabels()["app.kubernetes.io/managed-by"]; l != "kubegcd" {
				t.Errorf("%s: managed-by label %q, want kubegcd", describe(o), l)
			}
		}
		want := []string{"ServiceAccount kube-system/kubegcd", "ClusterRole kubegcd", "ClusterRoleBinding kubegcd",
			"Role kube-system/kubegcd-leader-election", "RoleBinding kube-system/kubegcd-leader-election"}
		if secret {
			want = append(want, "Secret kube-system/kubegcd-token")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("objects with a token Secret %v (-want +got):\n%s", secret, diff)
		}
		// Bound to the ServiceAccount alone, not to the user kubegcd the
		// file also names.
		sa := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kubegcd", Namespace: "kube-system"}}
		if diff := cmp.Diff(sa, m.ClusterRoleBinding.Subjects); diff != "" {
			t.Errorf("ClusterRoleBinding subjects (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(sa, m.RoleBinding.Subjects); diff != "" {
			t.Errorf("RoleBinding subjects (-want +got):\n%s", diff)
		}
	}
}

// TestShippedRole: the role applied is the shipped file's, rule for rule.
func TestShippedRole(t *testing.T) {
	m, err := shippedManifests(false)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(shippedRBAC, []byte("\n---\n"))
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(docs[0], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(obj.(*rbacv1.ClusterRole).Rules, m.ClusterRole.Rules); diff != "" {
		t.Errorf("rules (-shipped +applied):\n%s", diff)
	}
	if m.ClusterRoleBinding.RoleRef.Name != m.ClusterRole.Name || m.RoleBinding.RoleRef.Name != m.Role.Name {
		t.Errorf("bindings refer to %q and %q, want the roles %q and %q", m.ClusterRoleBinding.RoleRef.Name,
			m.RoleBinding.RoleRef.Name, m.ClusterRole.Name, m.Role.Name)
	}
}

// TestManifestsYAML: --dry-run's output reads back, as kubectl apply -f
// reads it, as the objects cluster add applies.
func TestManifestsYAML(t *testing.T) {
	m, err := shippedManifests(true)
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("creationTimestamp")) || bytes.Contains(data, []byte("\nstatus:")) {
		t.Errorf("the manifests carry fields nobody set:\n%s", data)
	}
	docs := strings.Split(string(data), "---\n")
	objs := m.objects()
	if len(docs) != len(objs) {
		t.Fatalf("%d documents, want %d:\n%s", len(docs), len(objs), data)
	}
	for i, doc := range docs {
		got, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("document %d: %v\n%s", i+1, err, doc)
		}
		got.GetObjectKind().SetGroupVersionKind(objs[i].GetObjectKind().GroupVersionKind())
		if diff := cmp.Diff(objs[i], got); diff != "" {
			t.Errorf("document %d (-applied +printed):\n%s", i+1, diff)
		}
	}
}

func TestWithoutSecrets(t *testing.T) {
	m, err := shippedManifests(false)
	if err != nil {
		t.Fatal(err)
	}
	res := func(names ...string) []metav1.APIResource {
		var out []metav1.APIResource
		for _, n := range names {
			out = append(out, metav1.APIResource{Name: n})
		}
		return out
	}
	discovered := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: res("configmaps", "pods", "pods/status", "pods/exec", "secrets", "nodes", "nodes/proxy")},
		{GroupVersion: "apps/v1", APIResources: res("deployments", "deployments/scale", "replicasets")},
		// Two versions of one group make one rule.
		{GroupVersion: "e2e.kubegcd.io/v1", APIResources: res("widgets")},
		{GroupVersion: "e2e.kubegcd.io/v2", APIResources: res("widgets", "gadgets")},
		// A secrets resource of another group is not the core one.
		{GroupVersion: "vault.example.com/v1", APIResources: res("secrets")},
	}
	got, err := withoutSecrets(m.ClusterRole, discovered)
	if err != nil {
		t.Fatal(err)
	}
	verbs := []string{"get", "list", "watch", "delete", "patch"}
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "nodes", "pods"}, Verbs: verbs},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "replicasets"}, Verbs: verbs},
		{APIGroups: []string{"e2e.kubegcd.io"}, Resources: []string{"gadgets", "widgets"}, Verbs: verbs},
		{APIGroups: []string{"vault.example.com"}, Resources: []string{"secrets"}, Verbs: verbs},
		{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
	}
	// The shipped role's other rules follow, unchanged.
	want = append(want, m.ClusterRole.Rules[1:]...)
	if diff := cmp.Diff(want, got.Rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if got.Name != m.ClusterRole.Name || m.ClusterRole.Rules[0].APIGroups[0] != "*" {
		t.Errorf("withoutSecrets renamed the role (%s) or changed the shipped one", got.Name)
	}

	if _, err := withoutSecrets(got, discovered); err == nil {
		t.Error("a role without a wildcard rule was narrowed again, want an error")
	}
}

// TestDescribe names objects as the lines of add and remove do.
func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		obj  runtime.Object
		want string
	}{
		{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}, "Secret ns/s"},
		{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, "ClusterRole r"},
	} {
		if got := describe(tt.obj); got != tt.want {
			t.Errorf("describe = %q, want %q", got, tt.want)
		}
	}
}
