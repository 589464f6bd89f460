package db

import (
	"reflect"
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
	if len(names) >= 20 {
		t.Errorf("*db.DB has %d exported methods, want under 20 (put queries on a role): %v", len(names), names)
	}
	for _, role := range []string{"Mirror", "Objects", "History", "Decisions", "Ledger", "OwnerGC", "PodGC", "TTL", "SVGC", "Reads"} {
		if _, ok := typ.MethodByName(role); !ok {
			t.Errorf("*db.DB does not hand out the role %s", role)
		}
	}
}
