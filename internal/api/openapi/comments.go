package openapi

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// goComments maps each exported type of package api ("Status") and each
// of its fields ("Status.Version") to its doc comment, read from the
// package's source in dir.
func goComments(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go file in %s", dir)
	}
	comments := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if !ts.Name.IsExported() {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				comments[ts.Name.Name] = withoutGoName(ts.Name.Name, prose(doc))
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, field := range st.Fields.List {
					text := prose(field.Doc)
					if text == "" {
						text = prose(field.Comment)
					}
					for _, n := range field.Names {
						if n.IsExported() && text != "" {
							comments[ts.Name.Name+"."+n.Name] = withoutGoName(n.Name, text)
						}
					}
				}
			}
		}
	}
	return comments, nil
}

// prose is a comment's text with its lines joined: paragraphs apart, one
// line each.
func prose(c *ast.CommentGroup) string {
	var paras []string
	for _, p := range strings.Split(c.Text(), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			paras = append(paras, p)
		}
	}
	return strings.Join(paras, "\n\n")
}

// withoutGoName drops the Go name a doc comment starts with, as Go's
// style asks, since the JSON document names its properties otherwise:
// "Version is kubegcd's version." becomes "kubegcd's version.",
// "DryRun: decisions are…" "Decisions are…", "PausedBy names…"
// "Names…". A comment that goes on otherwise ("Propagation of a delete",
// "Virtual, in…") is kept whole.
func withoutGoName(name, text string) string {
	rest, ok := strings.CutPrefix(text, name+" ")
	if !ok {
		if rest, ok = strings.CutPrefix(text, name+": "); !ok {
			return text
		}
		return capitalized(rest)
	}
	word, after, _ := strings.Cut(rest, " ")
	switch verb := strings.TrimSuffix(word, ","); {
	case verb == "is" || verb == "are":
		// "HolderSince is, on…": the verb goes with the name.
		return capitalized(after)
	case !isLowerWord(verb) || prepositions[verb]:
		return text
	}
	return capitalized(rest)
}

// prepositions are words after a Go name that do not start a predicate.
var prepositions = map[string]bool{"of": true, "in": true, "on": true, "for": true, "to": true, "with": true, "from": true, "by": true, "at": true}

// capitalized upper-cases the first letter of s when its first word is a
// plain lower-case word: "when it started" but not "kubegcd's version" or
// "kubegcd saw", which name the project.
func capitalized(s string) string {
	word, _, _ := strings.Cut(s, " ")
	word = strings.TrimRight(word, ",.;:")
	if s == "" || !isLowerWord(word) || word == "kubegcd" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// isLowerWord reports whether w is made of the letters a to z alone.
func isLowerWord(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}
