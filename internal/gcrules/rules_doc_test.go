package gcrules

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ruleIDLiteral is a whole rule id: BR-nn-mm or KG-nn-mm (a controller's),
// KG-LINT-nn (a lint rule's).
var ruleIDLiteral = regexp.MustCompile(`^(?:(?:BR|KG)-[0-9]{2}-[0-9]{2}|KG-LINT-[0-9]{2})$`)

// ruleIDMention finds rule ids in prose.
var ruleIDMention = regexp.MustCompile(`\b(?:(?:BR|KG)-[0-9]{2}-[0-9]{2}|KG-LINT-[0-9]{2})\b`)

// ttlRuleIDs are the TTL controller's, which ttl.go builds with fmt.Sprintf
// (rule(band)), so no literal names them; BR-19-06 is its hysteresis.
var ttlRuleIDs = []string{"BR-19-01", "BR-19-02", "BR-19-03", "BR-19-04", "BR-19-05", "BR-19-06"}

// minRuleIDs is fewer rule ids than the Go source holds: finding fewer
// means the walk missed files.
const minRuleIDs = 20

// TestEveryRuleIsDocumented checks that docs/rules.md mentions every rule id
// the code can record in an audit or pending row or a lint finding.
func TestEveryRuleIsDocumented(t *testing.T) {
	root := moduleRoot(t)
	found := ruleIDsInSource(t, root)
	if len(found) < minRuleIDs {
		t.Fatalf("found %d rule ids in the Go source under %s, want at least %d: the walk is broken (or rule ids were removed: lower minRuleIDs)",
			len(found), root, minRuleIDs)
	}
	for _, id := range ttlRuleIDs {
		found[id] = append(found[id], "internal/reconcile/ttl/ttl.go (rule(band))")
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, id := range ruleIDMention.FindAllString(string(doc), -1) {
		documented[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(found)) {
		if !documented[id] {
			t.Errorf("docs/rules.md does not mention rule id %s (used in %s)", id, strings.Join(found[id], ", "))
		}
	}
}

// moduleRoot walks up from the working directory to the one holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// ruleIDsInSource returns the rule ids that string literals of the Go
// files under root spell out, each with the files that do, leaving out
// tests (which use unknown ids on purpose), .git, testdata and bin.
func ruleIDsInSource(t *testing.T, root string) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, id := range ruleIDLiterals(t, rel, src) {
			if !slices.Contains(found[id], rel) {
				found[id] = append(found[id], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// ruleIDLiterals returns the string literals of a Go file that are rule ids.
func ruleIDLiterals(t *testing.T, name string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	file := fset.AddFile(name, fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { t.Errorf("%s: %s", pos, msg) }, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.STRING {
			continue
		}
		if v, err := strconv.Unquote(lit); err == nil && ruleIDLiteral.MatchString(v) {
			out = append(out, v)
		}
	}
}
