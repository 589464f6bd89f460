package e2e

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestOpenAPIServed: the daemon serves the API's OpenAPI document at
// /openapi/v3, the same bytes as the committed docs/openapi.json, and
// answers the overview in the shape the document gives (the daemon's
// client checks every answer against it).
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	d := daemons.Start(t, "", "--dry-run=true", "--controllers=ttl")
	d.WaitReady(t, 60*time.Second)

	code, served, err := d.Get("/openapi/v3")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /openapi/v3: %d, %v", code, err)
	}
	committed, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(served), bytes.TrimSpace(committed)) {
		t.Errorf("/openapi/v3 (%d bytes) differs from docs/openapi.json (%d bytes): run make docs", len(served), len(committed))
	}
	var o api.Overview
	d.GetJSON(t, "/overview", http.StatusOK, &o)
}
