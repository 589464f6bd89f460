package diagnose

import (
	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// OwnerStates classifies o's owners with ownergc's rules (gcrules) as the
// mirror shows them, without the live GET ownergc adds before acting.
func OwnerStates(o *db.Object, rows []db.OwnerRow) []api.OwnerStatus {
	out := make([]api.OwnerStatus, 0, len(rows))
	for _, row := range rows {
		ref, owner := row.Ref, row.Owner
		st := api.OwnerStatus{UID: ref.UID, APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
		if owner == nil {
			st.State = api.OwnerMissing
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
			st.State = api.OwnerOtherNamespace
		case "name-mismatch":
			st.State = api.OwnerNameMismatch
		default:
			switch gcrules.Classify(o.Namespace, rref, kind, found, gcrules.Mirror) {
			case gcrules.Waiting:
				st.State = api.OwnerDeletingDependents
			case gcrules.Solid:
				st.State = api.OwnerPresent
				if found.Deleting {
					st.State = api.OwnerBeingDeleted
				}
			}
		}
		out = append(out, st)
	}
	return out
}
