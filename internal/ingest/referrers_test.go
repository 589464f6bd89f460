package ingest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
)

// extractOf runs the extraction of the resource gr on obj.
func extractOf(t *testing.T, gr schema.GroupResource, obj runtime.Object) *db.Object {
	t.Helper()
	typed, ok := typedResourceOf(gr)
	if !ok {
		t.Fatalf("%s is not read in full", gr)
	}
	var o db.Object
	typed.extract(obj, &o)
	return &o
}

// unstructuredOf is obj as the dynamic client gives it.
func unstructuredOf(t *testing.T, obj runtime.Object, apiVersion, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

func podTemplate(configMap string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{ServiceAccountName: "sa", Volumes: []corev1.Volume{{Name: "v",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}}}
}

// templateRefs are the references of podTemplate(configMap) in namespace
// ns, at the field path at.
func templateRefs(ns, at, configMap string) []db.Ref {
	return []db.Ref{
		{Kind: "ConfigMap", Namespace: ns, Name: configMap, Via: at + ".volumes[].configMap"},
		{Kind: "ServiceAccount", Namespace: ns, Name: "sa", Via: at + ".serviceAccountName"},
	}
}

// TestExtractReferrers: each kind read in full keeps its references and
// the typed fields of the rules, typed or (a version without types)
// unstructured alike.
func TestExtractReferrers(t *testing.T) {
	completed := metav1.NewTime(time.Date(2026, 11, 24, 1, 2, 3, 0, time.UTC))
	failedAt := metav1.NewTime(time.Date(2026, 11, 24, 4, 5, 6, 0, time.UTC))
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "x"}
	tmpl := "spec.template.spec"
	type gr = schema.GroupResource
	for _, tc := range []struct {
		name             string
		gr               gr
		obj              runtime.Object
		apiVersion, kind string // for the unstructured case
		want             *db.Object
	}{
		{"a Deployment scaled to zero", gr{Group: "apps", Resource: "deployments"},
			&appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: new(int32(0)),
				Template: podTemplate("cm")}}, "apps/v1", "Deployment",
			&db.Object{Refs: templateRefs("ns", tmpl, "cm"), Workload: &db.Workload{Replicas: new(int32(0))}}},
		{"a ReplicaSet", gr{Group: "apps", Resource: "replicasets"},
			&appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(2)),
				Template: podTemplate("cm")}}, "apps/v1", "ReplicaSet",
			&db.Object{Refs: templateRefs("ns", tmpl, "cm"), Workload: &db.Workload{Replicas: new(int32(2))}}},
		{"a StatefulSet", gr{Group: "apps", Resource: "statefulsets"},
			&appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: new(int32(0)),
				Template: podTemplate("cm"), ServiceName: "svc",
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}},
			"apps/v1", "StatefulSet",
			&db.Object{Refs: []db.Ref{templateRefs("ns", tmpl, "cm")[0],
				{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "data-x-", Via: "spec.volumeClaimTemplates[]",
					Prefix: true},
				{Kind: "Service", Namespace: "ns", Name: "svc", Via: "spec.serviceName", Optional: true},
				templateRefs("ns", tmpl, "cm")[1]},
				Workload: &db.Workload{Replicas: new(int32(0))}}},
		{"a DaemonSet", gr{Group: "apps", Resource: "daemonsets"},
			&appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Template: podTemplate("cm")}},
			"apps/v1", "DaemonSet", &db.Object{Refs: templateRefs("ns", tmpl, "cm")}},
		{"a ReplicationController without replicas", gr{Resource: "replicationcontrollers"},
			&corev1.ReplicationController{ObjectMeta: meta, Spec: corev1.ReplicationControllerSpec{
				Template: new(podTemplate("cm"))}}, "v1", "ReplicationController",
			&db.Object{Refs: templateRefs("ns", tmpl, "cm"), Workload: &db.Workload{}}},
		{"a Job that completed", gr{Group: "batch", Resource: "jobs"},
			&batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: podTemplate("cm"),
				TTLSecondsAfterFinished: new(int32(100))},
				Status: batchv1.JobStatus{CompletionTime: &completed, Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: failedAt}}}},
			"batch/v1", "Job",
			&db.Object{Refs: templateRefs("ns", tmpl, "cm"), Job: &db.Job{Complete: true,
				FinishedAt: &completed.Time, TTLSecondsAfterFinished: new(int32(100))}}},
		{"a Job that failed", gr{Group: "batch", Resource: "jobs"},
			&batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: podTemplate("cm")},
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: completed},
					{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: failedAt}}}},
			"batch/v1", "Job",
			&db.Object{Refs: templateRefs("ns", tmpl, "cm"), Job: &db.Job{Failed: true, FinishedAt: &failedAt.Time}}},
		{"a Job still running", gr{Group: "batch", Resource: "jobs"},
			&batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: podTemplate("cm")},
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobFailed, Status: corev1.ConditionFalse, LastTransitionTime: failedAt}}}},
			"batch/v1", "Job", &db.Object{Refs: templateRefs("ns", tmpl, "cm"), Job: &db.Job{}}},
		{"a CronJob between runs", gr{Group: "batch", Resource: "cronjobs"},
			&batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{Suspend: new(true),
				SuccessfulJobsHistoryLimit: new(int32(3)), FailedJobsHistoryLimit: new(int32(1)),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate("cm")}}}},
			"batch/v1", "CronJob",
			&db.Object{Refs: templateRefs("ns", "spec.jobTemplate.spec.template.spec", "cm"),
				CronJob: &db.CronJob{SuccessfulJobsHistoryLimit: new(int32(3)), FailedJobsHistoryLimit: new(int32(1)),
					Suspend: true}}},
		{"a bound claim", gr{Resource: "persistentvolumeclaims"},
			&corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}, "v1", "PersistentVolumeClaim",
			&db.Object{Refs: []db.Ref{{Kind: "PersistentVolume", Name: "pv", Via: "spec.volumeName"}},
				PVC: &db.PVC{Phase: "Bound", VolumeName: "pv"}}},
		{"a ServiceAccount", gr{Resource: "serviceaccounts"},
			&corev1.ServiceAccount{ObjectMeta: meta, Secrets: []corev1.ObjectReference{{Name: "token"}}},
			"v1", "ServiceAccount",
			&db.Object{Refs: []db.Ref{{Kind: "Secret", Namespace: "ns", Name: "token", Via: "secrets[]"}}}},
		{"an HPA, v2", gr{Group: "autoscaling", Resource: "horizontalpodautoscalers"},
			&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment",
					Name: "d"}}}, "autoscaling/v2", "HorizontalPodAutoscaler",
			&db.Object{Refs: []db.Ref{{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "d",
				Via: "spec.scaleTargetRef"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, extractOf(t, tc.gr, tc.obj)); diff != "" {
				t.Errorf("typed (-want +got):\n%s", diff)
			}
			u := unstructuredOf(t, tc.obj, tc.apiVersion, tc.kind)
			if diff := cmp.Diff(tc.want, extractOf(t, tc.gr, u)); diff != "" {
				t.Errorf("unstructured (-want +got):\n%s", diff)
			}
		})
	}

	// autoscaling/v1, the version discovery picks where v2 is not served.
	hpa := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: meta, Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "s"}}}
	want := []db.Ref{{Group: "apps", Kind: "StatefulSet", Namespace: "ns", Name: "s", Via: "spec.scaleTargetRef"}}
	for _, obj := range []runtime.Object{hpa, unstructuredOf(t, hpa, "autoscaling/v1", "HorizontalPodAutoscaler")} {
		if got := extractOf(t, schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"},
			obj).Refs; !cmp.Equal(got, want) {
			t.Errorf("%T: refs %+v, want %+v", obj, got, want)
		}
	}
}

// TestExtractPodRefs: pods, read typed already, keep their references
// beside their typed columns.
func TestExtractPodRefs(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: podTemplate("cm").Spec,
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	o := extractOf(t, schema.GroupResource{Resource: "pods"}, pod)
	if diff := cmp.Diff(templateRefs("ns", "spec", "cm"), o.Refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	if o.Pod == nil || o.Pod.Phase != "Running" {
		t.Errorf("pod columns %+v", o.Pod)
	}
}

// TestReferrerKindsAreReadInFull: every referrer kind is read typed at the
// versions client-go has types for, and through the dynamic client at any
// other.
func TestReferrerKindsAreReadInFull(t *testing.T) {
	i, err := New(Options{Config: offlineConfig})
	if err != nil {
		t.Fatal(err)
	}
	if len(referrerResources) != 14 {
		t.Errorf("%d referrer kinds, want the 14 of issue 48", len(referrerResources))
	}
	for gr, typed := range referrerResources {
		versions := []string{"v1"}
		if gr.Group == "autoscaling" {
			versions = []string{"v1", "v2"}
		}
		for _, v := range append(versions, "v9beta1") {
			_, dynamic := typed.source(i, gr.WithVersion(v)).(clientSource[*unstructured.UnstructuredList])
			if want := v == "v9beta1"; dynamic != want {
				t.Errorf("%s at %s: dynamic %v, want %v", gr, v, dynamic, want)
			}
		}
	}
}
