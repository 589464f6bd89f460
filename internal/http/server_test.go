package http

import (
	"net/http"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
)

// errorJSON is the body of every refusal the tests decode.
type errorJSON = api.Error

func TestEveryEndpointRefusesUnknownParameters(t *testing.T) {
	srv, _ := testServer(t)
	for _, path := range []string{"/status", "/healthz", "/readyz", "/metrics", "/pending", "/audit", "/graph",
		"/objects/uid-A", "/leases"} {
		t.Run(path, func(t *testing.T) {
			if resp, body := get(t, srv, path); resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %d, want 200: %s", path, resp.StatusCode, body)
			}
			var e errorJSON
			getJSON(t, srv, path+"?frobnicate=1", http.StatusBadRequest, &e)
			if want := `unknown query parameter "frobnicate"`; e.Error != want {
				t.Errorf("GET %s?frobnicate=1: error %q, want %q", path, e.Error, want)
			}
		})
	}
}
