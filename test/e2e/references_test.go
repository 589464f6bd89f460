package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/testutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// The references test's custom kind: a Widget names ConfigMaps and a
// StorageClass, which is cluster-scoped.
const (
	widgetGroup  = "refs.e2e.kubegcd.io"
	widgetPaths  = "Widget." + widgetGroup + ":{.spec.configs[*].name}:ConfigMap"
	widgetClass  = "Widget." + widgetGroup + ":{.spec.storageClassName}:StorageClass.storage.k8s.io"
	secretValue  = "e2e-secret-value-5d1f0c9a"
	templateSpec = "spec.template.spec"
)

// refsPodSpec is a pod spec with a reference through every field of a pod
// spec that names a ConfigMap, a Secret, a claim or a ServiceAccount, in
// containers and init containers. Only a Pod, not a template, has
// ephemeral volumes' claims (named after the pod) and ephemeral
// containers (added later through their subresource).
func refsPodSpec(pod bool) corev1.PodSpec {
	spec := corev1.PodSpec{
		ServiceAccountName:           "sa",
		AutomountServiceAccountToken: ptr.To(false),
		ImagePullSecrets:             []corev1.LocalObjectReference{{Name: "pull-secret"}},
		RestartPolicy:                corev1.RestartPolicyAlways,
		Volumes: []corev1.Volume{
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm-volume"}}}},
			{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret-volume"}}},
			{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: "claim"}}},
			{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-projected"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "secret-projected"},
						Optional: ptr.To(true)}},
				}}}},
			{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "csi.example.com",
				NodePublishSecretRef: &corev1.LocalObjectReference{Name: "secret-csi"}}}},
			{Name: "flex", VolumeSource: corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "example.com/flex",
				SecretRef: &corev1.LocalObjectReference{Name: "secret-flex"}}}},
		},
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Env: []corev1.EnvVar{{Name: "A",
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cm-init-env"}, Key: "k"}}}}}},
		Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Env: []corev1.EnvVar{{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "secret-env"}, Key: "k", Optional: ptr.To(true)}}}},
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-envfrom"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "secret-envfrom"}}},
			}}},
	}
	if pod {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: claimSpec("")}}}})
	}
	return spec
}

func claimSpec(volume string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		VolumeName: volume,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceStorage: resource.MustParse("1Gi")}}}
}

// specRefs are the references of refsPodSpec(false) at the field path at,
// as "TARGET via [optional]" (the referrer is added by the caller).
func specRefs(ns, at string) []string {
	return []string{
		"ServiceAccount " + ns + "/sa via " + at + ".serviceAccountName",
		"Secret " + ns + "/pull-secret via " + at + ".imagePullSecrets[] optional",
		"ConfigMap " + ns + "/cm-volume via " + at + ".volumes[].configMap",
		"Secret " + ns + "/secret-volume via " + at + ".volumes[].secret",
		"PersistentVolumeClaim " + ns + "/claim via " + at + ".volumes[].persistentVolumeClaim",
		"ConfigMap " + ns + "/cm-projected via " + at + ".volumes[].projected.sources[].configMap",
		"Secret " + ns + "/secret-projected via " + at + ".volumes[].projected.sources[].secret optional",
		"Secret " + ns + "/secret-csi via " + at + ".volumes[].csi.nodePublishSecretRef",
		"Secret " + ns + "/secret-flex via " + at + ".volumes[].flexVolume.secretRef",
		"ConfigMap " + ns + "/cm-init-env via " + at + ".initContainers[].env[].valueFrom.configMapKeyRef",
		"Secret " + ns + "/secret-env via " + at + ".containers[].env[].valueFrom.secretKeyRef optional",
		"ConfigMap " + ns + "/cm-envfrom via " + at + ".containers[].envFrom[].configMapRef",
		"Secret " + ns + "/secret-envfrom via " + at + ".containers[].envFrom[].secretRef",
	}
}

func referredBy(referrer string, refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = referrer + " -> " + r
	}
	return out
}

// mirroredRefs reads the references of the referrers in namespace ns and
// of the cluster-scoped ones named, from the database file, as
// "Kind/name -> [group/]Kind ns/name via FIELD [optional] [prefix]".
func mirroredRefs(t *testing.T, path, ns string, clusterScoped ...string) []string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := testutil.StringRows(t, conn, `SELECT o.kind || '/' || o.name || ' -> ' ||
			CASE WHEN r.target_group = '' THEN '' ELSE r.target_group || '/' END || r.target_kind || ' ' ||
			r.target_namespace || '/' || r.target_name || ' via ' || r.via ||
			CASE WHEN r.optional THEN ' optional' ELSE '' END || CASE WHEN r.prefix THEN ' prefix' ELSE '' END
		FROM refs r JOIN objects o ON o.uid = r.referrer_uid
		WHERE o.namespace = ? OR o.namespace = '' AND o.name IN (SELECT value FROM json_each(?))`,
		ns, `["`+strings.Join(clusterScoped, `","`)+`"]`)
	slices.Sort(out)
	return out
}

// querySQL reads one text column of query from the database file.
func querySQL(t *testing.T, path, query string, args ...any) []string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return testutil.StringRows(t, conn, query, args...)
}

// TestReferencesMirrored: against a real kube-apiserver, one referrer
// through each reference path kubegcd reads (pods and every kind of pod
// template, StatefulSet claims, Ingresses, ServiceAccounts, bindings, HPAs,
// claims and volumes, and a custom kind's declared paths), with workloads
// scaled to zero and a CronJob between runs. The mirror holds every
// reference with the field it came from, the typed fields of the rules,
// the kept labels and annotations, and a Secret's type without its data.
func TestReferencesMirrored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "references")
	if err := createCRD(ctx, widgetGroup, "widgets", "Widget", "Namespaced"); err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
	labels := map[string]string{"app": "refs"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: refsPodSpec(false)}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	core, apps, batch := kube.CoreV1(), kube.AppsV1(), kube.BatchV1()
	opts := metav1.CreateOptions{}

	must(core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta("sa"),
		Secrets: []corev1.ObjectReference{{Name: "sa-token"}}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull-secret"}}},
		opts))
	pod, err := core.Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: meta("pod"), Spec: refsPodSpec(true)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Env: []corev1.EnvVar{{Name: "C", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-ephemeral"},
				Key: "k"}}}}}}}
	must(core.Pods(ns).UpdateEphemeralContainers(ctx, "pod", pod, metav1.UpdateOptions{}))
	must(apps.Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: meta("deploy"), Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(0)), Selector: selector, Template: template}}, opts))
	must(apps.ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta("rs"), Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To(int32(0)), Selector: selector, Template: template}}, opts))
	must(apps.StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta("sts"), Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(int32(0)), Selector: selector, Template: template, ServiceName: "svc",
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: meta("data"), Spec: claimSpec("")}}}}, opts))
	must(apps.DaemonSets(ns).Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta("ds"), Spec: appsv1.DaemonSetSpec{
		Selector: selector, Template: template}}, opts))
	must(core.ReplicationControllers(ns).Create(ctx, &corev1.ReplicationController{ObjectMeta: meta("rc"),
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To(int32(0)), Selector: labels, Template: &template}}, opts))
	jobTemplate := template
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	must(batch.Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: meta("job"), Spec: batchv1.JobSpec{Suspend: ptr.To(true),
		TTLSecondsAfterFinished: ptr.To(int32(100)), Template: jobTemplate}}, opts))
	// Between runs: no controller starts a Job of it.
	must(batch.CronJobs(ns).Create(ctx, &batchv1.CronJob{ObjectMeta: meta("cron"), Spec: batchv1.CronJobSpec{
		Schedule: "0 3 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTemplate}}}}, opts))
	pathType := networkingv1.PathTypePrefix
	backend := func(svc string) *networkingv1.IngressBackend {
		return &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc,
			Port: networkingv1.ServiceBackendPort{Number: 80}}}
	}
	must(kube.NetworkingV1().Ingresses(ns).Create(ctx, &networkingv1.Ingress{ObjectMeta: meta("ing"),
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"), DefaultBackend: backend("default-svc"),
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"example.com"}, SecretName: "tls-secret"}},
			Rules: []networkingv1.IngressRule{{Host: "example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType,
					Backend: *backend("web-svc")}}}}}}}}, opts))
	must(kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta("rb"),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "role"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sa"},
			{Kind: rbacv1.ServiceAccountKind, Name: "sa2", Namespace: "elsewhere"},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, opts))
	crb, pv := "refs-crb-"+ns, "refs-pv-"+ns
	must(kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta(crb),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sa", Namespace: ns}}}, opts))
	must(kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: meta("hpa"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "deploy"}}},
		opts))
	must(core.PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: meta("claim"),
		Spec: claimSpec(pv)}, opts))
	must(core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: meta(pv), Spec: corev1.PersistentVolumeSpec{
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		ClaimRef:    &corev1.ObjectReference{Namespace: ns, Name: "claim"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com",
			VolumeHandle: "h", NodePublishSecretRef: &corev1.SecretReference{Name: "secret-pv", Namespace: ns}}}}}, opts))
	t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(ctx, crb, metav1.DeleteOptions{})
		_ = core.PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{})
	})
	widgets := schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: "widgets"}
	must(dyn.Resource(widgets).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetGroup + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
		"spec": map[string]any{"configs": []any{map[string]any{"name": "cm-widget"}, map[string]any{"name": "cm-widget-2"}},
			"storageClassName": "fast"}}}, opts))

	// A Secret whose data must never reach the database, not even through
	// kubectl apply's copy of it in an annotation.
	data := map[string][]byte{"tls.crt": []byte(secretValue), "tls.key": []byte(secretValue)}
	lastApplied := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","data":{"tls.crt":%q}}`,
		base64.StdEncoding.EncodeToString([]byte(secretValue)))
	must(core.Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls-secret",
		Labels:      map[string]string{"app": "refs", "kubegcd.io/keep": "true"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": lastApplied, "team": "a"}},
		Type: corev1.SecretTypeTLS, Data: data}, opts))
	must(core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-volume",
		Labels: map[string]string{"app": "refs", "other": "x", "kor/used": "true"}}}, opts))

	d := daemons.Start(t, "", "--reference-path", widgetPaths, "--reference-path", widgetClass,
		"--mirror-labels", "configmaps=[app]", "--mirror-annotations", "*=[*]")
	d.WaitReady(t, 60*time.Second)

	var want []string
	want = append(want, referredBy("Pod/pod", append(specRefs(ns, "spec"),
		"PersistentVolumeClaim "+ns+"/pod-scratch via spec.volumes[].ephemeral",
		"ConfigMap "+ns+"/cm-ephemeral via spec.ephemeralContainers[].env[].valueFrom.configMapKeyRef"))...)
	for _, w := range []string{"Deployment/deploy", "ReplicaSet/rs", "DaemonSet/ds", "ReplicationController/rc", "Job/job"} {
		want = append(want, referredBy(w, specRefs(ns, templateSpec))...)
	}
	want = append(want, referredBy("StatefulSet/sts", append(specRefs(ns, templateSpec),
		"PersistentVolumeClaim "+ns+"/data-sts- via spec.volumeClaimTemplates[] prefix",
		"Service "+ns+"/svc via spec.serviceName optional"))...)
	want = append(want, referredBy("CronJob/cron", specRefs(ns, "spec.jobTemplate.spec.template.spec"))...)
	want = append(want, referredBy("Ingress/ing", []string{
		"networking.k8s.io/IngressClass /nginx via spec.ingressClassName optional",
		"Secret " + ns + "/tls-secret via spec.tls[].secretName",
		"Service " + ns + "/default-svc via spec.defaultBackend.service",
		"Service " + ns + "/web-svc via spec.rules[].http.paths[].backend.service",
	})...)
	want = append(want, referredBy("ServiceAccount/sa", []string{
		"Secret " + ns + "/sa-token via secrets[]",
		"Secret " + ns + "/pull-secret via imagePullSecrets[] optional",
	})...)
	want = append(want, referredBy("RoleBinding/rb", []string{
		"rbac.authorization.k8s.io/Role " + ns + "/role via roleRef",
		"ServiceAccount " + ns + "/sa via subjects[]",
		"ServiceAccount elsewhere/sa2 via subjects[]",
	})...)
	want = append(want, referredBy("ClusterRoleBinding/"+crb, []string{
		"rbac.authorization.k8s.io/ClusterRole /view via roleRef",
		"ServiceAccount " + ns + "/sa via subjects[]",
	})...)
	want = append(want, referredBy("HorizontalPodAutoscaler/hpa", []string{
		"apps/Deployment " + ns + "/deploy via spec.scaleTargetRef",
	})...)
	want = append(want, referredBy("PersistentVolumeClaim/claim", []string{
		"PersistentVolume /" + pv + " via spec.volumeName",
	})...)
	want = append(want, referredBy("PersistentVolume/"+pv, []string{
		"PersistentVolumeClaim " + ns + "/claim via spec.claimRef",
		"Secret " + ns + "/secret-pv via spec.csi.nodePublishSecretRef",
	})...)
	want = append(want, referredBy("Widget/w", []string{
		"ConfigMap " + ns + "/cm-widget via {.spec.configs[*].name}",
		"ConfigMap " + ns + "/cm-widget-2 via {.spec.configs[*].name}",
		"storage.k8s.io/StorageClass /fast via {.spec.storageClassName}",
	})...)
	slices.Sort(want)
	var got []string
	eventually(t, 30*time.Second, func() error {
		got = mirroredRefs(t, d.DBPath, ns, crb, pv)
		if !slices.Equal(got, want) {
			return fmt.Errorf("references (-want +got):\n%s", cmp.Diff(want, got))
		}
		return nil
	})
	t.Logf("%d references mirrored", len(got))

	typed := querySQL(t, d.DBPath, `
		SELECT o.kind || '/' || o.name || ' replicas=' || coalesce(w.replicas, '-')
			FROM workloads w JOIN objects o USING (uid) WHERE o.namespace = ?1
		UNION ALL SELECT 'Job/' || o.name || ' complete=' || j.complete || ' failed=' || j.failed || ' ttl=' ||
			coalesce(j.ttl_seconds_after_finished, '-') FROM jobs j JOIN objects o USING (uid) WHERE o.namespace = ?1
		UNION ALL SELECT 'CronJob/' || o.name || ' history=' || c.successful_jobs_history_limit || ',' ||
			c.failed_jobs_history_limit || ' suspend=' || c.suspend FROM cronjobs c JOIN objects o USING (uid)
			WHERE o.namespace = ?1
		UNION ALL SELECT 'PersistentVolumeClaim/' || o.name || ' phase=' || p.phase || ' volume=' || p.volume_name
			FROM pvcs p JOIN objects o USING (uid) WHERE o.namespace = ?1
		UNION ALL SELECT 'Secret/' || o.name || ' type=' || s.type FROM secrets s JOIN objects o USING (uid)
			WHERE o.namespace = ?1 AND o.name = 'tls-secret'
		UNION ALL SELECT 'label ' || o.kind || '/' || o.name || ' ' || l.key || '=' || l.value
			FROM object_labels l JOIN objects o USING (uid) WHERE o.namespace = ?1
		UNION ALL SELECT 'annotation ' || o.kind || '/' || o.name || ' ' || a.key || '=' || a.value
			FROM object_annotations a JOIN objects o USING (uid) WHERE o.namespace = ?1 AND o.kind = 'Secret'
		ORDER BY 1`, ns)
	wantTyped := []string{
		"CronJob/cron history=3,1 suspend=0",
		"Deployment/deploy replicas=0",
		"Job/job complete=0 failed=0 ttl=100",
		"PersistentVolumeClaim/claim phase=Pending volume=" + pv,
		"ReplicaSet/rs replicas=0",
		"ReplicationController/rc replicas=0",
		"Secret/tls-secret type=kubernetes.io/tls",
		"StatefulSet/sts replicas=0",
		"annotation Secret/tls-secret team=a",
		"label ConfigMap/cm-volume app=refs",
		"label ConfigMap/cm-volume kor/used=true",
		"label Secret/tls-secret kubegcd.io/keep=true",
	}
	if diff := cmp.Diff(wantTyped, typed); diff != "" {
		t.Errorf("typed fields, labels and annotations (-want +got):\n%s", diff)
	}

	// No byte of the Secret's data, raw or in base64, is in the database
	// or its write-ahead log, running or stopped.
	encoded := base64.StdEncoding.EncodeToString([]byte(secretValue))
	checkFiles := func(when string) {
		t.Helper()
		for _, f := range []string{d.DBPath, d.DBPath + "-wal"} {
			b, err := os.ReadFile(f)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{secretValue, encoded} {
				if bytes.Contains(b, []byte(v)) {
					t.Errorf("%s: %s holds the Secret's data %q", when, f, v)
				}
			}
		}
	}
	checkFiles("running")
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited %d", code)
	}
	checkFiles("stopped")
}
