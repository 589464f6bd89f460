package ingest

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/refs"
)

// Label and annotation keys kubegcd keeps typed columns for.
const (
	ttlAnnotation     = "node.alpha.kubernetes.io/ttl"
	apiserverIdentity = "apiserver.kubernetes.io/identity"
)

// typedResource says how to read a resource in full, and what to keep of
// it, for the resources whose spec or status kubegcd keeps in typed
// columns. Pods, nodes, Leases and LeaseCandidates are busy, so they come
// as typed protobuf, which is cheap to decode. The others come through the
// dynamic client. The referrers (referrers.go) and Secrets (table.go) have
// maps of their own. Every other resource is read as metadata only.
type typedResource struct {
	source  func(i *Ingester, gvr schema.GroupVersionResource) source
	extract func(runtime.Object, *db.Object)
}

var typedResources = map[schema.GroupResource]typedResource{
	{Group: "", Resource: "pods"}: {
		source: func(i *Ingester, _ schema.GroupVersionResource) source {
			return podSource(i.typed.CoreV1().Pods(""))
		},
		extract: extractPod,
	},
	{Group: "", Resource: "nodes"}: {
		source: func(i *Ingester, _ schema.GroupVersionResource) source {
			return nodeSource(i.typed.CoreV1().Nodes())
		},
		extract: extractNode,
	},
	// 2,000 nodes renew a Lease every 10 s: decoding them as JSON cost
	// kubegcd more CPU than writing them.
	{Group: "coordination.k8s.io", Resource: "leases"}: {
		source: func(i *Ingester, _ schema.GroupVersionResource) source {
			return leaseSource(i.typed.CoordinationV1().Leases(""))
		},
		extract: extractLease,
	},
	// The candidates of coordinated leader election: discovery picks the
	// version, v1beta1 where served, else v1alpha2.
	{Group: "coordination.k8s.io", Resource: "leasecandidates"}: {
		source: leaseCandidateSourceOf, extract: extractLeaseCandidate,
	},
	{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}: {
		source: dynamicSourceOf, extract: unstructuredExtractor(extractStorageVersion),
	},
	{Group: "", Resource: "namespaces"}: {
		source: dynamicSourceOf, extract: unstructuredExtractor(extractNamespace),
	},
}

func dynamicSourceOf(i *Ingester, gvr schema.GroupVersionResource) source {
	return dynamicSource(i.dynamic.Resource(gvr))
}

// leaseCandidateSourceOf reads LeaseCandidates through the typed client of
// the version discovery chose, and through the dynamic client a version
// client-go has no types for.
func leaseCandidateSourceOf(i *Ingester, gvr schema.GroupVersionResource) source {
	switch gvr.Version {
	case coordinationv1beta1.SchemeGroupVersion.Version:
		return leaseCandidateBetaSource(i.typed.CoordinationV1beta1().LeaseCandidates(""))
	case coordinationv1alpha2.SchemeGroupVersion.Version:
		return leaseCandidateAlphaSource(i.typed.CoordinationV1alpha2().LeaseCandidates(""))
	}
	return dynamicSourceOf(i, gvr)
}

func unstructuredExtractor(fn func(*unstructured.Unstructured, *db.Object)) func(runtime.Object, *db.Object) {
	return func(obj runtime.Object, o *db.Object) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			fn(u, o)
		}
	}
}

// toObject copies what kubegcd keeps of an object's metadata.
func toObject(m metav1.Object, apiVersion, kind string) *db.Object {
	o := &db.Object{
		UID:                        string(m.GetUID()),
		APIVersion:                 apiVersion,
		Kind:                       kind,
		Namespace:                  m.GetNamespace(),
		Name:                       m.GetName(),
		ResourceVersion:            m.GetResourceVersion(),
		CreationTimestamp:          timePtr(m.GetCreationTimestamp()),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(),
		Finalizers:                 m.GetFinalizers(),
	}
	if dt := m.GetDeletionTimestamp(); dt != nil {
		o.DeletionTimestamp = timePtr(*dt)
	}
	refs := m.GetOwnerReferences()
	if len(refs) > 0 {
		o.OwnerReferences = make([]api.OwnerRef, len(refs))
		for i, r := range refs {
			o.OwnerReferences[i] = api.OwnerRef{
				APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: string(r.UID),
				Controller: r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion,
			}
		}
	}
	return o
}

func timePtr(t metav1.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t.Time
}

func str(u map[string]any, fields ...string) string {
	s, _, _ := unstructured.NestedString(u, fields...)
	return s
}

func extractPod(obj runtime.Object, o *db.Object) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	o.Pod = &db.Pod{Phase: string(p.Status.Phase), Reason: p.Status.Reason, NodeName: p.Spec.NodeName,
		Generation: p.Generation}
	o.Refs = dbRefs(refs.Of(p))
}

func extractNode(obj runtime.Object, o *db.Object) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	n := &db.Node{}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			n.Ready = string(c.Status)
		}
	}
	for _, t := range node.Spec.Taints {
		n.Taints = append(n.Taints, db.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	if v, ok := node.Annotations[ttlAnnotation]; ok {
		n.TTLAnnotation = &v
	}
	o.Node = n
}

func extractLease(obj runtime.Object, o *db.Object) {
	lease, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	spec := &lease.Spec
	o.Lease = &db.Lease{HolderIdentity: spec.HolderIdentity, LeaseDurationSeconds: spec.LeaseDurationSeconds,
		LeaseTransitions: spec.LeaseTransitions, AcquireTime: microTime(spec.AcquireTime),
		RenewTime: microTime(spec.RenewTime)}
	if v, ok := lease.Labels[apiserverIdentity]; ok {
		o.Lease.IdentityLabel = &v
	}
	if spec.Strategy != nil {
		v := string(*spec.Strategy)
		o.Lease.Strategy = &v
	}
	if spec.PreferredHolder != nil {
		v := *spec.PreferredHolder
		o.Lease.PreferredHolder = &v
	}
}

// extractLeaseCandidate keeps a LeaseCandidate's spec, in any version. The
// spec is the same in v1alpha2 and v1beta1. A version that client-go has
// no types for comes as unstructured.
func extractLeaseCandidate(obj runtime.Object, o *db.Object) {
	var spec coordinationv1beta1.LeaseCandidateSpec
	switch c := obj.(type) {
	case *coordinationv1beta1.LeaseCandidate:
		spec = c.Spec
	case *coordinationv1alpha2.LeaseCandidate:
		s := &c.Spec
		spec = coordinationv1beta1.LeaseCandidateSpec{LeaseName: s.LeaseName,
			PingTime: s.PingTime, RenewTime: s.RenewTime, BinaryVersion: s.BinaryVersion,
			EmulationVersion: s.EmulationVersion, Strategy: s.Strategy}
	case *unstructured.Unstructured:
		var typed coordinationv1beta1.LeaseCandidate
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c.Object, &typed); err != nil {
			return
		}
		spec = typed.Spec
	default:
		return
	}
	o.LeaseCandidate = &db.LeaseCandidate{LeaseName: spec.LeaseName, BinaryVersion: spec.BinaryVersion,
		EmulationVersion: spec.EmulationVersion, Strategy: string(spec.Strategy),
		PingTime: microTime(spec.PingTime), RenewTime: microTime(spec.RenewTime)}
}

// microTime is t as its JSON form has it (microseconds), nil when unset.
func microTime(t *metav1.MicroTime) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	v := t.Truncate(time.Microsecond)
	return &v
}

func extractStorageVersion(u *unstructured.Unstructured, o *db.Object) {
	sv := &db.StorageVersion{}
	if v, ok, _ := unstructured.NestedString(u.Object, "status", "commonEncodingVersion"); ok {
		sv.CommonEncodingVersion = &v
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "storageVersions")
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		dec, _, _ := unstructured.NestedStringSlice(m, "decodableVersions")
		served, _, _ := unstructured.NestedStringSlice(m, "servedVersions")
		sv.Entries = append(sv.Entries, db.StorageVersionEntry{
			APIServerID:       str(m, "apiServerID"),
			EncodingVersion:   str(m, "encodingVersion"),
			DecodableVersions: dec,
			ServedVersions:    served,
		})
	}
	o.StorageVersion = sv
}
