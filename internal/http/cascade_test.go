package http

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
)

func TestCascadeParameters(t *testing.T) {
	srv, _ := testServer(t)
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{path: "/objects/uid-A/cascade?propagation=sideways", code: 400, want: `invalid propagation "sideways"`},
		{path: "/objects/uid-A/cascade?propagation=Background", code: 400, want: `invalid propagation "Background"`},
		{path: "/objects/uid-A/cascade?limit=0", code: 400, want: "invalid limit"},
		{path: "/objects/uid-A/cascade?limit=ten", code: 400, want: "invalid limit"},
		{path: "/objects/uid-A/cascade?limit=100001", code: 400, want: "invalid limit"},
		{path: "/objects/uid-A/cascade?depth=2", code: 400, want: `unknown query parameter "depth"`},
		{path: "/objects/uid-A/cascade?propagation=orphan&propagation=background", code: 400, want: "more than once"},
		{path: "/objects/uid-nope/cascade", code: 404, want: `no object with uid "uid-nope"`},
		// Named as an owner but not mirrored: nothing to delete.
		{path: "/objects/uid-ghost/cascade", code: 404, want: `no object with uid "uid-ghost"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var e errorJSON
			getJSON(t, srv, tc.path, tc.code, &e)
			if !strings.Contains(e.Error, tc.want) {
				t.Errorf("error %q, want it to contain %q", e.Error, tc.want)
			}
		})
	}
}

func TestCascadePreview(t *testing.T) {
	srv, _ := testServer(t)
	for _, tc := range []struct {
		query, want, wantBlocked string
	}{
		{query: "", want: "B delete 1", wantBlocked: ""},
		{query: "?propagation=background&limit=10", want: "B delete 1", wantBlocked: ""},
		{query: "?propagation=orphan", want: "B remove-owner-reference 1", wantBlocked: ""},
		{query: "?propagation=foreground", want: "B delete 1", wantBlocked: "B"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			var c api.Cascade
			getJSON(t, srv, "/objects/uid-A/cascade"+tc.query, 200, &c)
			var items, blocked []string
			for _, it := range c.Items {
				items = append(items, fmt.Sprintf("%s %s %d", it.Target.Name, it.Action, it.Depth))
			}
			for _, b := range c.BlockedBy {
				blocked = append(blocked, b.Target.Name)
			}
			if got := strings.Join(items, ","); got != tc.want || c.Total != 1 || c.Truncated {
				t.Errorf("items %q total %d truncated %v, want %q, 1, false", got, c.Total, c.Truncated, tc.want)
			}
			if got := strings.Join(blocked, ","); got != tc.wantBlocked {
				t.Errorf("blockedBy %q, want %q", got, tc.wantBlocked)
			}
		})
	}
}
