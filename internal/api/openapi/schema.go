package openapi

import (
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/kubegcd/kubegcd/internal/api"
)

// apiPkg is package api's import path: only its types take their
// descriptions from its comments.
var apiPkg = reflect.TypeFor[api.Error]().PkgPath()

// schemas reflects each type of roots, and the types their fields name,
// into JSON Schema 2020-12, by type name. A property's description is the
// field's doc comment; a field without omitempty is required; a pointer
// without omitempty may be null, as encoding/json writes a nil one.
func schemas(roots []reflect.Type, comments map[string]string) (map[string]*jsonschema.Schema, error) {
	r := &jsonschema.Reflector{
		Anonymous: true,
		Mapper:    typeEnum,
		LookupComment: func(t reflect.Type, field string) string {
			if t.PkgPath() != apiPkg {
				return ""
			}
			if field == "" {
				return comments[t.Name()]
			}
			return comments[t.Name()+"."+field]
		},
	}
	defs := map[string]*jsonschema.Schema{}
	for _, t := range roots {
		s := r.ReflectFromType(t)
		for name, d := range s.Definitions {
			defs[name] = d
		}
	}
	types := map[string]reflect.Type{}
	for _, t := range roots {
		collect(t, types)
	}
	for name, t := range types {
		if d := defs[name]; d != nil {
			allowNull(t, d)
		}
	}
	addEnums(defs)
	return defs, nil
}

// collect adds t and the named struct types its fields reach to types.
func collect(t reflect.Type, types map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != apiPkg || types[t.Name()] != nil {
		return
	}
	types[t.Name()] = t
	for f := range t.Fields() {
		collect(f.Type, types)
	}
}

// allowNull lets each pointer field of t that is written without
// omitempty be null in its schema s.
func allowNull(t reflect.Type, s *jsonschema.Schema) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			allowNull(f.Type, s)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if f.Type.Kind() != reflect.Pointer || strings.Contains(","+opts+",", ",omitempty,") {
			continue
		}
		p, ok := s.Properties.Get(name)
		if !ok {
			continue
		}
		desc := p.Description
		p.Description = ""
		s.Properties.Set(name, &jsonschema.Schema{
			AnyOf:       []*jsonschema.Schema{p, {Type: "null"}},
			Description: desc,
		})
	}
}
