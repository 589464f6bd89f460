package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestArchitectureNamesEveryController: the architecture's flow diagram,
// its package table and its Controllers section name each controller the
// code registers (api.Controllers), and no other.
func TestArchitectureNamesEveryController(t *testing.T) {
	doc := readDoc(t, "docs/architecture.md")
	want := slices.Sorted(slices.Values(api.Strings(api.Controllers)))

	flow := regexp.MustCompile(`internal/reconcile: ([a-z, ]+) ◀`).FindStringSubmatch(doc)
	table := regexp.MustCompile("`internal/reconcile/\\{([a-z,]+)\\}`").FindStringSubmatch(doc)
	if flow == nil || table == nil {
		t.Fatalf("architecture.md: no flow diagram line or package table row naming the controllers (flow %q, table %q)",
			flow, table)
	}
	section := sectionOf(t, doc, "## Controllers")
	var described []string
	for _, m := range regexp.MustCompile(`(?m)^\*\*([a-z]+)\*\* `).FindAllStringSubmatch(section, -1) {
		described = append(described, m[1])
	}
	for _, got := range []struct {
		where string
		names []string
	}{
		{"the flow diagram", strings.Split(flow[1], ", ")},
		{"the package table", strings.Split(table[1], ",")},
		{"the Controllers section", described},
	} {
		if names := slices.Sorted(slices.Values(got.names)); !slices.Equal(names, want) {
			t.Errorf("architecture.md: %s names %v; the code registers %v", got.where, names, want)
		}
	}
}

// TestArchitectureNamesEveryModule: the package table names each Go
// module of the repository (each go.mod but the root's), and no other.
func TestArchitectureNamesEveryModule(t *testing.T) {
	var modules []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "dist" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" && filepath.Dir(p) != root {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			modules = append(modules, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(modules)

	doc := readDoc(t, "docs/architecture.md")
	row := regexp.MustCompile("(?m)^\\| ((?:`[^`]+`(?:, )?)+) \\| separate Go modules").FindStringSubmatch(doc)
	if row == nil {
		t.Fatal("architecture.md: no package table row of the separate Go modules")
	}
	var named []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(row[1], -1) {
		named = append(named, m[1])
	}
	slices.Sort(named)
	if !slices.Equal(named, modules) {
		t.Errorf("architecture.md: the separate Go modules are %v; the repository has %v", named, modules)
	}
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sectionOf returns the text of the section that starts with heading, up
// to the next heading of its level.
func sectionOf(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("no section %q", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := heading[:strings.Index(heading, " ")+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
