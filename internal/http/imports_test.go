package http

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNeitherIngestNorReconcile keeps the server a reader of the
// mirror: what it shows of ingestion and the controllers comes through its
// own interfaces and types, so neither package is among its dependencies,
// tests included.
func TestImportsNeitherIngestNorReconcile(t *testing.T) {
	out, err := exec.Command("go", "list", "-test", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -test -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/kubegcd/kubegcd/internal/ingest", "github.com/kubegcd/kubegcd/internal/reconcile"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") {
				t.Errorf("internal/http depends on %s", pkg)
			}
		}
	}
}
