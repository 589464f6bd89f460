package http

import (
	"net/http"

	"github.com/kubegcd/kubegcd/docs"
)

// openAPI serves GET /openapi/v3: the OpenAPI 3.1 document of this API,
// at the path Kubernetes serves its own. make docs writes it into
// docs/openapi.json, and the binary embeds that file.
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(docs.OpenAPI)
}
