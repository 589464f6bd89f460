package ingest

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/refs"
)

// referrerResources are the kinds read in full for the references their
// specs make (a pod template's volumes, a binding's subjects) and the
// typed fields the cleanup rules read. Each comes as typed protobuf, the
// cheapest to decode, and is dropped once extracted: the mirror keeps the
// references, never the body. A version client-go has no types for comes
// through the dynamic client instead.
var referrerResources = map[schema.GroupResource]typedResource{
	{Group: "apps", Resource: "deployments"}: referrer("v1", func(i *Ingester) source {
		return newSource(i.typed.AppsV1().Deployments(""),
			func(l *appsv1.DeploymentList) []runtime.Object { return objects(l.Items) })
	}, func(d *appsv1.Deployment, o *db.Object) { o.Workload = workload(d.Spec.Replicas) }),
	{Group: "apps", Resource: "replicasets"}: referrer("v1", func(i *Ingester) source {
		return newSource(i.typed.AppsV1().ReplicaSets(""),
			func(l *appsv1.ReplicaSetList) []runtime.Object { return objects(l.Items) })
	}, func(r *appsv1.ReplicaSet, o *db.Object) { o.Workload = workload(r.Spec.Replicas) }),
	{Group: "apps", Resource: "statefulsets"}: referrer("v1", func(i *Ingester) source {
		return newSource(i.typed.AppsV1().StatefulSets(""),
			func(l *appsv1.StatefulSetList) []runtime.Object { return objects(l.Items) })
	}, func(s *appsv1.StatefulSet, o *db.Object) { o.Workload = workload(s.Spec.Replicas) }),
	{Group: "apps", Resource: "daemonsets"}: referrer[appsv1.DaemonSet]("v1", func(i *Ingester) source {
		return newSource(i.typed.AppsV1().DaemonSets(""),
			func(l *appsv1.DaemonSetList) []runtime.Object { return objects(l.Items) })
	}, nil),
	{Group: "batch", Resource: "jobs"}: referrer("v1", func(i *Ingester) source {
		return newSource(i.typed.BatchV1().Jobs(""), func(l *batchv1.JobList) []runtime.Object { return objects(l.Items) })
	}, extractJob),
	{Group: "batch", Resource: "cronjobs"}: referrer("v1", func(i *Ingester) source {
		return newSource(i.typed.BatchV1().CronJobs(""),
			func(l *batchv1.CronJobList) []runtime.Object { return objects(l.Items) })
	}, extractCronJob),
	{Group: "", Resource: "replicationcontrollers"}: referrer("v1", func(i *Ingester) source {
		return newSource(i.typed.CoreV1().ReplicationControllers(""),
			func(l *corev1.ReplicationControllerList) []runtime.Object { return objects(l.Items) })
	}, func(r *corev1.ReplicationController, o *db.Object) { o.Workload = workload(r.Spec.Replicas) }),
	{Group: "", Resource: "serviceaccounts"}: referrer[corev1.ServiceAccount]("v1", func(i *Ingester) source {
		return newSource(i.typed.CoreV1().ServiceAccounts(""),
			func(l *corev1.ServiceAccountList) []runtime.Object { return objects(l.Items) })
	}, nil),
	{Group: "", Resource: "persistentvolumeclaims"}: referrer("v1", func(i *Ingester) source {
		return newSource(i.typed.CoreV1().PersistentVolumeClaims(""),
			func(l *corev1.PersistentVolumeClaimList) []runtime.Object { return objects(l.Items) })
	}, func(c *corev1.PersistentVolumeClaim, o *db.Object) {
		o.PVC = &db.PVC{Phase: string(c.Status.Phase), VolumeName: c.Spec.VolumeName}
	}),
	{Group: "", Resource: "persistentvolumes"}: referrer[corev1.PersistentVolume]("v1", func(i *Ingester) source {
		return newSource(i.typed.CoreV1().PersistentVolumes(),
			func(l *corev1.PersistentVolumeList) []runtime.Object { return objects(l.Items) })
	}, nil),
	{Group: "networking.k8s.io", Resource: "ingresses"}: referrer[networkingv1.Ingress]("v1", func(i *Ingester) source {
		return newSource(i.typed.NetworkingV1().Ingresses(""),
			func(l *networkingv1.IngressList) []runtime.Object { return objects(l.Items) })
	}, nil),
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}: referrer[rbacv1.RoleBinding]("v1",
		func(i *Ingester) source {
			return newSource(i.typed.RbacV1().RoleBindings(""),
				func(l *rbacv1.RoleBindingList) []runtime.Object { return objects(l.Items) })
		}, nil),
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}: referrer[rbacv1.ClusterRoleBinding]("v1",
		func(i *Ingester) source {
			return newSource(i.typed.RbacV1().ClusterRoleBindings(),
				func(l *rbacv1.ClusterRoleBindingList) []runtime.Object { return objects(l.Items) })
		}, nil),
	// Discovery prefers v2 where served; v1 has the same scaleTargetRef.
	{Group: "autoscaling", Resource: "horizontalpodautoscalers"}: {
		source: func(i *Ingester, gvr schema.GroupVersionResource) source {
			switch gvr.Version {
			case autoscalingv2.SchemeGroupVersion.Version:
				return newSource(i.typed.AutoscalingV2().HorizontalPodAutoscalers(""),
					func(l *autoscalingv2.HorizontalPodAutoscalerList) []runtime.Object { return objects(l.Items) })
			case autoscalingv1.SchemeGroupVersion.Version:
				return newSource(i.typed.AutoscalingV1().HorizontalPodAutoscalers(""),
					func(l *autoscalingv1.HorizontalPodAutoscalerList) []runtime.Object { return objects(l.Items) })
			}
			return dynamicSourceOf(i, gvr)
		},
		extract: func(obj runtime.Object, o *db.Object) {
			if _, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler); ok {
				o.Refs = dbRefs(refs.Of(obj))
				return
			}
			if h := typedAs[autoscalingv2.HorizontalPodAutoscaler](obj); h != nil {
				o.Refs = dbRefs(refs.Of(h))
			}
		},
	},
}

// referrer reads a kind as typed protobuf at version, or through the
// dynamic client at any other version, and extracts its references and,
// with fields, its typed fields.
func referrer[T any, PT interface {
	*T
	runtime.Object
}](version string, typed func(*Ingester) source, fields func(PT, *db.Object)) typedResource {
	return typedResource{
		source: func(i *Ingester, gvr schema.GroupVersionResource) source {
			if gvr.Version == version {
				return typed(i)
			}
			return dynamicSourceOf(i, gvr)
		},
		extract: func(obj runtime.Object, o *db.Object) {
			p := PT(typedAs[T](obj))
			if p == nil {
				return
			}
			o.Refs = dbRefs(refs.Of(p))
			if fields != nil {
				fields(p, o)
			}
		},
	}
}

// typedAs is obj as a *T: obj itself, or obj converted from unstructured;
// nil when it is neither.
func typedAs[T any](obj runtime.Object) *T {
	if t, ok := any(obj).(*T); ok {
		return t
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		t := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
			return nil
		}
		return t
	}
	return nil
}

// dbRefs copies references to the mirror's type.
func dbRefs(rs []refs.Ref) []db.Ref {
	if len(rs) == 0 {
		return nil
	}
	out := make([]db.Ref, len(rs))
	for i, r := range rs {
		out[i] = db.Ref(r)
	}
	return out
}

// copied is a copy of *p, so that the mirror's row does not hold the
// decoded object's memory; nil for nil.
func copied[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func workload(replicas *int32) *db.Workload { return &db.Workload{Replicas: copied(replicas)} }

// extractJob keeps whether a Job finished, how and when, and its TTL.
func extractJob(j *batchv1.Job, o *db.Object) {
	job := &db.Job{TTLSecondsAfterFinished: copied(j.Spec.TTLSecondsAfterFinished)}
	var failedAt *metav1.Time
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			job.Complete = true
		case batchv1.JobFailed:
			job.Failed = true
			failedAt = &c.LastTransitionTime
		}
	}
	switch {
	case j.Status.CompletionTime != nil:
		job.FinishedAt = timePtr(*j.Status.CompletionTime)
	case failedAt != nil:
		job.FinishedAt = timePtr(*failedAt)
	}
	o.Job = job
}

func extractCronJob(c *batchv1.CronJob, o *db.Object) {
	o.CronJob = &db.CronJob{SuccessfulJobsHistoryLimit: copied(c.Spec.SuccessfulJobsHistoryLimit),
		FailedJobsHistoryLimit: copied(c.Spec.FailedJobsHistoryLimit),
		Suspend:                c.Spec.Suspend != nil && *c.Spec.Suspend}
}
