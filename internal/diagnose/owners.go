package diagnose

import (
	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// How the mirror shows an object's owner (see api.OwnerPresent).
const (
	OwnerPresent            = api.OwnerPresent
	OwnerMissing            = api.OwnerMissing
	OwnerBeingDeleted       = api.OwnerBeingDeleted
	OwnerDeletingDependents = api.OwnerDeletingDependents
	OwnerOtherNamespace     = api.OwnerOtherNamespace
	OwnerNameMismatch       = api.OwnerNameMismatch
)

// OwnerStatus is one of an object's ownerReferences with what the mirror
// shows of that owner.
type OwnerStatus = api.OwnerStatus

// OwnerStates classifies o's owners with ownergc's rules (gcrules) as the
// mirror shows them, without the live GET ownergc adds before acting.
func OwnerStates(o *db.Object, rows []db.OwnerRow) []OwnerStatus {
	out := make([]OwnerStatus, 0, len(rows))
	for _, row := range rows {
		ref, owner := row.Ref, row.Owner
		st := OwnerStatus{UID: ref.UID, APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
		if owner == nil {
			st.State = OwnerMissing
			if row.KindNamespaced {
				st.Namespace = o.Namespace
			}
			out = append(out, st)
			continue
		}
		st.Namespace = owner.Namespace
		// The owner found decides its own scope: a namespaced one must be in
		// the dependent's namespace (BR-21-07).
		kind := gcrules.Kind{Served: true, Namespaced: owner.Namespace != ""}
		rref := gcrules.Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
		found := &gcrules.Owner{UID: owner.UID, APIVersion: owner.APIVersion, Kind: owner.Kind, Namespace: owner.Namespace,
			Name: owner.Name, Deleting: owner.DeletionTimestamp != nil, Finalizers: owner.Finalizers}
		switch gcrules.Mismatch(rref, gcrules.OwnerNamespace(o.Namespace, kind), found) {
		case "other-namespace":
			st.State = OwnerOtherNamespace
		case "name-mismatch":
			st.State = OwnerNameMismatch
		default:
			switch gcrules.Classify(o.Namespace, rref, kind, found, gcrules.Mirror) {
			case gcrules.Waiting:
				st.State = OwnerDeletingDependents
			case gcrules.Solid:
				st.State = OwnerPresent
				if found.Deleting {
					st.State = OwnerBeingDeleted
				}
			}
		}
		out = append(out, st)
	}
	return out
}
