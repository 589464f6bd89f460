package clusteradd

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// managedBy labels every object cluster add applies, as Kubernetes'
// recommended labels say which tool manages an object.
var managedBy = map[string]string{"app.kubernetes.io/managed-by": "kubegcd"}

// tokenSecretName is the Secret of type kubernetes.io/service-account-token
// that holds the ServiceAccount's token when no --token-duration is given.
const tokenSecretName = "kubegcd-token"

// manifests are the objects cluster add applies, in the order it applies
// them: the ServiceAccount first, the token Secret last.
type manifests struct {
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Role               *rbacv1.Role
	RoleBinding        *rbacv1.RoleBinding
	// Secret is nil when the token comes from a TokenRequest.
	Secret *corev1.Secret
}

// shippedManifests are the objects of deploy/clusterrole.yaml, bound to
// its ServiceAccount alone: the file also binds the user kubegcd, for those
// who authenticate kubegcd otherwise, and cluster add makes no user. With
// secretToken, the ServiceAccount's token Secret comes too.
func shippedManifests(secretToken bool) (manifests, error) {
	var m manifests
	for i, doc := range bytes.Split(shippedRBAC, []byte("\n---\n")) {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return m, fmt.Errorf("the shipped clusterrole.yaml, document %d: %w", i+1, err)
		}
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			m.ClusterRole = o
		case *rbacv1.ClusterRoleBinding:
			m.ClusterRoleBinding = o
		case *rbacv1.Role:
			m.Role = o
		case *rbacv1.RoleBinding:
			m.RoleBinding = o
		default:
			return m, fmt.Errorf("the shipped clusterrole.yaml, document %d: a %T", i+1, obj)
		}
	}
	if m.ClusterRole == nil || m.ClusterRoleBinding == nil || m.Role == nil || m.RoleBinding == nil {
		return m, fmt.Errorf("the shipped clusterrole.yaml lacks a ClusterRole, a Role or a binding")
	}
	var sa *rbacv1.Subject
	for _, s := range m.ClusterRoleBinding.Subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			sa = &s
		}
	}
	if sa == nil {
		return m, fmt.Errorf("the shipped ClusterRoleBinding binds no ServiceAccount")
	}
	only := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
	m.ClusterRoleBinding.Subjects = only
	m.RoleBinding.Subjects = slices.Clone(only)
	m.ServiceAccount = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace}}
	if secretToken {
		m.Secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: tokenSecretName, Namespace: sa.Namespace,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: sa.Name}},
			Type: corev1.SecretTypeServiceAccountToken,
		}
	}
	for _, o := range m.objects() {
		o.(metav1.Object).SetLabels(labelsWith(o.(metav1.Object).GetLabels(), managedBy))
	}
	return m, nil
}

// objects are m's objects in the order cluster add applies them.
func (m manifests) objects() []runtime.Object {
	out := []runtime.Object{m.ServiceAccount, m.ClusterRole, m.ClusterRoleBinding, m.Role, m.RoleBinding}
	if m.Secret != nil {
		out = append(out, m.Secret)
	}
	return out
}

// labelsWith returns labels with want's labels set.
func labelsWith(labels, want map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+len(want))
	for k, v := range labels {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}

// YAML writes the manifests as one YAML stream, as kubectl apply -f reads
// it.
func (m manifests) YAML() ([]byte, error) {
	var b bytes.Buffer
	for i, o := range m.objects() {
		gvks, _, err := scheme.Scheme.ObjectKinds(o)
		if err != nil {
			return nil, err
		}
		o = o.DeepCopyObject()
		o.GetObjectKind().SetGroupVersionKind(gvks[0])
		// Through unstructured, to drop the empty creationTimestamp that
		// typed objects marshal.
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		if md, ok := u["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		data, err := yaml.Marshal(u)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}

// describe names an object as the lines of cluster add and remove do:
// "ClusterRole kubegcd", "ServiceAccount kube-system/kubegcd".
func describe(o runtime.Object) string {
	gvks, _, err := scheme.Scheme.ObjectKinds(o)
	kind := fmt.Sprintf("%T", o)
	if err == nil {
		kind = gvks[0].Kind
	}
	meta := o.(metav1.Object)
	if ns := meta.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + meta.GetName()
	}
	return kind + " " + meta.GetName()
}

// podStatus is the one subresource kubegcd writes through the shipped
// role's wildcard rule: PodGC patches a pod's status (its phase, the
// DisruptionTarget condition) before deleting it.
const podStatus = "pods/status"

// withoutSecrets returns the ClusterRole role with its wildcard rule (every
// group, every resource) replaced by rules that grant the same verbs on each
// resource discovery lists, by name, except the core group's secrets: RBAC
// cannot grant a list of metadata alone, and no other rule can leave Secrets
// out. Subresources other than pods/status are not granted: kubegcd writes
// no other. A group served later (a new CRD) is not in the role.
func withoutSecrets(role *rbacv1.ClusterRole, discovered []*metav1.APIResourceList) (*rbacv1.ClusterRole, error) {
	wildcard := slices.IndexFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Equal(r.APIGroups, []string{"*"}) && slices.Equal(r.Resources, []string{"*"})
	})
	if wildcard < 0 {
		return nil, fmt.Errorf("ClusterRole %s has no rule on every group and resource to narrow", role.Name)
	}
	verbs := role.Rules[wildcard].Verbs
	byGroup := map[string]map[string]bool{}
	for _, list := range discovered {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || (gv.Group == "" && r.Name == "secrets") {
				continue
			}
			if byGroup[gv.Group] == nil {
				byGroup[gv.Group] = map[string]bool{}
			}
			byGroup[gv.Group][r.Name] = true
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var rules []rbacv1.PolicyRule
	for _, g := range groups {
		var names []string
		for n := range byGroup[g] {
			names = append(names, n)
		}
		sort.Strings(names)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: names, Verbs: slices.Clone(verbs)})
	}
	if byGroup[""]["pods"] && slices.Contains(verbs, "patch") {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{podStatus}, Verbs: []string{"patch"}})
	}
	out := role.DeepCopy()
	out.Rules = slices.Concat(role.Rules[:wildcard], rules, role.Rules[wildcard+1:])
	return out, nil
}
