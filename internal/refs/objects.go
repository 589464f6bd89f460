package refs

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegcd/kubegcd/internal/gcrules"
)

const rbacGroup = rbacv1.GroupName

// Of returns the references a typed object makes, sorted, or nil for a
// type that makes none kubegcd reads.
func Of(obj runtime.Object) []Ref {
	var c collector
	switch o := obj.(type) {
	case *corev1.Pod:
		c.podSpec(o.Namespace, "spec", o.Name, &o.Spec)
	case *corev1.ReplicationController:
		if o.Spec.Template != nil {
			c.podSpec(o.Namespace, "spec.template.spec", "", &o.Spec.Template.Spec)
		}
	case *appsv1.Deployment:
		c.podSpec(o.Namespace, "spec.template.spec", "", &o.Spec.Template.Spec)
	case *appsv1.ReplicaSet:
		c.podSpec(o.Namespace, "spec.template.spec", "", &o.Spec.Template.Spec)
	case *appsv1.DaemonSet:
		c.podSpec(o.Namespace, "spec.template.spec", "", &o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		c.statefulSet(o)
	case *batchv1.Job:
		c.podSpec(o.Namespace, "spec.template.spec", "", &o.Spec.Template.Spec)
	case *batchv1.CronJob:
		c.podSpec(o.Namespace, "spec.jobTemplate.spec.template.spec", "", &o.Spec.JobTemplate.Spec.Template.Spec)
	case *networkingv1.Ingress:
		c.ingress(o)
	case *corev1.ServiceAccount:
		for _, s := range o.Secrets {
			ns := s.Namespace
			if ns == "" {
				ns = o.Namespace
			}
			c.add(Ref{Kind: KindSecret, Namespace: ns, Name: s.Name, Via: "secrets[]"})
		}
		for _, s := range o.ImagePullSecrets {
			c.add(Ref{Kind: KindSecret, Namespace: o.Namespace, Name: s.Name, Via: "imagePullSecrets[]", Optional: true})
		}
	case *rbacv1.RoleBinding:
		c.roleRef(o.Namespace, o.RoleRef)
		c.subjects(o.Namespace, o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		c.roleRef("", o.RoleRef)
		c.subjects("", o.Subjects)
	case *autoscalingv2.HorizontalPodAutoscaler:
		t := o.Spec.ScaleTargetRef
		c.add(Ref{Group: gcrules.Group(t.APIVersion), Kind: t.Kind, Namespace: o.Namespace, Name: t.Name,
			Via: "spec.scaleTargetRef"})
	case *autoscalingv1.HorizontalPodAutoscaler:
		t := o.Spec.ScaleTargetRef
		c.add(Ref{Group: gcrules.Group(t.APIVersion), Kind: t.Kind, Namespace: o.Namespace, Name: t.Name,
			Via: "spec.scaleTargetRef"})
	case *corev1.PersistentVolumeClaim:
		c.add(Ref{Kind: KindVolume, Name: o.Spec.VolumeName, Via: "spec.volumeName"})
	case *corev1.PersistentVolume:
		c.persistentVolume(o)
	default:
		return nil
	}
	return c.sorted()
}

func (c *collector) statefulSet(o *appsv1.StatefulSet) {
	c.podSpec(o.Namespace, "spec.template.spec", "", &o.Spec.Template.Spec)
	// The set's claims are <template>-<set>-<ordinal>. They stay after a
	// scale-down and are used again by the next scale-up, so every
	// ordinal counts, not only those below spec.replicas.
	for _, t := range o.Spec.VolumeClaimTemplates {
		c.add(Ref{Kind: KindClaim, Namespace: o.Namespace, Name: t.Name + "-" + o.Name + "-",
			Via: "spec.volumeClaimTemplates[]", Prefix: true})
	}
	// The headless Service gives the pods their names in DNS; the pods
	// start without it.
	c.add(Ref{Kind: KindService, Namespace: o.Namespace, Name: o.Spec.ServiceName, Via: "spec.serviceName", Optional: true})
}

func (c *collector) ingress(o *networkingv1.Ingress) {
	if o.Spec.IngressClassName != nil {
		c.add(Ref{Group: networkingv1.GroupName, Kind: "IngressClass", Name: *o.Spec.IngressClassName,
			Via: "spec.ingressClassName", Optional: true})
	}
	for _, t := range o.Spec.TLS {
		c.add(Ref{Kind: KindSecret, Namespace: o.Namespace, Name: t.SecretName, Via: "spec.tls[].secretName"})
	}
	if o.Spec.DefaultBackend != nil {
		c.backend(o.Namespace, "spec.defaultBackend", o.Spec.DefaultBackend)
	}
	for _, r := range o.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for i := range r.HTTP.Paths {
			c.backend(o.Namespace, "spec.rules[].http.paths[].backend", &r.HTTP.Paths[i].Backend)
		}
	}
}

func (c *collector) backend(namespace, at string, b *networkingv1.IngressBackend) {
	if b.Service != nil {
		c.add(Ref{Kind: KindService, Namespace: namespace, Name: b.Service.Name, Via: at + ".service"})
	}
	if r := b.Resource; r != nil {
		group := ""
		if r.APIGroup != nil {
			group = *r.APIGroup
		}
		c.add(Ref{Group: group, Kind: r.Kind, Namespace: namespace, Name: r.Name, Via: at + ".resource"})
	}
}

// roleRef adds a binding's role: a Role in the binding's namespace, or a
// ClusterRole.
func (c *collector) roleRef(namespace string, r rbacv1.RoleRef) {
	if r.Kind != "Role" {
		namespace = ""
	}
	c.add(Ref{Group: r.APIGroup, Kind: r.Kind, Namespace: namespace, Name: r.Name, Via: "roleRef"})
}

// subjects adds the ServiceAccounts a binding names, each in its own
// namespace. A RoleBinding's subject may leave it out: it is then the
// binding's.
func (c *collector) subjects(namespace string, subjects []rbacv1.Subject) {
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind {
			continue
		}
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		if ns == "" {
			continue
		}
		c.add(Ref{Kind: KindServiceAccount, Namespace: ns, Name: s.Name, Via: "subjects[]"})
	}
}

func (c *collector) persistentVolume(o *corev1.PersistentVolume) {
	// A volume's secrets live in the namespace the reference names; the
	// plugins take the claim's namespace when it names none.
	claimNamespace := ""
	if r := o.Spec.ClaimRef; r != nil {
		claimNamespace = r.Namespace
		c.add(Ref{Kind: KindClaim, Namespace: r.Namespace, Name: r.Name, Via: "spec.claimRef"})
	}
	secret := func(via string, r *corev1.SecretReference) {
		if r == nil {
			return
		}
		ns := r.Namespace
		if ns == "" {
			ns = claimNamespace
		}
		if ns == "" {
			return
		}
		c.add(Ref{Kind: KindSecret, Namespace: ns, Name: r.Name, Via: via})
	}
	s := &o.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		secret("spec.csi.controllerPublishSecretRef", s.CSI.ControllerPublishSecretRef)
		secret("spec.csi.nodeStageSecretRef", s.CSI.NodeStageSecretRef)
		secret("spec.csi.nodePublishSecretRef", s.CSI.NodePublishSecretRef)
		secret("spec.csi.controllerExpandSecretRef", s.CSI.ControllerExpandSecretRef)
		secret("spec.csi.nodeExpandSecretRef", s.CSI.NodeExpandSecretRef)
	case s.CephFS != nil:
		secret("spec.cephfs.secretRef", s.CephFS.SecretRef)
	case s.RBD != nil:
		secret("spec.rbd.secretRef", s.RBD.SecretRef)
	case s.ISCSI != nil:
		secret("spec.iscsi.secretRef", s.ISCSI.SecretRef)
	case s.FlexVolume != nil:
		secret("spec.flexVolume.secretRef", s.FlexVolume.SecretRef)
	case s.ScaleIO != nil:
		secret("spec.scaleIO.secretRef", s.ScaleIO.SecretRef)
	case s.Cinder != nil:
		secret("spec.cinder.secretRef", s.Cinder.SecretRef)
	case s.AzureFile != nil:
		ns := claimNamespace
		if s.AzureFile.SecretNamespace != nil && *s.AzureFile.SecretNamespace != "" {
			ns = *s.AzureFile.SecretNamespace
		}
		secret("spec.azureFile.secretName", &corev1.SecretReference{Name: s.AzureFile.SecretName, Namespace: ns})
	case s.StorageOS != nil:
		if r := s.StorageOS.SecretRef; r != nil {
			secret("spec.storageos.secretRef", &corev1.SecretReference{Name: r.Name, Namespace: r.Namespace})
		}
	}
}
