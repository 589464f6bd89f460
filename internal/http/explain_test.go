package http

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/api"
)

// objectExplanationBody is what these tests read of /objects/{uid}.
type objectExplanationBody struct {
	Stuck   *api.StuckItem    `json:"stuck"`
	Lint    []api.LintFinding `json:"lint"`
	History struct {
		Items []struct {
			Event      string   `json:"event"`
			Finalizers []string `json:"finalizers"`
		} `json:"items"`
		Truncated bool `json:"truncated"`
	} `json:"history"`
	Links map[string]string `json:"links"`
	Why   string            `json:"why"`
}

func TestObjectExplanation(t *testing.T) {
	srv, _ := testServer(t)
	tests := []struct {
		name      string
		uid       string
		stuck     bool
		blockers  []string // type:finalizer of each blocker
		lintRules []string
		whyHas    []string
	}{
		{name: "held by finalizers", uid: "uid-D", stuck: true,
			blockers:  []string{"finalizer:foregroundDeletion", "finalizer:example.com/hold"},
			lintRules: []string{},
			whyHas: []string{"waits for finalizers foregroundDeletion, example.com/hold",
				"It is held by its finalizer example.com/hold, to be removed by the controller of example.com"}},
		{name: "dangling owner", uid: "uid-G", lintRules: []string{api.LintDanglingOwner.ID},
			whyHas: []string{"Its ownerReference to Deployment web: no object with uid uid-ghost", "KG-LINT-01 dangling-owner, warning"}},
		{name: "nothing to say", uid: "uid-L", lintRules: []string{}, whyHas: []string{"It is not pending: it has no owner references."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got objectExplanationBody
			getJSON(t, srv, "/objects/"+tc.uid, 200, &got)
			if (got.Stuck != nil) != tc.stuck {
				t.Fatalf("stuck = %+v, want present %v", got.Stuck, tc.stuck)
			}
			if tc.stuck {
				var blockers []string
				for _, b := range got.Stuck.Blockers {
					blockers = append(blockers, string(b.Type)+":"+b.Finalizer)
				}
				if got.Stuck.Target.UID != tc.uid || got.Stuck.State != api.StateDeletingDependents {
					t.Errorf("stuck target %v state %q", got.Stuck.Target, got.Stuck.State)
				}
				if diff := cmp.Diff(tc.blockers, blockers); diff != "" {
					t.Errorf("stuck blockers (-want +got):\n%s", diff)
				}
			}
			rules := []string{}
			for _, f := range got.Lint {
				rules = append(rules, f.Rule)
				if f.Target.UID != tc.uid {
					t.Errorf("lint finding about %v, want only %s's own references", f.Target, tc.uid)
				}
			}
			if diff := cmp.Diff(tc.lintRules, rules); diff != "" {
				t.Errorf("lint rules (-want +got):\n%s", diff)
			}
			if len(got.History.Items) != 1 || got.History.Items[0].Event != "created" || got.History.Truncated {
				t.Errorf("history = %+v, want the one created entry", got.History)
			}
			wantLinks := map[string]string{"history": "/objects/" + tc.uid + "/history", "cascade": "/objects/" + tc.uid + "/cascade",
				"graph": "/graph?uid=" + tc.uid}
			if diff := cmp.Diff(wantLinks, got.Links); diff != "" {
				t.Errorf("links (-want +got):\n%s", diff)
			}
			for _, w := range tc.whyHas {
				if !strings.Contains(got.Why, w) {
					t.Errorf("why = %q, want it to say %q", got.Why, w)
				}
			}
			// Every link answers.
			for _, l := range got.Links {
				if r, body := get(t, srv, l); r.StatusCode != 200 {
					t.Errorf("GET %s: %d %s", l, r.StatusCode, body)
				}
			}
		})
	}
}
