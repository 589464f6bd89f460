package web

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// Every file the page loads — scripts, styles, the modules they import — is
// in the embedded FS, so that the binary alone serves the whole UI.
func TestEmbedHoldsEveryFileThePageLoads(t *testing.T) {
	index, err := fs.ReadFile(FS, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#:]+)"`).FindAllStringSubmatch(string(index), -1)
	imports := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';`)
	seen := map[string]bool{}
	var check func(name string)
	check = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			t.Errorf("the page loads %s, which is not embedded: %v", name, err)
			return
		}
		if strings.HasPrefix(name, "js/") {
			for _, m := range imports.FindAllStringSubmatch(string(b), -1) {
				check("js/" + m[1])
			}
		}
	}
	for _, r := range refs {
		check(r[1])
	}
	if !seen["js/main.js"] || !seen["js/graph.js"] || !seen["vendor/cytoscape/cytoscape.min.js"] || !seen["vendor/dagre/dagre.min.js"] {
		t.Errorf("the page does not load what it should: %v", seen)
	}
	for _, lic := range []string{"vendor/cytoscape/LICENSE", "vendor/dagre/LICENSE", "vendor/graphlib/LICENSE", "vendor/lodash/LICENSE"} {
		if _, err := fs.Stat(FS, lic); err != nil {
			t.Errorf("licence missing: %v", err)
		}
	}
}

// Nothing in the HTML runs or styles inline: the UI keeps working under a
// Content-Security-Policy of script-src 'self'.
func TestNoInlineScriptOrStyle(t *testing.T) {
	err := fs.WalkDir(FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, ".html") {
			return err
		}
		b, err := fs.ReadFile(FS, name)
		if err != nil {
			return err
		}
		html := string(b)
		for _, m := range regexp.MustCompile(`<script[^>]*>([^<]*)</script>`).FindAllStringSubmatch(html, -1) {
			if strings.TrimSpace(m[1]) != "" {
				t.Errorf("%s: inline script %q", name, m[1])
			}
		}
		for _, re := range []string{`(?i)\son[a-z]+\s*=`, `(?i)\sstyle\s*=`, `(?i)<style`} {
			if loc := regexp.MustCompile(re).FindString(html); loc != "" {
				t.Errorf("%s: inline %q", name, loc)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
