package http

import (
	"net/http"

	"github.com/kubegcd/kubegcd/internal/api/openapi"
)

// openAPI serves GET /openapi/v3: the OpenAPI 3.1 document of this API,
// at the path Kubernetes serves its own.
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := openapi.JSON()
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}
