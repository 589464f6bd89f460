package http

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kubegcd/kubegcd/internal/api"
)

// route registers each of api.Operations on r, served by the handler its ID
// names. Every handler serves an operation, and every operation has one.
func route(r chi.Router, handlers map[string]http.Handler) error {
	left := make(map[string]bool, len(handlers))
	for id := range handlers {
		left[id] = true
	}
	for i := range api.Operations {
		op := &api.Operations[i]
		h, ok := handlers[op.ID]
		if !ok {
			return fmt.Errorf("no handler for %s %s (%s)", op.Method, op.Path, op.ID)
		}
		delete(left, op.ID)
		r.With(withOperation(op)).Method(op.Method, op.Path, h)
	}
	if len(left) > 0 {
		ids := make([]string, 0, len(left))
		for id := range left {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return fmt.Errorf("handlers of no operation: %s", strings.Join(ids, ", "))
	}
	return nil
}

type operationKey struct{}

// withOperation gives the request its operation, which newQuery reads. It
// refuses a query string that cannot be parsed or names a parameter the
// operation does not take. An operation with a body is left alone: it
// carries its parameters in the body.
func withOperation(op *api.Operation) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r = r.WithContext(context.WithValue(r.Context(), operationKey{}, op))
			if op.Body == nil {
				q := newQuery(r)
				q.known()
				if q.err != nil {
					writeError(w, r, http.StatusBadRequest, q.err.Error())
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// operationOf is the operation the router matched r to; nil outside them.
func operationOf(r *http.Request) *api.Operation {
	op, _ := r.Context().Value(operationKey{}).(*api.Operation)
	return op
}

// operation is api.Operations' operation id.
func operation(id string) *api.Operation {
	for i := range api.Operations {
		if api.Operations[i].ID == id {
			return &api.Operations[i]
		}
	}
	panic("no operation " + id)
}

// apiPrefixes are the paths that belong to the API rather than to the UI:
// the first segment of each operation's path, /debug of the profiles, and
// /api. Unknown paths under them are JSON 404s.
var apiPrefixes = func() []string {
	prefixes := []string{"/api", "/debug"}
	for _, op := range api.Operations {
		first, _, _ := strings.Cut(strings.TrimPrefix(op.Path, "/"), "/")
		if p := "/" + first; !slices.Contains(prefixes, p) {
			prefixes = append(prefixes, p)
		}
	}
	return prefixes
}()

// isAPIPath: path belongs to the JSON API, not to the UI's files.
func isAPIPath(path string) bool {
	for _, p := range apiPrefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// openPaths are the paths of the operations served without authentication.
var openPaths = func() map[string]bool {
	paths := map[string]bool{}
	for _, op := range api.Operations {
		if op.Open {
			paths[op.Path] = true
		}
	}
	return paths
}()
