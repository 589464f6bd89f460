package ingest

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/db"
)

// benchDeployment is a Deployment as the API server returns it: defaults
// set, one managedFields entry, and a pod template that references a
// ConfigMap twice, a Secret, a claim, a pull secret and a ServiceAccount.
func benchDeployment() *appsv1.Deployment {
	cm := corev1.LocalObjectReference{Name: "cm-00042"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-00042", Namespace: "refs-2", UID: "0d5e1f7a-8b9c-4d2e-a1f3-5b6c7d8e9f00",
			ResourceVersion: "123456", Generation: 1, Labels: map[string]string{"app": "app-00042"},
			CreationTimestamp: metav1.Now(),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: "Update",
				APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(
					`{"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},` +
						`"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{},"f:envFrom":{},"f:image":{},` +
						`"f:name":{},"f:volumeMounts":{}}},"f:imagePullSecrets":{},"f:serviceAccountName":{},"f:volumes":{}}}}}`)}}}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0), RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app-00042"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "app-00042"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: "default", DeprecatedServiceAccount: "default",
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
					RestartPolicy:    corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
					SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: ptr.To[int64](30),
					SecurityContext: &corev1.PodSecurityContext{},
					Containers: []corev1.Container{{
						Name: "app", Image: "registry.example/app:1", ImagePullPolicy: corev1.PullIfNotPresent,
						TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						Env: []corev1.EnvVar{{Name: "K", ValueFrom: &corev1.EnvVarSource{
							ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cm, Key: "key"}}}},
						EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "secret-00042"}}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}, {Name: "data", MountPath: "/data"}},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: cm, DefaultMode: ptr.To[int32](0o644)}}},
						{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
							ClaimName: "claim-00042"}}},
					},
				},
			},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}},
	}
}

// BenchmarkDecodeReferrer: what a Deployment costs ingestion, from its
// protobuf: its metadata alone (as a metadata-only kind is read), the
// whole object, and the whole object with its references extracted into
// the mirror's object.
func BenchmarkDecodeReferrer(b *testing.B) {
	d := benchDeployment()
	full, err := d.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	meta, err := (&metav1.PartialObjectMetadata{ObjectMeta: d.ObjectMeta}).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	extract := referrerResources[schema.GroupResource{Group: "apps", Resource: "deployments"}].extract
	b.Run("metadata", func(b *testing.B) {
		b.SetBytes(int64(len(meta)))
		for range b.N {
			var m metav1.PartialObjectMetadata
			if err := m.Unmarshal(meta); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		b.SetBytes(int64(len(full)))
		for range b.N {
			var o appsv1.Deployment
			if err := o.Unmarshal(full); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full+extract", func(b *testing.B) {
		b.SetBytes(int64(len(full)))
		for range b.N {
			var o appsv1.Deployment
			if err := o.Unmarshal(full); err != nil {
				b.Fatal(err)
			}
			var row db.Object
			extract(&o, &row)
			if len(row.Refs) != 6 {
				b.Fatalf("%d references, want 6", len(row.Refs))
			}
		}
	})
}
