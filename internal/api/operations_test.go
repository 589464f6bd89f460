package api

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOperationsAreConsistent: each operation has its own ID and route,
// its defaults lie within its limits and enums, and the limits of /graph
// that are no parameter's own are the ones its descriptions give.
func TestOperationsAreConsistent(t *testing.T) {
	ids, routes := map[string]bool{}, map[string]bool{}
	for _, op := range Operations {
		route := op.Method + " " + op.Path
		if ids[op.ID] || routes[route] {
			t.Errorf("%s (%s) is not the only one of its ID or route", route, op.ID)
		}
		ids[op.ID], routes[route] = true, true
		if op.Answer == nil && op.AnswerSchema == nil && op.AnswerText == "" {
			t.Errorf("%s says nothing of its answer", route)
		}
		for _, p := range op.Params {
			switch d := p.Default.(type) {
			case int:
				if p.Type != "integer" || d < p.Min || d > p.Max {
					t.Errorf("%s ?%s: default %d outside %d to %d", route, p.Name, d, p.Min, p.Max)
				}
			case string:
				if p.Enum != nil && !slices.Contains(p.Enum, d) {
					t.Errorf("%s ?%s: default %q not among %v", route, p.Name, d, p.Enum)
				}
			}
			if p.In == "path" && !strings.Contains(op.Path, "{"+p.Name+"}") {
				t.Errorf("%s has no path parameter {%s}", route, p.Name)
			}
		}
	}
	graph := Operations[slices.IndexFunc(Operations, func(op Operation) bool { return op.ID == "graph" })]
	for _, tc := range []struct{ param, says string }{
		{"limit", thousands(graph.Param("limit").Max)},
		{"limit", thousands(GraphFilteredMaxLimit)},
		{"uid", thousands(GraphMaxUIDs)},
	} {
		if !strings.Contains(graph.Param(tc.param).Description, tc.says) {
			t.Errorf("GET /graph ?%s does not say %s: %q", tc.param, tc.says, graph.Param(tc.param).Description)
		}
	}
}

// thousands writes n as the descriptions do: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
