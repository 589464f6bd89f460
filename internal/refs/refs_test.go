package refs

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

const ns = "shop"

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// fullSpec uses every reference a pod spec can make, once each.
func fullSpec() corev1.PodSpec {
	vol := func(name string, s corev1.VolumeSource) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: s}
	}
	local := func(name string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: name} }
	return corev1.PodSpec{
		ServiceAccountName: "runner",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}},
		Volumes: []corev1.Volume{
			vol("a", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm-vol"}}}),
			vol("b", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec-vol", Optional: ptr.To(true)}}),
			vol("c", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}),
			vol("d", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-proj"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "sec-proj"}}},
			}}}),
			vol("scratch", corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}),
			vol("f", corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x", NodePublishSecretRef: local("csi")}}),
			vol("g", corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{SecretRef: local("ceph")}}),
			vol("h", corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "azure"}}),
			vol("i", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		},
		InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-init"}}}}}}},
		Containers: []corev1.Container{{Name: "app",
			Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "v"},
				{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "sec-env"}, Optional: ptr.To(true)}}},
				{Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-from"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "sec-from"}}},
			},
		}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm-debug"}}}}}}},
	}
}

// specRefs are fullSpec's references at the field path at; pod names the
// claim of its ephemeral volume.
func specRefs(at, pod string) []Ref {
	r := func(kind, name, via string, optional bool) Ref {
		return Ref{Kind: kind, Namespace: ns, Name: name, Via: at + via, Optional: optional}
	}
	refs := []Ref{
		r(KindConfigMap, "cm-debug", ".ephemeralContainers[].envFrom[].configMapRef", false),
		r(KindConfigMap, "cm-from", ".containers[].envFrom[].configMapRef", false),
		r(KindConfigMap, "cm-init", ".initContainers[].env[].valueFrom.configMapKeyRef", false),
		r(KindConfigMap, "cm-proj", ".volumes[].projected.sources[].configMap", false),
		r(KindConfigMap, "cm-vol", ".volumes[].configMap", false),
		r(KindClaim, "data", ".volumes[].persistentVolumeClaim", false),
		r(KindSecret, "azure", ".volumes[].azureFile.secretName", false),
		r(KindSecret, "ceph", ".volumes[].cephfs.secretRef", false),
		r(KindSecret, "csi", ".volumes[].csi.nodePublishSecretRef", false),
		r(KindSecret, "pull", ".imagePullSecrets[]", true),
		r(KindSecret, "sec-env", ".containers[].env[].valueFrom.secretKeyRef", true),
		r(KindSecret, "sec-from", ".containers[].envFrom[].secretRef", false),
		r(KindSecret, "sec-proj", ".volumes[].projected.sources[].secret", false),
		r(KindSecret, "sec-vol", ".volumes[].secret", true),
		r(KindServiceAccount, "runner", ".serviceAccountName", false),
	}
	if pod != "" {
		refs = append(refs, r(KindClaim, pod+"-scratch", ".ephemeral", false))
		refs[len(refs)-1].Via = at + ".volumes[].ephemeral"
	}
	return sortedRefs(refs)
}

func sortedRefs(refs []Ref) []Ref {
	c := collector{}
	for _, r := range refs {
		c.add(r)
	}
	return c.sorted()
}

func template() corev1.PodTemplateSpec { return corev1.PodTemplateSpec{Spec: fullSpec()} }

func TestOf(t *testing.T) {
	tmpl := specRefs("spec.template.spec", "")
	tests := []struct {
		name string
		obj  runtime.Object
		want []Ref
	}{
		{"pod", &corev1.Pod{ObjectMeta: meta("web-1"), Spec: fullSpec()}, specRefs("spec", "web-1")},
		{"deployment", &appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Template: template()}}, tmpl},
		{"deployment scaled to zero", &appsv1.Deployment{ObjectMeta: meta("web"),
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Template: template()}}, tmpl},
		{"replicaset", &appsv1.ReplicaSet{ObjectMeta: meta("web-1"), Spec: appsv1.ReplicaSetSpec{Template: template()}}, tmpl},
		{"daemonset", &appsv1.DaemonSet{ObjectMeta: meta("agent"), Spec: appsv1.DaemonSetSpec{Template: template()}}, tmpl},
		{"job", &batchv1.Job{ObjectMeta: meta("once"), Spec: batchv1.JobSpec{Template: template()}}, tmpl},
		{"replicationcontroller", &corev1.ReplicationController{ObjectMeta: meta("old"),
			Spec: corev1.ReplicationControllerSpec{Template: ptr.To(template())}}, tmpl},
		{"replicationcontroller without a template", &corev1.ReplicationController{ObjectMeta: meta("old")}, []Ref{}},
		{"cronjob between runs", &batchv1.CronJob{ObjectMeta: meta("nightly"), Spec: batchv1.CronJobSpec{
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: template()}}}},
			specRefs("spec.jobTemplate.spec.template.spec", "")},
		{"statefulset", &appsv1.StatefulSet{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](0), ServiceName: "db-headless", Template: template(),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}},
			sortedRefs(append(tmpl,
				Ref{Kind: KindClaim, Namespace: ns, Name: "data-db-", Via: "spec.volumeClaimTemplates[]", Prefix: true},
				Ref{Kind: KindService, Namespace: ns, Name: "db-headless", Via: "spec.serviceName", Optional: true}))},
		{"ingress", &networkingv1.Ingress{ObjectMeta: meta("front"), Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			DefaultBackend:   &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "fallback"}},
			TLS:              []networkingv1.IngressTLS{{SecretName: "tls-a"}, {SecretName: "tls-b"}},
			Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{
					{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}},
					{Backend: networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{
						APIGroup: ptr.To("storage.example.com"), Kind: "Bucket", Name: "static"}}},
				}}}}, {Host: "no-http"}},
		}}, sortedRefs([]Ref{
			{Group: "networking.k8s.io", Kind: "IngressClass", Name: "nginx", Via: "spec.ingressClassName", Optional: true},
			{Kind: KindService, Namespace: ns, Name: "fallback", Via: "spec.defaultBackend.service"},
			{Kind: KindSecret, Namespace: ns, Name: "tls-a", Via: "spec.tls[].secretName"},
			{Kind: KindSecret, Namespace: ns, Name: "tls-b", Via: "spec.tls[].secretName"},
			{Kind: KindService, Namespace: ns, Name: "web", Via: "spec.rules[].http.paths[].backend.service"},
			{Group: "storage.example.com", Kind: "Bucket", Namespace: ns, Name: "static", Via: "spec.rules[].http.paths[].backend.resource"},
		})},
		{"serviceaccount", &corev1.ServiceAccount{ObjectMeta: meta("runner"),
			Secrets:          []corev1.ObjectReference{{Name: "runner-token"}, {Name: "elsewhere", Namespace: "other"}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}},
			sortedRefs([]Ref{
				{Kind: KindSecret, Namespace: ns, Name: "runner-token", Via: "secrets[]"},
				{Kind: KindSecret, Namespace: "other", Name: "elsewhere", Via: "secrets[]"},
				{Kind: KindSecret, Namespace: ns, Name: "pull", Via: "imagePullSecrets[]", Optional: true},
			})},
		{"rolebinding", &rbacv1.RoleBinding{ObjectMeta: meta("read"),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.ServiceAccountKind, Name: "runner"},
				{Kind: rbacv1.ServiceAccountKind, Name: "ci", Namespace: "build"},
				{Kind: rbacv1.UserKind, Name: "alice"},
			}}, sortedRefs([]Ref{
			{Group: rbacGroup, Kind: "Role", Namespace: ns, Name: "reader", Via: "roleRef"},
			{Kind: KindServiceAccount, Namespace: ns, Name: "runner", Via: "subjects[]"},
			{Kind: KindServiceAccount, Namespace: "build", Name: "ci", Via: "subjects[]"},
		})},
		{"rolebinding to a clusterrole", &rbacv1.RoleBinding{ObjectMeta: meta("view"),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: "view"}},
			[]Ref{{Group: rbacGroup, Kind: "ClusterRole", Name: "view", Via: "roleRef"}}},
		// kor matches subjects by name only: a ServiceAccount of the same
		// name in another namespace is not referenced.
		{"clusterrolebinding", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admins"},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "deployer", Namespace: "ci"},
				{Kind: rbacv1.ServiceAccountKind, Name: "no-namespace"}}},
			sortedRefs([]Ref{
				{Group: rbacGroup, Kind: "ClusterRole", Name: "admin", Via: "roleRef"},
				{Kind: KindServiceAccount, Namespace: "ci", Name: "deployer", Via: "subjects[]"},
			})},
		{"hpa", &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}},
			[]Ref{{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "web", Via: "spec.scaleTargetRef"}}},
		{"pvc", &corev1.PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}},
			[]Ref{{Kind: KindVolume, Name: "pv-1", Via: "spec.volumeName"}}},
		{"pvc unbound", &corev1.PersistentVolumeClaim{ObjectMeta: meta("data")}, []Ref{}},
		{"pv", &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}, Spec: corev1.PersistentVolumeSpec{
			ClaimRef: &corev1.ObjectReference{Namespace: ns, Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				NodePublishSecretRef: &corev1.SecretReference{Name: "node"},
				NodeStageSecretRef:   &corev1.SecretReference{Name: "stage", Namespace: "storage"},
			}}}}, sortedRefs([]Ref{
			{Kind: KindClaim, Namespace: ns, Name: "data", Via: "spec.claimRef"},
			{Kind: KindSecret, Namespace: ns, Name: "node", Via: "spec.csi.nodePublishSecretRef"},
			{Kind: KindSecret, Namespace: "storage", Name: "stage", Via: "spec.csi.nodeStageSecretRef"},
		})},
		{"a kind that makes none", &corev1.ConfigMap{ObjectMeta: meta("cm")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(tt.obj)
			if tt.want != nil && len(tt.want) == 0 && len(got) == 0 {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOfDefaultServiceAccount(t *testing.T) {
	got := Of(&appsv1.Deployment{ObjectMeta: meta("web")})
	want := []Ref{{Kind: KindServiceAccount, Namespace: ns, Name: "default", Via: "spec.template.spec.serviceAccountName"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a template naming no ServiceAccount (-want +got):\n%s", diff)
	}
}

// One target named through one field by two containers, once optionally
// and once not, is one required reference.
func TestOfRequiredWins(t *testing.T) {
	sel := func(optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Optional: ptr.To(optional)}}}
	}
	for _, order := range [][]bool{{true, false}, {false, true}} {
		pod := &corev1.Pod{ObjectMeta: meta("p"), Spec: corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{
			{Name: "a", Env: []corev1.EnvVar{sel(order[0])}}, {Name: "b", Env: []corev1.EnvVar{sel(order[1])}}}}}
		got := Of(pod)
		want := []Ref{
			{Kind: KindConfigMap, Namespace: ns, Name: "cfg", Via: "spec.containers[].env[].valueFrom.configMapKeyRef"},
			{Kind: KindServiceAccount, Namespace: ns, Name: "sa", Via: "spec.serviceAccountName"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("optional first %v (-want +got):\n%s", order[0], diff)
		}
	}
}

func TestParsePath(t *testing.T) {
	tests := []struct {
		in      string
		want    Path
		wantErr bool
	}{
		{in: "Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret",
			want: Path{Group: "gateway.networking.k8s.io", Kind: "Gateway",
				JSONPath: "{.spec.listeners[*].tls.certificateRefs[*]}", TargetKind: "Secret"}},
		{in: `Certificate.cert-manager.io:{.spec.secretName}:Secret`,
			want: Path{Group: "cert-manager.io", Kind: "Certificate", JSONPath: "{.spec.secretName}", TargetKind: "Secret"}},
		{in: `App.example.com:{.spec.items[?(@.kind=="ConfigMap")].name}:ConfigMap`,
			want: Path{Group: "example.com", Kind: "App", JSONPath: `{.spec.items[?(@.kind=="ConfigMap")].name}`, TargetKind: "ConfigMap"}},
		{in: "Gateway.gateway.networking.k8s.io", wantErr: true},
		{in: ":{.spec.x}:Secret", wantErr: true},
		{in: "App.example.com:{.spec.x}:", wantErr: true},
		{in: "App.example.com:{.spec[}:Secret", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePath(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParsePath: err %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(Path{}), cmp.FilterPath(func(p cmp.Path) bool {
				return p.Last().String() == ".parsed"
			}, cmp.Ignore())); diff != "" {
				t.Errorf("ParsePath (-want +got):\n%s", diff)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestOfUnstructured(t *testing.T) {
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"namespace": ns, "name": "edge"},
		"spec": map[string]any{"listeners": []any{
			map[string]any{"tls": map[string]any{"certificateRefs": []any{
				map[string]any{"kind": "Secret", "group": "", "name": "edge-cert"},
				map[string]any{"kind": "Secret", "name": "shared-cert", "namespace": "certs"},
				map[string]any{"kind": "ConfigMap", "name": "not-a-secret"},
			}}},
			map[string]any{"name": "plain"},
		}},
	}}
	paths := []Path{
		mustPath(t, "Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret"),
		mustPath(t, "Gateway.gateway.networking.k8s.io:{.spec.listeners[*].name}:ConfigMap"),
		mustPath(t, "Route.gateway.networking.k8s.io:{.spec.x}:Secret"),
	}
	got, err := OfUnstructured(gw, paths)
	if err != nil {
		t.Fatal(err)
	}
	certs := "{.spec.listeners[*].tls.certificateRefs[*]}"
	want := sortedRefs([]Ref{
		{Kind: KindSecret, Namespace: ns, Name: "edge-cert", Via: certs},
		{Kind: KindSecret, Namespace: "certs", Name: "shared-cert", Via: certs},
		{Kind: KindConfigMap, Namespace: ns, Name: "plain", Via: "{.spec.listeners[*].name}"},
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OfUnstructured (-want +got):\n%s", diff)
	}

	// A value of the wrong shape is an error that names the object; the
	// others still count.
	bad := mustPath(t, "Gateway.gateway.networking.k8s.io:{.spec.listeners}:Secret")
	got, err = OfUnstructured(gw, []Path{bad, paths[0]})
	if err == nil || len(got) != 2 {
		t.Errorf("a path finding a list: refs %v, err %v; want 2 refs and an error", got, err)
	}
	cluster := mustPath(t, "Gateway.gateway.networking.k8s.io:{.spec.listeners[*].name}:Thing.example.com")
	cluster.TargetClusterScoped = true
	got, _ = OfUnstructured(gw, []Path{cluster})
	if diff := cmp.Diff([]Ref{{Group: "example.com", Kind: "Thing", Name: "plain", Via: "{.spec.listeners[*].name}"}}, got); diff != "" {
		t.Errorf("a cluster-scoped target (-want +got):\n%s", diff)
	}
}

func mustPath(t *testing.T, s string) Path {
	t.Helper()
	p, err := ParsePath(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A pod naming more targets than a collector scans keeps them once each,
// a repeat found through the index: every ConfigMap named twice by two
// containers, the second time optionally, is one required reference.
func TestOfManyTargetsOnce(t *testing.T) {
	var env []corev1.EnvVar
	for i := range 3 * linearRefs {
		env = append(env, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("cfg-%03d", i)}}}})
	}
	optional := make([]corev1.EnvVar, len(env))
	for i, e := range env {
		sel := *e.ValueFrom.ConfigMapKeyRef
		sel.Optional = ptr.To(true)
		optional[i] = corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &sel}}
	}
	pod := &corev1.Pod{ObjectMeta: meta("p"), Spec: corev1.PodSpec{ServiceAccountName: "sa", Containers: []corev1.Container{
		{Name: "a", Env: env}, {Name: "b", Env: optional}}}}
	got := Of(pod)
	var want []Ref
	for i := range env {
		want = append(want, Ref{Kind: KindConfigMap, Namespace: ns, Name: fmt.Sprintf("cfg-%03d", i),
			Via: "spec.containers[].env[].valueFrom.configMapKeyRef"})
	}
	want = append(want, Ref{Kind: KindServiceAccount, Namespace: ns, Name: "sa", Via: "spec.serviceAccountName"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
