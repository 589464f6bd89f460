package diagnose

import (
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestOwnerStates(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	dep := &db.Object{UID: "dep", Namespace: "a"}
	cm := func(mod func(o *db.Object)) *db.Object {
		o := &db.Object{UID: "own", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "own"}
		if mod != nil {
			mod(o)
		}
		return o
	}
	ref := api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "own", UID: "own"}
	for _, tc := range []struct {
		name      string
		row       db.OwnerRow
		state     api.OwnerState
		namespace string
	}{
		{"present", db.OwnerRow{Ref: ref, Owner: cm(nil), KindNamespaced: true}, api.OwnerPresent, "a"},
		{"being deleted without foregroundDeletion still holds", db.OwnerRow{Ref: ref, KindNamespaced: true,
			Owner: cm(func(o *db.Object) { o.DeletionTimestamp = &now })}, api.OwnerBeingDeleted, "a"},
		{"deleting its dependents", db.OwnerRow{Ref: ref, KindNamespaced: true,
			Owner: cm(func(o *db.Object) { o.DeletionTimestamp, o.Finalizers = &now, []string{"foregroundDeletion"} })},
			api.OwnerDeletingDependents, "a"},
		{"missing, of a namespaced kind: would be in the dependent's namespace", db.OwnerRow{Ref: ref, KindNamespaced: true},
			api.OwnerMissing, "a"},
		{"missing, of a cluster-scoped kind", db.OwnerRow{Ref: api.OwnerRef{APIVersion: "rbac.authorization.k8s.io/v1",
			Kind: "ClusterRole", Name: "cr", UID: "cr"}}, api.OwnerMissing, ""},
		{"the UID in another namespace", db.OwnerRow{Ref: ref, KindNamespaced: true,
			Owner: cm(func(o *db.Object) { o.Namespace = "b" })}, api.OwnerOtherNamespace, "b"},
		{"the UID under another name", db.OwnerRow{Ref: ref, KindNamespaced: true,
			Owner: cm(func(o *db.Object) { o.Name = "renamed" })}, api.OwnerNameMismatch, "a"},
		{"a cluster-scoped owner holds a namespaced dependent", db.OwnerRow{Ref: api.OwnerRef{APIVersion: "v1", Kind: "Node",
			Name: "n1", UID: "n1"}, Owner: &db.Object{UID: "n1", APIVersion: "v1", Kind: "Node", Name: "n1"}}, api.OwnerPresent, ""},
	} {
		got := OwnerStates(dep, []db.OwnerRow{tc.row})
		if len(got) != 1 || got[0].State != tc.state || got[0].Namespace != tc.namespace || got[0].UID != tc.row.Ref.UID ||
			got[0].Name != tc.row.Ref.Name {
			t.Errorf("%s: %+v, want state %q in namespace %q", tc.name, got, tc.state, tc.namespace)
		}
	}
	if got := OwnerStates(dep, nil); got == nil || len(got) != 0 {
		t.Errorf("no owners: %#v, want an empty list", got)
	}
}
