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
// package's source in dir. Each is taken whole, as Kubernetes' openapi-gen
// takes them: a type's starts with its name, which is also its schema's,
// and a field's is written as a sentence of its own.
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
				comments[ts.Name.Name] = prose(doc)
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
							comments[ts.Name.Name+"."+n.Name] = text
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
