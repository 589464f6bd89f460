package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// referrers creates one referrer of each kind whose pod spec or template
// kubegcd reads, each naming its own targets through every field: a Pod;
// workloads with Pods and scaled to zero; a CronJob between runs and one
// running. No built-in rule reports any of their targets.
func (f *rulesFixture) referrers(ns string) {
	f.t.Helper()
	core, apps, batch := kube.CoreV1(), kube.AppsV1(), kube.BatchV1()
	opts := metav1.CreateOptions{}

	// A Pod, with ephemeral containers added through their subresource,
	// and every other volume type that names a Secret.
	spec := f.targets(ns, "pod")
	f.configMap(ns, "pod-debug", never())
	for _, s := range []string{"cephfs", "rbd", "iscsi", "azure", "cinder", "scaleio", "storageos"} {
		f.secret(ns, "pod-"+s, corev1.SecretTypeOpaque, nil, never())
	}
	local := func(name string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: name} }
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: "cephfs", VolumeSource: corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{
			Monitors: []string{"10.0.0.1:6789"}, SecretRef: local("pod-cephfs")}}},
		corev1.Volume{Name: "rbd", VolumeSource: corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{
			CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img", SecretRef: local("pod-rbd")}}},
		corev1.Volume{Name: "iscsi", VolumeSource: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{
			TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", SecretRef: local("pod-iscsi"),
			SessionCHAPAuth: true}}},
		corev1.Volume{Name: "azure", VolumeSource: corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{
			SecretName: "pod-azure", ShareName: "share"}}},
		corev1.Volume{Name: "cinder", VolumeSource: corev1.VolumeSource{Cinder: &corev1.CinderVolumeSource{
			VolumeID: "vol", SecretRef: local("pod-cinder")}}},
		corev1.Volume{Name: "scaleio", VolumeSource: corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{
			Gateway: "https://gw", System: "sys", VolumeName: "vol", SecretRef: local("pod-scaleio")}}},
		corev1.Volume{Name: "storageos", VolumeSource: corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{
			VolumeName: "vol", SecretRef: local("pod-storageos")}}},
	)
	pod := f.pod(ns, "pod", spec, never())
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Env: []corev1.EnvVar{{Name: "D", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: *local("pod-debug"), Key: "k"}}}}}}}
	f.must(core.Pods(ns).UpdateEphemeralContainers(f.ctx, "pod", pod, metav1.UpdateOptions{}))

	// Deployments with a Pod, and scaled to zero: kor's false positive.
	f.deploymentUp(ns, "deploy-up", f.targets(ns, "deploy-up"), never())
	f.deployment(ns, "deploy-zero", 0, f.targets(ns, "deploy-zero"), never())

	labels := map[string]string{"app": "rs-zero"}
	f.must(apps.ReplicaSets(ns).Create(f.ctx, &appsv1.ReplicaSet{ObjectMeta: objectMeta(ns, "rs-zero"),
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template(f.targets(ns, "rs-zero"), labels)}}, opts))
	f.expect("ReplicaSet", ns, "rs-zero", never())

	// StatefulSets with Pods and scaled to zero. Their claims are
	// <template>-<set>-<ordinal>, whatever the ordinal: a scaled-down
	// set's claims are used again when it scales up.
	for _, s := range []struct {
		name     string
		replicas int32
		claims   []string
	}{
		{"sts-up", 2, []string{"data-sts-up-0", "data-sts-up-1", "data-sts-up-10"}},
		{"sts-zero", 0, []string{"data-sts-zero-0", "data-sts-zero-7"}},
	} {
		labels := map[string]string{"app": s.name}
		spec := f.targets(ns, s.name)
		set, err := apps.StatefulSets(ns).Create(f.ctx, &appsv1.StatefulSet{ObjectMeta: objectMeta(ns, s.name),
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(s.replicas), ServiceName: s.name,
				Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(spec, labels),
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
					Spec: claimSpec("")}}}}, opts)
		if err != nil {
			f.t.Fatal(err)
		}
		f.expect("StatefulSet", ns, s.name, never())
		for _, c := range s.claims {
			f.claim(ns, c, "", never())
		}
		for i := range s.replicas {
			podSpec := spec
			podSpec.Volumes = append(slices.Clone(spec.Volumes), corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("data-%s-%d", s.name, i)}}})
			f.pod(ns, fmt.Sprintf("%s-%d", s.name, i), podSpec, never(), label("app", s.name),
				ownedBy("apps/v1", "StatefulSet", set, true))
		}
	}
	// Claims named like a set's that are not: another set's, and no
	// ordinal.
	f.claim(ns, "data-sts-upx-0", "", afterADay(unusedPVCs))
	f.claim(ns, "data-sts-up-x", "", afterADay(unusedPVCs))
	f.claim(ns, "data-sts-gone-0", "", afterADay(unusedPVCs))

	labels = map[string]string{"app": "ds"}
	f.must(apps.DaemonSets(ns).Create(f.ctx, &appsv1.DaemonSet{ObjectMeta: objectMeta(ns, "ds"),
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template(f.targets(ns, "ds"), labels)}}, opts))
	f.expect("DaemonSet", ns, "ds", never())

	// A Job that has not finished.
	f.job(ns, "job", jobSpec(f.targets(ns, "job")), never())

	// A CronJob between runs: no Job, no Pod. kor's false positive.
	f.must(batch.CronJobs(ns).Create(f.ctx, &batchv1.CronJob{ObjectMeta: objectMeta(ns, "cron"), Spec: batchv1.CronJobSpec{
		Schedule: "0 3 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec(f.targets(ns, "cron"))}}}, opts))
	f.expect("CronJob", ns, "cron", never())
	// A CronJob running: its Job and that Job's Pod.
	runSpec := jobSpec(f.targets(ns, "cron-active"))
	cron, err := batch.CronJobs(ns).Create(f.ctx, &batchv1.CronJob{ObjectMeta: objectMeta(ns, "cron-active"),
		Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: runSpec}}}, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.expect("CronJob", ns, "cron-active", never())
	run := f.job(ns, "cron-active-29000", runSpec, never(), ownedBy("batch/v1", "CronJob", cron, true))
	f.pod(ns, "cron-active-29000-q8m4z", runSpec.Template.Spec, never(), ownedBy("batch/v1", "Job", run, true))

	// ReplicationControllers with a Pod, and scaled to zero.
	for _, r := range []struct {
		name     string
		replicas int32
	}{{"rc-up", 1}, {"rc-zero", 0}} {
		labels := map[string]string{"app": r.name}
		tmpl := template(f.targets(ns, r.name), labels)
		rc, err := core.ReplicationControllers(ns).Create(f.ctx, &corev1.ReplicationController{
			ObjectMeta: objectMeta(ns, r.name),
			Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To(r.replicas), Selector: labels, Template: &tmpl}}, opts)
		if err != nil {
			f.t.Fatal(err)
		}
		f.expect("ReplicationController", ns, r.name, never())
		if r.replicas > 0 {
			f.pod(ns, r.name+"-b7x9w", tmpl.Spec, never(), label("app", r.name),
				ownedBy("v1", "ReplicationController", rc, true))
		}
	}
}

// otherReferrers creates the referrers that are not pods: an Ingress, a
// ServiceAccount's secrets, bindings with ServiceAccount subjects (each in
// its namespace: kor matches subjects by name alone), HPAs, a claim and
// its volume, and a custom resource's declared path.
func (f *rulesFixture) otherReferrers(ns, other string) {
	f.t.Helper()
	opts := metav1.CreateOptions{}
	f.secret(ns, "ing-tls", corev1.SecretTypeOpaque, nil, never())
	f.must(kube.CoreV1().Services(ns).Create(f.ctx, &corev1.Service{ObjectMeta: objectMeta(ns, "ing-svc"),
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, opts))
	f.expect("Service", ns, "ing-svc", never())
	backend := func(svc string) *networkingv1.IngressBackend {
		return &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc,
			Port: networkingv1.ServiceBackendPort{Number: 80}}}
	}
	pathType := networkingv1.PathTypePrefix
	// Its second backend Service does not exist: no rule reports an
	// Ingress, whose backends are not pods'.
	f.must(kube.NetworkingV1().Ingresses(ns).Create(f.ctx, &networkingv1.Ingress{ObjectMeta: objectMeta(ns, "ing"),
		Spec: networkingv1.IngressSpec{DefaultBackend: backend("ing-svc"),
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"example.com"}, SecretName: "ing-tls"}},
			Rules: []networkingv1.IngressRule{{Host: "example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType,
					Backend: *backend("ing-web")}}}}}}}}, opts))
	f.expect("Ingress", ns, "ing", never())

	// A ServiceAccount's secrets and pull secrets are referenced; the
	// ServiceAccount itself is not.
	f.secret(ns, "sa-listed", corev1.SecretTypeOpaque, nil, never())
	f.secret(ns, "sa-pull", corev1.SecretTypeOpaque, nil, never())
	f.serviceAccount(&corev1.ServiceAccount{ObjectMeta: objectMeta(ns, "sa-with-secrets"),
		Secrets:          []corev1.ObjectReference{{Name: "sa-listed"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "sa-pull"}}}, afterADay(unusedSAs))

	// Subjects name ServiceAccounts in a namespace: their own, or the
	// binding's. The same names elsewhere are not referenced.
	f.role(ns, "rb-role", never())
	f.must(kube.RbacV1().RoleBindings(ns).Create(f.ctx, &rbacv1.RoleBinding{ObjectMeta: objectMeta(ns, "rb"),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rb-role"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "rb-sa"},
			{Kind: rbacv1.ServiceAccountKind, Name: "rb-sa-b", Namespace: other},
			{Kind: rbacv1.ServiceAccountKind, Name: "nobody"},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, opts))
	f.expect("RoleBinding", ns, "rb", never())
	crb := "rules-fixture-crb"
	f.must(kube.RbacV1().ClusterRoleBindings().Create(f.ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: objectMeta("", crb),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "crb-sa", Namespace: other}}}, opts))
	f.expect("ClusterRoleBinding", "", crb, never())
	for _, sa := range []struct {
		ns, name string
		w        want
	}{
		{ns, "rb-sa", never()}, {other, "rb-sa", afterADay(unusedSAs)},
		{other, "rb-sa-b", never()}, {ns, "rb-sa-b", afterADay(unusedSAs)},
		{other, "crb-sa", never()}, {ns, "crb-sa", afterADay(unusedSAs)},
	} {
		f.serviceAccount(&corev1.ServiceAccount{ObjectMeta: objectMeta(sa.ns, sa.name)}, sa.w)
	}

	// HPAs: one's target exists (deploy-zero), one's does not. Neither
	// is a rule's business.
	for name, target := range map[string]string{"hpa": "deploy-zero", "hpa-missing": "gone"} {
		f.must(kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(f.ctx, &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: objectMeta(ns, name), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment",
					Name: target}}}, opts))
		f.expect("HorizontalPodAutoscaler", ns, name, never())
	}

	// A claim bound to a volume, used by no Pod: the volume's claimRef is
	// the binding's other end, not a use. The volume's Secret is used.
	pv := "rules-fixture-pv"
	f.claim(ns, "pvc-bound", pv, afterADay(unusedPVCs))
	f.secret(ns, "pv-secret", corev1.SecretTypeOpaque, nil, never())
	f.must(kube.CoreV1().PersistentVolumes().Create(f.ctx, &corev1.PersistentVolume{ObjectMeta: objectMeta("", pv),
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:    &corev1.ObjectReference{Namespace: ns, Name: "pvc-bound"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "csi.example.com", VolumeHandle: "h",
				NodePublishSecretRef: &corev1.SecretReference{Name: "pv-secret", Namespace: ns}}}}}, opts))
	f.expect("PersistentVolume", "", pv, never())
	f.t.Cleanup(func() {
		_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb, metav1.DeleteOptions{})
		_ = kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv, metav1.DeleteOptions{})
	})

	// A custom resource's declared reference (--reference-path): kor's
	// "won't fix".
	f.configMap(ns, "widget-config", never())
	f.must(dyn.Resource(widgetGVR).Namespace(ns).Create(f.ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetGVR.Group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"},
		"spec": map[string]any{"configRef": "widget-config"}}}, opts))
	f.expect("Widget", ns, "w", never())
}

// korFixture is kor's own fixture for ConfigMaps (pkg/kor/configmaps_test.go):
// used through a volume, env, envFrom and an init container's env, and
// labelled kor/used=true and false. kor reports configmap-3 and
// configmap-5.
func (f *rulesFixture) korFixture(ns string) {
	f.t.Helper()
	cm := func(n int, w want, opts ...metaOpt) string {
		name := fmt.Sprintf("configmap-%d", n)
		f.configMap(ns, name, w, append([]metaOpt{label("app", "my-app")}, opts...)...)
		return name
	}
	cm1, cm2 := cm(1, never()), cm(2, never())
	cm(3, afterADay(unusedCMs))
	cm(4, never(), label("kor/used", "true"))
	cm(5, always(unusedCMs), label("kor/used", "false"))
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	f.pod(ns, "pod-1", minimalSpec(func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "vol-1", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: ref(cm1)}}}}
	}), never())
	f.pod(ns, "pod-2", minimalSpec(func(s *corev1.PodSpec) {
		s.Containers[0].Env = []corev1.EnvVar{{Name: "ENV_VAR_1", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref(cm1), Key: "k"}}}}
	}), never())
	f.pod(ns, "pod-3", minimalSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: ref(cm2)}}}
	}), never())
	f.pod(ns, "pod-4", minimalSpec(func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", Env: []corev1.EnvVar{{Name: "INIT_ENV_VAR_1",
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref(cm2),
				Key: "k"}}}}}}
	}), never())
}

// unreferenced creates ConfigMaps, Secrets, claims and ServiceAccounts
// nothing references: those the unused-* rules report once the grace has
// passed, and those no built-in ever reports.
func (f *rulesFixture) unreferenced(ns, other string) {
	f.t.Helper()
	f.configMap(ns, "unused", afterADay(unusedCMs))
	f.secret(ns, "unused", corev1.SecretTypeOpaque, nil, afterADay(unusedSecrets))
	f.secret(ns, "unused-basic-auth", corev1.SecretTypeBasicAuth, map[string]string{"username": "u"}, afterADay(unusedSecrets))
	f.claim(ns, "unused", "", afterADay(unusedPVCs))
	f.serviceAccount(&corev1.ServiceAccount{ObjectMeta: objectMeta(ns, "unused")}, afterADay(unusedSAs))
	// The same name as a referenced target, in another namespace.
	f.configMap(other, "pod-vol", afterADay(unusedCMs))

	// Secrets no rule reports: Helm's releases, service-account tokens and
	// pull secrets.
	f.secret(ns, "sh.helm.release.v1.shop.v1", "helm.sh/release.v1", map[string]string{"release": "x"}, never())
	f.secret(ns, "unused-token", corev1.SecretTypeServiceAccountToken, nil, never(),
		annotation(corev1.ServiceAccountNameKey, "unused"))
	f.secret(ns, "unused-dockercfg", corev1.SecretTypeDockercfg, map[string]string{corev1.DockerConfigKey: "{}"}, never())
	f.secret(ns, "unused-dockerconfigjson", corev1.SecretTypeDockerConfigJson,
		map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`}, never())

	// kor's exceptions, and what is marked to be kept.
	f.configMap(ns, "kube-root-ca.crt", never())
	f.configMap(ns, "openshift-service-ca.crt", never())
	f.configMap(ns, "kor-used", never(), label("kor/used", "true"))
	f.secret(ns, "kor-used", corev1.SecretTypeOpaque, nil, never(), label("kor/used", "true"))
	f.configMap(ns, "keep-labelled", never(), label("kubegcd.io/keep", "true"))
	f.secret(ns, "keep-annotated", corev1.SecretTypeOpaque, nil, never(), annotation("kubegcd.io/keep", "true"))
	f.claim(ns, "helm-keep", "", never(), annotation("helm.sh/resource-policy", "keep"))
	f.serviceAccount(&corev1.ServiceAccount{ObjectMeta: objectMeta(ns, "keep-labelled", label("kubegcd.io/keep", "true"))},
		never())
	// kor/used=false is reported, referenced or not.
	f.configMap(ns, "kor-unused", always(unusedCMs), label("kor/used", "false"))
	f.pod(ns, "kor-pod", minimalSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "kor-unused"}}}}
	}), never())
	// An owned object is the owner garbage collector's; its owner,
	// unreferenced, is reported.
	owner := f.configMap(ns, "owner", afterADay(unusedCMs))
	f.configMap(ns, "owned", never(), ownedBy("v1", "ConfigMap", owner, false))
	// Being deleted.
	f.configMap(ns, "deleting", never(), func(m *metav1.ObjectMeta) { m.Finalizers = []string{holdFinalizer} })
	f.deleting(ns, "deleting")
	// In the system namespaces.
	for _, sys := range []string{metav1.NamespaceSystem, metav1.NamespacePublic} {
		name := "rules-fixture-" + ns
		f.configMap(sys, name, never())
		f.t.Cleanup(func() { _ = kube.CoreV1().ConfigMaps(sys).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

// finishedJobs creates Jobs finished with and without
// ttlSecondsAfterFinished, recently and long ago, and a CronJob's Jobs
// within and beyond its history limits.
func (f *rulesFixture) finishedJobs(ns string, now time.Time) {
	f.t.Helper()
	day := 24 * time.Hour
	f.finishedJob(ns, "done-long-ago", false, now.Add(-2*day), nil, always(finishedJobs))
	f.finishedJob(ns, "failed-long-ago", true, now.Add(-3*day), nil, always(finishedJobs))
	f.finishedJob(ns, "done", false, now, nil, afterADay(finishedJobs))
	f.finishedJob(ns, "done-with-ttl", false, now.Add(-2*day), ptr.To(int32(3600)), never())
	f.finishedJob(ns, "failed-with-ttl", true, now.Add(-2*day), ptr.To(int32(3600)), never())
	f.finishedJob(ns, "done-kept", false, now.Add(-2*day), nil, never(), label("kubegcd.io/keep", "true"))
	f.job(ns, "running", jobSpec(minimalSpec(nil)), never())

	for _, c := range []struct {
		name                 string
		successful, failed   *int32
		done, failedJobs     []time.Duration
		wantDone, wantFailed []want
	}{
		// Keeps one of each: the older ones are reported once a day old.
		{"hourly", ptr.To(int32(1)), ptr.To(int32(1)),
			[]time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}, []time.Duration{time.Hour, 2 * time.Hour},
			[]want{never(), afterADay(finishedJobs), afterADay(finishedJobs)}, []want{never(), afterADay(finishedJobs)}},
		// The defaults: three successful, one failed.
		{"nightly", nil, nil,
			[]time.Duration{2 * day, 3 * day, 4 * day, 5 * day}, []time.Duration{2 * day},
			[]want{never(), never(), never(), always(finishedJobs)}, []want{never()}},
	} {
		cron, err := kube.BatchV1().CronJobs(ns).Create(f.ctx, &batchv1.CronJob{ObjectMeta: objectMeta(ns, c.name),
			Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", SuccessfulJobsHistoryLimit: c.successful,
				FailedJobsHistoryLimit: c.failed, JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec(minimalSpec(nil))}}},
			metav1.CreateOptions{})
		if err != nil {
			f.t.Fatal(err)
		}
		f.expect("CronJob", ns, c.name, never())
		owner := ownedBy("batch/v1", "CronJob", cron, true)
		for i, age := range c.done {
			f.finishedJob(ns, fmt.Sprintf("%s-%d", c.name, i), false, now.Add(-age), nil, c.wantDone[i], owner)
		}
		for i, age := range c.failedJobs {
			f.finishedJob(ns, fmt.Sprintf("%s-failed-%d", c.name, i), true, now.Add(-age), nil, c.wantFailed[i], owner)
		}
	}
}

// dangling creates Pods and workloads that refer to what does not exist,
// and referrers no rule reports for it.
func (f *rulesFixture) dangling(ns, other string) {
	f.t.Helper()
	cmVolume := func(name string, optional bool) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "v" + fmt.Sprint(len(s.Volumes)),
				VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: ptr.To(optional)}}})
		}
	}
	f.pod(ns, "dangling-pod", minimalSpec(func(s *corev1.PodSpec) {
		cmVolume("missing", false)(s)
		s.Containers[0].Env = []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k"}}}}
	}), always(danglingRefs))
	// A ConfigMap of that name exists, in another namespace.
	f.configMap(other, "elsewhere", afterADay(unusedCMs))
	f.pod(ns, "dangling-elsewhere", minimalSpec(cmVolume("elsewhere", false)), always(danglingRefs))
	f.deployment(ns, "dangling-zero", 0, minimalSpec(func(s *corev1.PodSpec) { s.ServiceAccountName = "missing" }),
		always(danglingRefs))
	f.deploymentUp(ns, "dangling-up", minimalSpec(cmVolume("missing-up", false)), always(danglingRefs))
	f.must(kube.BatchV1().CronJobs(ns).Create(f.ctx, &batchv1.CronJob{ObjectMeta: objectMeta(ns, "dangling-cron"),
		Spec: batchv1.CronJobSpec{Schedule: "0 3 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: jobSpec(minimalSpec(
			func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "missing"}}}}
			}))}}}, metav1.CreateOptions{}))
	f.expect("CronJob", ns, "dangling-cron", always(danglingRefs))
	suspended := jobSpec(minimalSpec(cmVolume("missing", false)))
	suspended.Suspend = ptr.To(true)
	f.job(ns, "dangling-suspended", suspended, always(danglingRefs))

	// Not reported: optional references, an ephemeral volume's claim
	// (made after its Pod), a Pod that has finished, a Job that has
	// finished, a StatefulSet's claims not made yet, a kept referrer.
	f.pod(ns, "optional", minimalSpec(func(s *corev1.PodSpec) {
		cmVolume("missing", true)(s)
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "missing"}}
	}), never())
	// (Made directly: pod would make the claim.)
	f.must(kube.CoreV1().Pods(ns).Create(f.ctx, &corev1.Pod{ObjectMeta: objectMeta(ns, "ephemeral"),
		Spec: minimalSpec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: claimSpec("")}}}}}
		})}, metav1.CreateOptions{}))
	f.expect("Pod", ns, "ephemeral", never())
	done := f.pod(ns, "dangling-succeeded", minimalSpec(cmVolume("missing", false)), never())
	done.Status.Phase = corev1.PodSucceeded
	f.must(kube.CoreV1().Pods(ns).UpdateStatus(f.ctx, done, metav1.UpdateOptions{}))
	doneJob := f.job(ns, "dangling-done", jobSpec(minimalSpec(cmVolume("missing", false))), afterADay(finishedJobs))
	f.finish(doneJob, false, time.Now())
	labels := map[string]string{"app": "sts-fresh"}
	f.must(kube.AppsV1().StatefulSets(ns).Create(f.ctx, &appsv1.StatefulSet{ObjectMeta: objectMeta(ns, "sts-fresh"),
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(0)), ServiceName: "sts-fresh",
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template(minimalSpec(nil), labels),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: claimSpec("")}}}}, metav1.CreateOptions{}))
	f.expect("StatefulSet", ns, "sts-fresh", never())
	f.deployment(ns, "dangling-kept", 0, minimalSpec(cmVolume("missing", false)), never(),
		annotation("kubegcd.io/keep", "true"))
}

// ttls creates objects with the TTL annotations and labels of kubegcd,
// kube-janitor and Kyverno, expired and not, unparseable, on namespaced
// and cluster-scoped objects and on Namespaces.
func (f *rulesFixture) ttls(ns string) {
	f.t.Helper()
	f.role(ns, "ttl-1h", afterADay(ttlExpired), annotation("kubegcd.io/ttl", "1h"))
	f.role(ns, "ttl-7d", never(), annotation("kubegcd.io/ttl", "7d"))
	f.role(ns, "expires-past", always(ttlExpired), annotation("kubegcd.io/expires", "2020-01-01"))
	f.role(ns, "expires-future", never(), annotation("kubegcd.io/expires", "2999-01-01T00:00:00Z"))
	f.deployment(ns, "janitor-ttl", 0, minimalSpec(nil), afterADay(ttlExpired), annotation("janitor/ttl", "1d"))
	f.deployment(ns, "janitor-forever", 0, minimalSpec(nil), never(), annotation("janitor/ttl", "forever"))
	f.role(ns, "janitor-expires", always(ttlExpired), annotation("janitor/expires", "2020-01-01T10:00"))
	f.role(ns, "kyverno-ttl", afterADay(ttlExpired), label("cleanup.kyverno.io/ttl", "2h"))
	f.role(ns, "kyverno-date", always(ttlExpired), label("cleanup.kyverno.io/ttl", "2020-01-01"))
	f.role(ns, "ttl-bad", always(ttlUnparseable), annotation("kubegcd.io/ttl", "soon"))
	f.role(ns, "ttl-bad-and-expired", always(ttlExpired), annotation("kubegcd.io/ttl", "soon"),
		annotation("kubegcd.io/expires", "2020-01-01"))
	f.role(ns, "ttl-kept", never(), annotation("kubegcd.io/ttl", "1h"), annotation("kubegcd.io/keep", "true"))
	owner := f.configMap(ns, "ttl-owner", never(), label("kor/used", "true"))
	f.role(ns, "ttl-owned", never(), annotation("kubegcd.io/ttl", "1h"), ownedBy("v1", "ConfigMap", owner, false))
	sysRole := "rules-fixture-ttl-" + ns
	f.role(metav1.NamespaceSystem, sysRole, never(), annotation("kubegcd.io/ttl", "1h"))

	// Namespaces and cluster-scoped objects: Kyverno's TTL label does
	// nothing on them.
	for _, n := range []struct {
		name string
		w    want
		opt  metaOpt
	}{
		{"rules-fixture-ttl", afterADay(ttlExpired), annotation("kubegcd.io/ttl", "1d")},
		{"rules-fixture-kyverno", afterADay(ttlExpired), label("cleanup.kyverno.io/ttl", "1h")},
		{"rules-fixture-bad-ttl", always(ttlUnparseable), annotation("janitor/expires", "next-friday")},
	} {
		f.must(kube.CoreV1().Namespaces().Create(f.ctx, &corev1.Namespace{ObjectMeta: objectMeta("", n.name, n.opt)},
			metav1.CreateOptions{}))
		f.expect("Namespace", "", n.name, n.w)
	}
	for _, c := range []struct {
		name string
		w    want
		opt  metaOpt
	}{
		{"rules-fixture-temporary", afterADay(ttlExpired), label("cleanup.kyverno.io/ttl", "1h")},
		{"rules-fixture-expired", always(ttlExpired), annotation("janitor/expires", "2020-01-01")},
	} {
		f.must(kube.RbacV1().ClusterRoles().Create(f.ctx, &rbacv1.ClusterRole{ObjectMeta: objectMeta("", c.name, c.opt)},
			metav1.CreateOptions{}))
		f.expect("ClusterRole", "", c.name, c.w)
	}
	f.t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.RbacV1().Roles(metav1.NamespaceSystem).Delete(ctx, sysRole, metav1.DeleteOptions{})
		for _, c := range []string{"rules-fixture-temporary", "rules-fixture-expired"} {
			_ = kube.RbacV1().ClusterRoles().Delete(ctx, c, metav1.DeleteOptions{})
		}
	})
}

// history creates a Pod and what it alone references, and returns the
// Pod's name: the test deletes it once kubegcd has synced. Its targets
// stay within their grace for a day after that, not after the sync.
func (f *rulesFixture) history(ns string) string {
	f.t.Helper()
	f.configMap(ns, "dropped", afterHistory(unusedCMs))
	f.secret(ns, "dropped", corev1.SecretTypeOpaque, nil, afterHistory(unusedSecrets))
	f.claim(ns, "dropped", "", afterHistory(unusedPVCs))
	f.serviceAccount(&corev1.ServiceAccount{ObjectMeta: objectMeta(ns, "dropped")}, afterHistory(unusedSAs))
	f.pod(ns, "dropped", minimalSpec(func(s *corev1.PodSpec) {
		s.ServiceAccountName = "dropped"
		s.Volumes = []corev1.Volume{
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "dropped"}}}},
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dropped"}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: "dropped"}}},
		}
	}), never())
	return "dropped"
}
