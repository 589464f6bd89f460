package openapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
// schema's description, and a pointer written without omitempty may be
// null.
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
		{"Status", "", "answer of GET /status"},
		{"Status", "version", "kubegcd's version"},
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

func TestWithoutGoName(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"Version", "Version is kubegcd's version.", "kubegcd's version."},
		{"StartedAt", "StartedAt is when this instance started.", "When this instance started."},
		{"Items", "Items are the decisions of this page; [] when none matched.", "The decisions of this page; [] when none matched."},
		{"DryRun", "DryRun: decisions are recorded, never sent to the cluster.", "Decisions are recorded, never sent to the cluster."},
		{"PausedBy", "PausedBy names each cause of the pause.", "Names each cause of the pause."},
		{"Blockers", "Blockers hold Target in turn.", "Hold Target in turn."},
		{"HolderSince", "HolderSince is, on a Lease's created item, since when.", "On a Lease's created item, since when."},
		{"Kind", "Kind says, for a write, what.", "Says, for a write, what."},
		{"Items", "Items are ?namespace= and ?expired= kept.", "?namespace= and ?expired= kept."},
		{"Saw", "Saw is kubegcd saw it.", "kubegcd saw it."},
		// Kept whole.
		{"Propagation", "Propagation of a delete: how its dependents go.", "Propagation of a delete: how its dependents go."},
		{"Virtual", "Virtual, in upstream's sense: known only from a reference.", "Virtual, in upstream's sense: known only from a reference."},
		{"NotBefore", "NotBefore, when set, is the earliest time.", "NotBefore, when set, is the earliest time."},
		{"UID", "The object's UID.", "The object's UID."},
		{"Name", "Namespace is not this field.", "Namespace is not this field."},
		{"Name", "Name RFC 1123.", "Name RFC 1123."},
		{"Name", "", ""},
	} {
		if got := withoutGoName(tc.name, tc.text); got != tc.want {
			t.Errorf("withoutGoName(%q, %q) = %q, want %q", tc.name, tc.text, got, tc.want)
		}
	}
}
