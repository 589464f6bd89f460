package app

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers is every kubegcd package of the daemon and the packages of
// kubegcd it may import, as docs/architecture.md draws them. A new import
// across the layers fails here until the drawing (and this map) says so.
var layers = map[string][]string{
	"cmd/kubegcd":                {"app", "cli"},
	"internal/app":               {"api", "auditpeers", "auditsink", "cli", "clusteradd", "cmdline", "copies", "db", "diagnose", "gcrules", "http", "ingest", "leader", "liveness", "reconcile", "reconcile/cleanup", "reconcile/lcgc", "reconcile/ownergc", "reconcile/podgc", "reconcile/svgc", "reconcile/ttl", "refs", "rules", "web"},
	"internal/reconcile/ownergc": {"api", "db", "gcrules", "ingest", "liveness", "promutil", "reconcile"},
	"internal/reconcile/podgc":   {"api", "db", "gcrules", "liveness", "promutil", "reconcile"},
	"internal/reconcile/ttl":     {"api", "db", "gcrules", "liveness", "promutil", "reconcile"},
	"internal/reconcile/svgc":    {"api", "db", "gcrules", "liveness", "promutil", "reconcile"},
	"internal/reconcile/lcgc":    {"api", "db", "promutil", "reconcile"},
	"internal/reconcile/cleanup": {"api", "db", "liveness", "promutil", "reconcile", "rules"},
	"internal/reconcile":         {"api", "db", "liveness", "promutil"},
	"internal/copies":            {"api", "db", "reconcile"},
	"internal/auditpeers":        {"api", "db"},
	"internal/auditsink":         {"api", "db", "promutil"},
	"internal/ingest":            {"api", "db", "liveness", "promutil", "refs"},
	"internal/leader":            {},
	"internal/http":              {"api", "db", "diagnose", "docs", "gcrules"},
	"internal/cli":               {"api", "cmdline"},
	"internal/clusteradd":        {"cmdline"},
	"internal/diagnose":          {"api", "db", "gcrules"},
	"internal/rules":             {"db"},
	"internal/db":                {"api", "gcrules", "migrations"},
	"internal/gcrules":           {"api"},
	"internal/refs":              {"gcrules"},
	"internal/api":               {},
	"internal/api/openapi":       {"api"},
	"internal/cmdline":           {},
	"internal/liveness":          {},
	"internal/promutil":          {},
	"internal/mdanchor":          {},
}

// testSupport are the packages that only tests, the demo and the
// benchmarks import; they stand outside the layers.
var testSupport = map[string]bool{"internal/testcluster": true, "internal/dbfault": true, "internal/testutil": true, "internal/db/dbtest": true}

// TestLayers checks each package's imports of kubegcd (tests left out)
// against layers.
func TestLayers(t *testing.T) {
	const module = "github.com/kubegcd/kubegcd/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"cmd/...", module+"internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		allowed, ok := layers[pkg]
		if !ok {
			if !testSupport[pkg] {
				t.Errorf("%s is not in the layers: add it, and to docs/architecture.md", pkg)
			}
			continue
		}
		seen[pkg] = true
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module+"internal/")
			if !ok {
				dep, ok = strings.CutPrefix(imp, module)
			}
			if ok && !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s, which its layer does not allow", pkg, dep)
			}
		}
	}
	for pkg := range layers {
		if !seen[pkg] {
			t.Errorf("layers names %s, which go list does not show", pkg)
		}
	}
}

// TestInternalTestsStayInternal: no test of cmd/ or internal/ imports a
// package under test/, so that the quick tier (make test-unit) builds
// nothing of the end-to-end suites. What tests share lives in
// internal/testutil.
func TestInternalTestsStayInternal(t *testing.T) {
	const module = "github.com/kubegcd/kubegcd/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		module+"cmd/...", module+"internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module+"test/") {
				t.Errorf("a test of %s imports %s: move what it needs to internal/testutil", strings.TrimPrefix(fields[0], module), imp)
			}
		}
	}
}
