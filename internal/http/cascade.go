package http

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// cascade serves GET /objects/{uid}/cascade: what the garbage collector
// would do if the object were deleted now with ?propagation= (background
// unless given), from the mirror alone.
func (s *server) cascade(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	propagation := q.str("propagation")
	if propagation == "" {
		propagation = q.param("propagation").Default.(string)
	}
	policy, ok := diagnose.CascadePropagations[propagation]
	if !ok {
		q.fail("invalid propagation %q: want background, foreground or orphan", propagation)
	}
	limit := q.limit()
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	uid := chi.URLParam(r, "uid")
	facts, err := s.DB.Cascade(r.Context(), uid, limit)
	if s.objectReadFailed(w, r, uid, err) {
		return
	}
	writeCascadeJSON(w, r, diagnose.PreviewCascade(facts, policy))
}
