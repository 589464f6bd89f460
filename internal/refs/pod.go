package refs

import (
	corev1 "k8s.io/api/core/v1"
)

// The service account a pod runs as when its spec names none: the
// ServiceAccount admission plugin sets it.
const defaultServiceAccount = "default"

// podSpec adds the references of a pod spec found at the field path at
// (spec for a Pod, spec.template.spec for a template). podName is the
// pod's own name, which names its ephemeral volumes' claims; a template
// has none.
func (c *collector) podSpec(namespace, at, podName string, spec *corev1.PodSpec) {
	local := func(kind, via, name string, optional bool) {
		c.add(Ref{Kind: kind, Namespace: namespace, Name: name, Via: at + via, Optional: optional})
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = defaultServiceAccount
	}
	local(KindServiceAccount, ".serviceAccountName", sa, false)
	// A missing pull secret does not stop a pod: the kubelet pulls
	// without it.
	for _, s := range spec.ImagePullSecrets {
		local(KindSecret, ".imagePullSecrets[]", s.Name, true)
	}
	for i := range spec.Volumes {
		c.volume(namespace, at+".volumes[]", podName, &spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		c.container(namespace, at+".initContainers[]", spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		c.container(namespace, at+".containers[]", spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i].EphemeralContainerCommon
		c.container(namespace, at+".ephemeralContainers[]", ec.Env, ec.EnvFrom)
	}
}

func (c *collector) container(namespace, at string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			c.add(Ref{Kind: KindConfigMap, Namespace: namespace, Name: r.Name,
				Via: at + ".env[].valueFrom.configMapKeyRef", Optional: isTrue(r.Optional)})
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			c.add(Ref{Kind: KindSecret, Namespace: namespace, Name: r.Name,
				Via: at + ".env[].valueFrom.secretKeyRef", Optional: isTrue(r.Optional)})
		}
	}
	for _, e := range envFrom {
		if r := e.ConfigMapRef; r != nil {
			c.add(Ref{Kind: KindConfigMap, Namespace: namespace, Name: r.Name,
				Via: at + ".envFrom[].configMapRef", Optional: isTrue(r.Optional)})
		}
		if r := e.SecretRef; r != nil {
			c.add(Ref{Kind: KindSecret, Namespace: namespace, Name: r.Name,
				Via: at + ".envFrom[].secretRef", Optional: isTrue(r.Optional)})
		}
	}
}

func (c *collector) volume(namespace, at, podName string, v *corev1.Volume) {
	secret := func(via, name string) {
		c.add(Ref{Kind: KindSecret, Namespace: namespace, Name: name, Via: at + via})
	}
	local := func(via string, r *corev1.LocalObjectReference) {
		if r != nil {
			secret(via, r.Name)
		}
	}
	s := &v.VolumeSource
	switch {
	case s.ConfigMap != nil:
		c.add(Ref{Kind: KindConfigMap, Namespace: namespace, Name: s.ConfigMap.Name,
			Via: at + ".configMap", Optional: isTrue(s.ConfigMap.Optional)})
	case s.Secret != nil:
		c.add(Ref{Kind: KindSecret, Namespace: namespace, Name: s.Secret.SecretName,
			Via: at + ".secret", Optional: isTrue(s.Secret.Optional)})
	case s.PersistentVolumeClaim != nil:
		c.add(Ref{Kind: KindClaim, Namespace: namespace, Name: s.PersistentVolumeClaim.ClaimName,
			Via: at + ".persistentVolumeClaim"})
	case s.Projected != nil:
		for _, p := range s.Projected.Sources {
			if p.ConfigMap != nil {
				c.add(Ref{Kind: KindConfigMap, Namespace: namespace, Name: p.ConfigMap.Name,
					Via: at + ".projected.sources[].configMap", Optional: isTrue(p.ConfigMap.Optional)})
			}
			if p.Secret != nil {
				c.add(Ref{Kind: KindSecret, Namespace: namespace, Name: p.Secret.Name,
					Via: at + ".projected.sources[].secret", Optional: isTrue(p.Secret.Optional)})
			}
		}
	case s.Ephemeral != nil:
		// The claim of a generic ephemeral volume is named after the pod
		// and the volume; a template's pods are not named yet.
		if podName != "" {
			c.add(Ref{Kind: KindClaim, Namespace: namespace, Name: podName + "-" + v.Name, Via: at + ".ephemeral"})
		}
	case s.CSI != nil:
		local(".csi.nodePublishSecretRef", s.CSI.NodePublishSecretRef)
	case s.CephFS != nil:
		local(".cephfs.secretRef", s.CephFS.SecretRef)
	case s.RBD != nil:
		local(".rbd.secretRef", s.RBD.SecretRef)
	case s.ISCSI != nil:
		local(".iscsi.secretRef", s.ISCSI.SecretRef)
	case s.FlexVolume != nil:
		local(".flexVolume.secretRef", s.FlexVolume.SecretRef)
	case s.AzureFile != nil:
		secret(".azureFile.secretName", s.AzureFile.SecretName)
	case s.ScaleIO != nil:
		local(".scaleIO.secretRef", s.ScaleIO.SecretRef)
	case s.StorageOS != nil:
		local(".storageos.secretRef", s.StorageOS.SecretRef)
	case s.Cinder != nil:
		local(".cinder.secretRef", s.Cinder.SecretRef)
	}
}

func isTrue(b *bool) bool { return b != nil && *b }
