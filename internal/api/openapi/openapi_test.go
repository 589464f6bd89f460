package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestDocumentIsValid31: an OpenAPI 3.1 loader and validator accept the
// document, and it has every route of the API.
func TestDocumentIsValid31(t *testing.T) {
	b, err := Build("..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/status", "/graph", "/pending", "/audit", "/objects", "/objects/{uid}",
		"/objects/{uid}/cascade", "/objects/{uid}/history", "/stuck", "/lint", "/leases", "/overview",
		"/enforcement/release", "/healthz", "/readyz", "/openapi/v3"} {
		if doc.Paths.Find(path) == nil {
			t.Errorf("no path %s", path)
		}
	}
}

// TestSchemasCarryComments: a type's and a field's doc comment are their
// schema's description, whole, and a pointer written without omitempty
// may be null.
func TestSchemasCarryComments(t *testing.T) {
	b, err := Build("..")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Components struct {
			Schemas map[string]struct {
				Description string                     `json:"description"`
				Properties  map[string]json.RawMessage `json:"properties"`
				Required    []string                   `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ schema, property, want string }{
		{"Status", "", "Status is the answer of GET /status"},
		{"Status", "version", "The version of kubegcd."},
		{"AuditEntry", "outcome", "skipped for a decision that needs no write"},
		{"Object", "deletionTimestamp", `"type":"null"`},
		{"Lease", "", ""},
		{"LeaseItem", "holderIdentity", `"type":"null"`},
	} {
		s, ok := d.Components.Schemas[tc.schema]
		if tc.want == "" {
			continue
		}
		if !ok {
			t.Errorf("no schema %s", tc.schema)
			continue
		}
		got := s.Description
		if tc.property != "" {
			got = strings.ReplaceAll(string(s.Properties[tc.property]), " ", "")
			got = strings.ReplaceAll(got, "\n", "")
		}
		if !strings.Contains(got, strings.ReplaceAll(tc.want, " ", "")) && !strings.Contains(got, tc.want) {
			t.Errorf("%s.%s: %s does not say %s", tc.schema, tc.property, got, tc.want)
		}
	}
}

// TestEnumsNameProperties: each enum names a property of a schema, so
// that a renamed field cannot leave its enum behind unnoticed.
func TestEnumsNameProperties(t *testing.T) {
	b, err := Build("..")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	for key, want := range enums {
		name, prop, _ := strings.Cut(key, ".")
		got := d.Components.Schemas[name].Properties[prop].Enum
		if len(got) != len(want) {
			t.Errorf("%s: enum %v, want %v", key, got, want)
		}
	}
}

// TestDescriptionsAreSentences: every summary and description of the
// document reads as a sentence of its own: it starts in upper case (or a
// digit or a sign), no possessive dangles without its noun, and no
// property's starts with the Go name of its field.
func TestDescriptionsAreSentences(t *testing.T) {
	b, err := Build("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range descriptionProblems(t, b) {
		t.Error(p)
	}
	// The check finds what it is for.
	bad := `{"info": {"description": "kubegcd's version."},
"components": {"schemas": {"S": {"properties": {
  "uid": {"description": "The reference's."},
  "apiVersion": {"description": "The object's, or, when it is missing, its first reference's."},
  "blockers": {"description": "Blockers hold Target in turn."},
  "fine": {"description": "The object's UID."}}}}}}`
	got := descriptionProblems(t, []byte(bad))
	want := []string{
		`components.schemas.S.properties.apiVersion: a possessive without its noun: "The object's, or, when it is missing, its first reference's."`,
		`components.schemas.S.properties.blockers: starts with its Go name: "Blockers hold Target in turn."`,
		`components.schemas.S.properties.uid: a possessive without its noun: "The reference's."`,
		`info: starts in lower case: "kubegcd's version."`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("descriptionProblems =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// danglingPossessive is a possessive that punctuation, not a noun, follows.
var danglingPossessive = regexp.MustCompile(`\w's([.,;:)]|$)`)

// descriptionProblems lists, sorted, what is wrong with each summary and
// description of the JSON document doc, by where it is.
func descriptionProblems(t *testing.T, doc []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var problems []string
	var walk func(path []string, v any)
	walk = func(path []string, v any) {
		switch v := v.(type) {
		case []any:
			for i, e := range v {
				walk(append(path, strconv.Itoa(i)), e)
			}
		case map[string]any:
			for k, e := range v {
				text, ok := e.(string)
				if k != "description" && k != "summary" || !ok {
					walk(append(slices.Clip(path), k), e)
					continue
				}
				where := strings.Join(path, ".")
				if r, _ := utf8.DecodeRuneInString(text); unicode.IsLower(r) {
					problems = append(problems, fmt.Sprintf("%s: starts in lower case: %q", where, text))
				}
				if danglingPossessive.MatchString(text) {
					problems = append(problems, fmt.Sprintf("%s: a possessive without its noun: %q", where, text))
				}
				if n := len(path); n >= 2 && path[n-2] == "properties" {
					goName := strings.ToUpper(path[n-1][:1]) + path[n-1][1:]
					if strings.HasPrefix(text, goName+" ") || strings.HasPrefix(text, goName+":") {
						problems = append(problems, fmt.Sprintf("%s: starts with its Go name: %q", where, text))
					}
				}
			}
		}
	}
	walk(nil, v)
	sort.Strings(problems)
	return problems
}
