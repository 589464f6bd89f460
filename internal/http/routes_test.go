package http

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestRouteMatchesHandlersToOperations: every operation needs a handler,
// and a handler no operation names is an error too.
func TestRouteMatchesHandlersToOperations(t *testing.T) {
	all := func() map[string]http.Handler {
		hs := map[string]http.Handler{}
		for _, op := range api.Operations {
			hs[op.ID] = http.NotFoundHandler()
		}
		return hs
	}
	if err := route(chi.NewRouter(), all()); err != nil {
		t.Fatalf("a handler for each operation: %v", err)
	}
	missing := all()
	delete(missing, "lint")
	if err := route(chi.NewRouter(), missing); err == nil || !strings.Contains(err.Error(), "GET /lint (lint)") {
		t.Errorf("no handler for lint: %v, want an error naming GET /lint", err)
	}
	extra := all()
	extra["nothing"] = http.NotFoundHandler()
	if err := route(chi.NewRouter(), extra); err == nil || !strings.Contains(err.Error(), "nothing") {
		t.Errorf("a handler of no operation: %v, want an error naming it", err)
	}
}

// TestAPIPrefixesFromOperations: the first segment of every operation's
// path belongs to the API, so an unknown path under it is a JSON 404, not
// the UI; the probes are the paths served without authentication.
func TestAPIPrefixesFromOperations(t *testing.T) {
	for _, path := range []string{"/status", "/objects/x/y", "/enforcement", "/openapi/v2", "/metrics/x", "/debug/x", "/api/v1"} {
		if !isAPIPath(path) {
			t.Errorf("%s is not an API path", path)
		}
	}
	for _, path := range []string{"/", "/index.html", "/statusx", "/app.js"} {
		if isAPIPath(path) {
			t.Errorf("%s is an API path", path)
		}
	}
	var open []string
	for p := range openPaths {
		open = append(open, p)
	}
	slices.Sort(open)
	if want := []string{"/healthz", "/readyz"}; !slices.Equal(open, want) {
		t.Errorf("open paths %v, want %v", open, want)
	}
}
