package db

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestDBKeepsItsLife: *DB holds the database's life and hands out the
// roles; a query added to *DB instead of to a role fails here.
func TestDBKeepsItsLife(t *testing.T) {
	typ := reflect.TypeFor[*DB]()
	var names []string
	for m := range typ.Methods() {
		names = append(names, m.Name)
	}
	if len(names) >= 24 {
		t.Errorf("*db.DB has %d exported methods, want under 24 (put queries on a role): %v", len(names), names)
	}
	for _, role := range []string{"Mirror", "Objects", "History", "Decisions", "Ledger", "OwnerGC", "PodGC", "TTL", "SVGC",
		"LCGC", "Reads", "Copies"} {
		if _, ok := typ.MethodByName(role); !ok {
			t.Errorf("*db.DB does not hand out the role %s", role)
		}
	}
}

// TestRolesHaveFiles: each role *DB hands out has the file of its name
// (Mirror has mirror.go), and that file declares methods of the role. A
// role made only of other roles, such as Reads, has no methods and no file.
func TestRolesHaveFiles(t *testing.T) {
	files := methodFiles(t)
	roles := 0
	for m := range reflect.TypeFor[*DB]().Methods() {
		if m.Type.NumIn() != 1 || m.Type.NumOut() != 1 || m.Type.Out(0).Name() != m.Name {
			continue // not a role
		}
		roles++
		in := files[m.Name]
		if len(in) == 0 {
			continue
		}
		if want := strings.ToLower(m.Name) + ".go"; !in[want] {
			t.Errorf("the role %s has no file %s; its methods are in %v", m.Name, want, slices.Sorted(maps.Keys(in)))
		}
	}
	if roles < 10 {
		t.Errorf("found %d roles, want the 10 or more roles.go declares", roles)
	}
}

// TestRolesNameEveryFile: the doc comment of DB in roles.go names every
// file of the package, so that its map of roles to files stays whole.
func TestRolesNameEveryFile(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "roles.go", nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE && g.Specs[0].(*ast.TypeSpec).Name.Name == "DB" {
			doc = g.Doc.Text()
		}
	}
	if doc == "" {
		t.Fatal("roles.go has no doc comment on DB")
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || name == "roles.go" {
			continue
		}
		if !strings.Contains(doc, name) {
			t.Errorf("the doc comment of DB in roles.go does not name %s: say which role it serves", name)
		}
	}
}

// methodFiles maps each type of the package to the files that declare
// its methods.
func methodFiles(t *testing.T) map[string]map[string]bool {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			recv := fn.Recv.List[0].Type
			if star, ok := recv.(*ast.StarExpr); ok {
				recv = star.X
			}
			if id, ok := recv.(*ast.Ident); ok {
				if out[id.Name] == nil {
					out[id.Name] = map[string]bool{}
				}
				out[id.Name][name] = true
			}
		}
	}
	return out
}
