package ingest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Label and annotation keys kubegcd keeps typed columns for.
const (
	ttlAnnotation      = "node.alpha.kubernetes.io/ttl"
	apiserverIdentity  = "apiserver.kubernetes.io/identity"
	readyConditionType = "Ready"
)

// typedResources are read in full (through the dynamic client) because
// kubegcd keeps some of their spec/status in typed columns; every other
// resource is read as metadata only.
var typedResources = map[schema.GroupResource]func(*unstructured.Unstructured, *db.Object){
	{Group: "", Resource: "pods"}:                                     extractPod,
	{Group: "", Resource: "nodes"}:                                    extractNode,
	{Group: "coordination.k8s.io", Resource: "leases"}:                extractLease,
	{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}: extractStorageVersion,
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
		o.OwnerReferences = make([]db.OwnerRef, len(refs))
		for i, r := range refs {
			o.OwnerReferences[i] = db.OwnerRef{
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

func extractPod(u *unstructured.Unstructured, o *db.Object) {
	o.Pod = &db.Pod{
		Phase:      str(u.Object, "status", "phase"),
		Reason:     str(u.Object, "status", "reason"),
		NodeName:   str(u.Object, "spec", "nodeName"),
		Generation: u.GetGeneration(),
	}
}

func extractNode(u *unstructured.Unstructured, o *db.Object) {
	n := &db.Node{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && str(m, "type") == readyConditionType {
			n.Ready = str(m, "status")
		}
	}
	taints, _, _ := unstructured.NestedSlice(u.Object, "spec", "taints")
	for _, t := range taints {
		if m, ok := t.(map[string]any); ok {
			n.Taints = append(n.Taints, db.Taint{Key: str(m, "key"), Value: str(m, "value"), Effect: str(m, "effect")})
		}
	}
	if v, ok := u.GetAnnotations()[ttlAnnotation]; ok {
		n.TTLAnnotation = &v
	}
	o.Node = n
}

func extractLease(u *unstructured.Unstructured, o *db.Object) {
	l := &db.Lease{}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if v, ok := spec["holderIdentity"].(string); ok {
		l.HolderIdentity = &v
	}
	if v, ok := spec["leaseDurationSeconds"].(int64); ok {
		d := int32(v)
		l.LeaseDurationSeconds = &d
	}
	if v, ok := spec["leaseTransitions"].(int64); ok {
		t := int32(v)
		l.LeaseTransitions = &t
	}
	l.AcquireTime = microTime(spec, "acquireTime")
	l.RenewTime = microTime(spec, "renewTime")
	if v, ok := u.GetLabels()[apiserverIdentity]; ok {
		l.IdentityLabel = &v
	}
	o.Lease = l
}

func microTime(m map[string]any, field string) *time.Time {
	s, ok := m[field].(string)
	if !ok {
		return nil
	}
	var mt metav1.MicroTime
	if err := mt.UnmarshalQueryParameter(s); err != nil || mt.IsZero() {
		return nil
	}
	return &mt.Time
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
