package rules

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

// TestEvaluateWithExclusions: the exclusions wrap the rule's SELECT,
// whatever ends it, and a rule without uid says so, not the wrapping.
func TestEvaluateWithExclusions(t *testing.T) {
	f := newFixture(t)
	keep := f.obj("ConfigMap", "a/keep", day)
	f.label(keep, "app", "keep")
	f.obj("ConfigMap", "a/other", day)
	f.obj("Namespace", "team-x", day)
	f.commit()
	e := &Evaluator{Sandbox: f.sandbox(), Now: func() time.Time { return now }}
	tests := []struct {
		name, sel string
		exclude   Exclude
		want      []string
		err       error
	}{
		{"ends with a comment", "SELECT uid, name AS reason FROM objects ORDER BY uid; -- all of them", Exclude{Labels: []string{"app=keep"}},
			[]string{"ConfigMap/a/other", "Namespace/team-x"}, nil},
		{"a Namespace by its name", "SELECT uid FROM objects ORDER BY uid", Exclude{Namespaces: []string{"team-*"}},
			[]string{"ConfigMap/a/keep", "ConfigMap/a/other"}, nil},
		{"label absent", "SELECT uid FROM objects ORDER BY uid", Exclude{Labels: []string{"app!=keep"}},
			[]string{"ConfigMap/a/keep"}, nil},
		{"no uid", "SELECT name FROM objects", Exclude{Names: []string{"x"}}, nil, db.ErrRuleNoUID},
		{"two statements", "SELECT uid FROM objects; SELECT 1", Exclude{Names: []string{"x"}}, nil, db.ErrRuleNotOneStatement},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Rule{ID: "x", Select: tt.sel, Exclude: tt.exclude}
			ms, took, err := e.Evaluate(context.Background(), r)
			if !errors.Is(err, tt.err) || took <= 0 {
				t.Fatalf("Evaluate: %v (took %s), want %v", err, took, tt.err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.UID)
			}
			slices.Sort(got)
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("matches %v, want %v", got, tt.want)
			}
			if chk := e.Check(context.Background(), r); (chk == nil) != (tt.err == nil) {
				t.Errorf("Check: %v", chk)
			}
		})
	}
}
