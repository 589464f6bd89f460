package http

import (
	"net/http"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// lookup serves GET /objects: objects by kind (or plural), and optionally
// apiVersion, namespace and name, each with its uid for /objects/{uid}.
func (s *server) lookup(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := db.LookupFilter{
		Kind:      q.resourceRef("kind"),
		Namespace: q.str("namespace"),
		Name:      q.str("name"),
		Limit:     q.limit(),
	}
	if f.Kind == "" {
		q.fail("kind is required (a kind such as Deployment, or a resource such as deployments)")
	}
	if group, ok := q.apiVersion("apiVersion"); ok {
		f.Group = &group
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	objs, truncated, err := s.DB.LookupObjects(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, lookupOf(objs, truncated))
}

// lookupOf is the answer of /objects.
func lookupOf(objs []*db.Object, truncated bool) api.Lookup {
	out := api.Lookup{Items: make([]api.Object, len(objs)), Truncated: truncated}
	for i, o := range objs {
		out.Items[i] = objectOf(o)
	}
	return out
}

// objectOf is an object as /objects lists it and /objects/{uid} shows it.
func objectOf(o *db.Object) api.Object {
	out := api.Object{
		UID: o.UID, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		ResourceVersion: o.ResourceVersion, CreationTimestamp: o.CreationTimestamp, DeletionTimestamp: o.DeletionTimestamp,
		Finalizers: o.Finalizers, OwnerReferences: objectOwnerRefsOf(o.OwnerReferences),
	}
	if out.Finalizers == nil {
		out.Finalizers = []string{}
	}
	return out
}

// objectOwnerRefsOf are refs as an object's own answers show them: an
// empty list rather than null.
func objectOwnerRefsOf(refs []api.OwnerRef) []api.ObjectOwnerRef {
	out := make([]api.ObjectOwnerRef, len(refs))
	for i, ref := range refs {
		out[i] = api.ObjectOwnerRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID,
			Controller: ref.Controller, BlockOwnerDeletion: ref.BlockOwnerDeletion}
	}
	return out
}
