package db

import (
	"context"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// A rule that deletes reads each match with its resource and the
// resourceVersion of its last pass; a reference that appears after a
// pass began is seen, one older than it is not.
func TestActMatches(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	m := d.Mirror()
	cms, pods := configMapsAndPods(t, m)
	cm := func(uid, name, rv string) Event {
		return Event{ResourceID: cms, Object: &Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns",
			Name: name, ResourceVersion: rv}}
	}
	if _, err := m.ApplyEvents(ctx, []Event{cm("u1", "one", "10"), cm("u2", "two", "20")}); err != nil {
		t.Fatal(err)
	}
	rules := d.Rules()
	pass := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	if err := rules.ReplaceRuleMatches(ctx, "r", []RuleMatch{{UID: "u1", Reason: "unused"}, {UID: "u2", Finding: true}},
		pass); err != nil {
		t.Fatal(err)
	}
	// The object changes after the pass: the match keeps the version the
	// pass stored, until the next pass.
	if _, err := m.ApplyEvents(ctx, []Event{cm("u1", "one", "11")}); err != nil {
		t.Fatal(err)
	}
	got, err := rules.ActMatches(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("ActMatches = %+v, want u1 alone (a finding is never acted on)", got)
	}
	if g := got[0]; g.Target.UID != "u1" || g.ResourceVersion != "10" || g.Resource != "configmaps" || !g.Namespaced ||
		g.Version != "v1" || g.Passes != 1 || g.NotifiedAt != nil {
		t.Fatalf("ActMatches[0] = %+v", g)
	}
	noticed := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	if err := rules.MarkNotified(ctx, "r", "u1", noticed); err != nil {
		t.Fatal(err)
	}
	second := pass.Add(time.Second)
	if err := rules.ReplaceRuleMatches(ctx, "r", []RuleMatch{{UID: "u1", Reason: "unused"}}, second); err != nil {
		t.Fatal(err)
	}
	got, err = rules.ActMatches(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if g := got[0]; g.ResourceVersion != "11" || g.Passes != 1 || !g.Since.Equal(second) || g.NotifiedAt != nil {
		t.Fatalf("after a pass that found the object changed: %+v, want version 11 and a new start: one pass "+
			"since %v, no notice", g, second)
	}
	if err := rules.MarkNotified(ctx, "r", "u1", noticed); err != nil {
		t.Fatal(err)
	}
	if err := rules.ReplaceRuleMatches(ctx, "r", []RuleMatch{{UID: "u1", Reason: "unused"}}, pass.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err = rules.ActMatches(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if g := got[0]; g.ResourceVersion != "11" || g.Passes != 2 || !g.Since.Equal(second) || g.NotifiedAt == nil ||
		!g.NotifiedAt.Equal(noticed) {
		t.Fatalf("after an unchanged pass: %+v, want two passes since %v, noticed at %v", g, second, noticed)
	}

	target := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "one", UID: "u1"}
	referenced := func(since time.Time) bool {
		t.Helper()
		ok, err := rules.ReferencedSince(ctx, target, since)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if referenced(pass) {
		t.Fatal("referenced with no referrer")
	}
	before := time.Now().UTC().Add(-time.Millisecond)
	pod := Event{ResourceID: pods, Object: &Object{UID: "p1", APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p",
		ResourceVersion: "1", Refs: []Ref{{Kind: "ConfigMap", Namespace: "ns", Name: "one", Via: "spec.volumes[].configMap"}}}}
	if _, err := m.ApplyEvents(ctx, []Event{pod}); err != nil {
		t.Fatal(err)
	}
	if !referenced(before) {
		t.Error("a reference that appeared after the pass began is not seen")
	}
	if referenced(time.Now().UTC().Add(time.Second)) {
		t.Error("a reference older than the pass counts as new")
	}
	n, err := rules.CountObjectsOfKinds(ctx, [][2]string{{"v1", "ConfigMap"}})
	if err != nil || n != 2 {
		t.Errorf("CountObjectsOfKinds = %d, %v; want 2", n, err)
	}
	held, err := rules.MatchedUIDs(ctx, []string{"r", "other"})
	if err != nil || len(held) != 1 || !held["u1"] {
		t.Errorf("MatchedUIDs = %v, %v; want u1", held, err)
	}
}

// configMapsAndPods mirrors the resources configmaps and pods and returns
// their ids.
func configMapsAndPods(t *testing.T, m Mirror) (cms, pods int64) {
	t.Helper()
	ctx := context.Background()
	var err error
	if cms, err = m.EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap",
		Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	if pods, err = m.EnsureResource(ctx, Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	return cms, pods
}
