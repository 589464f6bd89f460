package http

import (
	"net/http"

	"github.com/kubegcd/kubegcd/internal/db"
)

const (
	lookupDefaultLimit = 500
	lookupMaxLimit     = 10000
)

type lookupJSON struct {
	Items []objectJSON `json:"items"`
	// Truncated: more objects matched than the limit.
	Truncated bool `json:"truncated,omitempty"`
}

// lookup serves GET /objects: objects by kind (or plural), and optionally
// apiVersion, namespace and name, each with its uid for /objects/{uid}.
func (s *server) lookup(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	q.only("kind", "apiVersion", "namespace", "name", "limit")
	f := db.LookupFilter{
		Kind:      q.resourceRef("kind"),
		Namespace: q.str("namespace"),
		Name:      q.str("name"),
		Limit:     q.limit(lookupDefaultLimit, lookupMaxLimit),
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
	out := lookupJSON{Items: make([]objectJSON, 0, len(objs)), Truncated: truncated}
	for _, o := range objs {
		out.Items = append(out.Items, objectJSONOf(o))
	}
	writeJSON(w, r, http.StatusOK, out)
}

// objectJSONOf is the summary of an object that /objects/{uid} also shows.
func objectJSONOf(o *db.Object) objectJSON {
	out := objectJSON{
		UID: o.UID, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		ResourceVersion: o.ResourceVersion, CreationTimestamp: o.CreationTimestamp, DeletionTimestamp: o.DeletionTimestamp,
		Finalizers: o.Finalizers, OwnerReferences: []ownerRefJSON{},
	}
	if out.Finalizers == nil {
		out.Finalizers = []string{}
	}
	for _, ref := range o.OwnerReferences {
		out.OwnerReferences = append(out.OwnerReferences, ownerRefJSON{APIVersion: ref.APIVersion, Kind: ref.Kind,
			Name: ref.Name, UID: ref.UID, Controller: ref.Controller, BlockOwnerDeletion: ref.BlockOwnerDeletion})
	}
	return out
}
