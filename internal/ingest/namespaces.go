package ingest

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubegcd/kubegcd/internal/db"
)

// extractNamespace keeps what holds a namespace being deleted: its spec
// finalizers and the conditions the namespace controller reports
// (NamespaceContentRemaining, NamespaceFinalizersRemaining,
// NamespaceDeletionDiscoveryFailure …). Namespaces are few, so reading them
// in full through the dynamic client costs little.
func extractNamespace(u *unstructured.Unstructured, o *db.Object) {
	ns := &db.NamespaceStatus{Phase: str(u.Object, "status", "phase")}
	ns.SpecFinalizers, _, _ = unstructured.NestedStringSlice(u.Object, "spec", "finalizers")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		ns.Conditions = append(ns.Conditions, db.Condition{
			Type: str(m, "type"), Status: str(m, "status"),
			Reason: str(m, "reason"), Message: str(m, "message"),
		})
	}
	o.NamespaceStatus = ns
}
