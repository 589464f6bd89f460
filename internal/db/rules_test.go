package db

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

func TestReplaceRuleMatches(t *testing.T) {
	d, _ := openSandbox(t, SandboxOptions{})
	ctx := context.Background()
	store := d.Rules()
	t1 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Minute)
	t3 := t2.Add(time.Minute)
	cm := func(uid, name string) api.Target {
		return api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: name, UID: uid}
	}
	steps := []struct {
		name    string
		rule    string
		at      time.Time
		matches []RuleMatch
		want    []StoredMatch
	}{
		{"first pass", "r1", t1, []RuleMatch{{UID: "u1", Reason: "a"}, {UID: "gone", Reason: "not mirrored"}},
			[]StoredMatch{{RuleID: "r1", Target: cm("u1", "one"), Reason: "a", Since: t1, Passes: 1}}},
		{"another rule", "r2", t1, []RuleMatch{{UID: "u1", Finding: true}},
			[]StoredMatch{
				{RuleID: "r1", Target: cm("u1", "one"), Reason: "a", Since: t1, Passes: 1},
				{RuleID: "r2", Target: cm("u1", "one"), Finding: true, Since: t1, Passes: 1},
			}},
		{"still matched, and a new one", "r1", t2, []RuleMatch{{UID: "u2", Reason: "b"}, {UID: "u1", Reason: "a2"}, {UID: "u1", Reason: "twice"}},
			[]StoredMatch{
				{RuleID: "r1", Target: cm("u1", "one"), Reason: "a2", Since: t1, Passes: 2},
				{RuleID: "r1", Target: cm("u2", "two"), Reason: "b", Since: t2, Passes: 1},
				{RuleID: "r2", Target: cm("u1", "one"), Finding: true, Since: t1, Passes: 1},
			}},
		{"one no longer matched", "r1", t3, []RuleMatch{{UID: "u2", Reason: "b"}},
			[]StoredMatch{
				{RuleID: "r1", Target: cm("u2", "two"), Reason: "b", Since: t2, Passes: 2},
				{RuleID: "r2", Target: cm("u1", "one"), Finding: true, Since: t1, Passes: 1},
			}},
		{"matched again starts again", "r1", t3.Add(time.Minute), []RuleMatch{{UID: "u2", Reason: "b"}, {UID: "u1"}},
			[]StoredMatch{
				{RuleID: "r1", Target: cm("u1", "one"), Since: t3.Add(time.Minute), Passes: 1},
				{RuleID: "r1", Target: cm("u2", "two"), Reason: "b", Since: t2, Passes: 3},
				{RuleID: "r2", Target: cm("u1", "one"), Finding: true, Since: t1, Passes: 1},
			}},
		{"nothing", "r1", t3.Add(2 * time.Minute), nil,
			[]StoredMatch{{RuleID: "r2", Target: cm("u1", "one"), Finding: true, Since: t1, Passes: 1}}},
	}
	for _, s := range steps {
		if err := store.ReplaceRuleMatches(ctx, s.rule, s.matches, s.at); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, next, err := store.ListRuleMatches(ctx, RuleMatchFilter{})
		if err != nil || next != nil {
			t.Fatalf("%s: list: %v, next %v", s.name, err, next)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	if err := store.KeepRuleMatches(ctx, []string{"r1"}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := store.ListRuleMatches(ctx, RuleMatchFilter{}); err != nil || len(got) != 0 {
		t.Errorf("after KeepRuleMatches(r1): %v, %v", got, err)
	}
}

func TestListRuleMatchesPages(t *testing.T) {
	d, _ := openSandbox(t, SandboxOptions{})
	ctx := context.Background()
	store := d.Rules()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, r := range []string{"a", "b"} {
		if err := store.ReplaceRuleMatches(ctx, r, []RuleMatch{{UID: "u1"}, {UID: "u2"}}, at); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var after *RuleMatchKey
	for page := 0; ; page++ {
		ms, next, err := store.ListRuleMatches(ctx, RuleMatchFilter{After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			got = append(got, m.RuleID+"/"+m.Target.UID)
		}
		if next == nil {
			break
		}
		after = next
	}
	if want := []string{"a/u1", "a/u2", "b/u1", "b/u2"}; !cmp.Equal(got, want) {
		t.Errorf("pages: %v, want %v", got, want)
	}
	filtered := []struct {
		f    RuleMatchFilter
		want int
	}{
		{RuleMatchFilter{RuleID: "b"}, 2},
		{RuleMatchFilter{Namespace: "a", Kind: "configmaps"}, 4},
		{RuleMatchFilter{Namespace: "b"}, 0},
		{RuleMatchFilter{Kind: "Secret"}, 0},
	}
	for _, tt := range filtered {
		ms, _, err := store.ListRuleMatches(ctx, tt.f)
		if err != nil || len(ms) != tt.want {
			t.Errorf("%+v: %d matches, %v; want %d", tt.f, len(ms), err, tt.want)
		}
	}
	of, err := store.MatchesOf(ctx, "u2")
	if err != nil || len(of) != 2 || of[0].RuleID != "a" || of[1].RuleID != "b" {
		t.Errorf("MatchesOf(u2): %v, %v", of, err)
	}
}
