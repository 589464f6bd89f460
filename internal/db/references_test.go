package db

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestReferencesAround: what an object references, with each target's UID
// when mirrored, who references it (a StatefulSet's claim prefix
// included), when it was last referenced, and the bounds.
func TestReferencesAround(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	m := d.Mirror()
	res := func(group, resource, kind string) int64 {
		version := "v1"
		id, err := m.EnsureResource(ctx, Resource{Group: group, Version: version, Resource: resource, Kind: kind,
			Namespaced: true})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	cms, pods, pvcs, sets := res("", "configmaps", "ConfigMap"), res("", "pods", "Pod"),
		res("", "persistentvolumeclaims", "PersistentVolumeClaim"), res("apps", "statefulsets", "StatefulSet")
	obj := func(uid, apiVersion, kind, name string, refs ...Ref) *Object {
		return &Object{UID: uid, APIVersion: apiVersion, Kind: kind, Namespace: "ns", Name: name, ResourceVersion: "1",
			Refs: refs}
	}
	cmRef := func(name, via string) Ref { return Ref{Kind: "ConfigMap", Namespace: "ns", Name: name, Via: via} }
	claims := Ref{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "data-web-", Via: "spec.volumeClaimTemplates",
		Prefix: true}
	events := []Event{
		{ResourceID: cms, Object: obj("cm-a", "v1", "ConfigMap", "a")},
		{ResourceID: pods, Object: obj("pod-1", "v1", "Pod", "p1", cmRef("a", "spec.volumes[].configMap"),
			cmRef("missing", "spec.containers[].envFrom[].configMapRef"))},
		{ResourceID: pods, Object: obj("pod-2", "v1", "Pod", "p2", cmRef("a", "spec.containers[].env[].valueFrom"))},
		{ResourceID: sets, Object: obj("set", "apps/v1", "StatefulSet", "web", claims)},
		{ResourceID: pvcs, Object: obj("pvc-0", "v1", "PersistentVolumeClaim", "data-web-0")},
		{ResourceID: pvcs, Object: obj("pvc-x", "v1", "PersistentVolumeClaim", "data-web-x")},
	}
	if _, err := m.ApplyEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	objects := map[string]*Object{}
	for _, e := range events {
		objects[e.Object.UID] = e.Object
	}
	around := func(uid string, limit int) *ObjectReferences {
		t.Helper()
		got, err := d.Objects().ReferencesAround(ctx, objects[uid], limit)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	target := func(uid, apiVersion, kind, name string) api.Target {
		return api.Target{UID: uid, APIVersion: apiVersion, Kind: kind, Namespace: "ns", Name: name}
	}
	ignoreTime := cmp.Transformer("", func(*time.Time) bool { return true })

	got := around("pod-1", 10)
	want := &ObjectReferences{Refs: []ReferenceRow{
		{Ref: cmRef("missing", "spec.containers[].envFrom[].configMapRef")},
		{Ref: cmRef("a", "spec.volumes[].configMap"), TargetUID: "cm-a", Exists: true},
	}, Referrers: []ReferrerRow{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod-1 (-want +got):\n%s", diff)
	}
	got = around("cm-a", 10)
	want = &ObjectReferences{Refs: []ReferenceRow{}, Referrers: []ReferrerRow{
		{target("pod-1", "v1", "Pod", "p1"), "spec.volumes[].configMap"},
		{target("pod-2", "v1", "Pod", "p2"), "spec.containers[].env[].valueFrom"},
	}, LastReferenced: &time.Time{}}
	if diff := cmp.Diff(want, got, ignoreTime); diff != "" || got.LastReferenced == nil {
		t.Errorf("cm-a (-want +got):\n%s", diff)
	}
	if got := around("cm-a", 1); len(got.Referrers) != 1 || !got.ReferrersTruncated {
		t.Errorf("cm-a with a limit of 1: %d referrers, truncated %v; want 1 and true", len(got.Referrers),
			got.ReferrersTruncated)
	}
	got = around("set", 10)
	want = &ObjectReferences{Refs: []ReferenceRow{{Ref: claims, Exists: true}}, Referrers: []ReferrerRow{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("set (-want +got):\n%s", diff)
	}
	if got := around("pvc-0", 10); len(got.Referrers) != 1 || got.Referrers[0].Referrer.UID != "set" ||
		got.LastReferenced == nil {
		t.Errorf("pvc-0: referrers %+v, last referenced %v; want the StatefulSet, and a time", got.Referrers,
			got.LastReferenced)
	}
	if got := around("pvc-x", 10); len(got.Referrers) != 0 || got.LastReferenced != nil {
		t.Errorf("pvc-x, no ordinal: referrers %+v, last referenced %v; want none", got.Referrers, got.LastReferenced)
	}

	targets, err := d.Objects().TargetsOf(ctx, []string{"cm-a", "gone", "set"})
	if err != nil {
		t.Fatal(err)
	}
	wantTargets := map[string]api.Target{"cm-a": target("cm-a", "v1", "ConfigMap", "a"),
		"set": target("set", "apps/v1", "StatefulSet", "web")}
	if diff := cmp.Diff(wantTargets, targets); diff != "" {
		t.Errorf("TargetsOf (-want +got):\n%s", diff)
	}
}

func TestOrdinalPrefix(t *testing.T) {
	for name, want := range map[string]string{"data-web-0": "data-web-", "data-web-12": "data-web-", "web": "",
		"web-": "", "x0": "", "0": ""} {
		if got := ordinalPrefix(name); got != want {
			t.Errorf("ordinalPrefix(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestCountRuleMatches(t *testing.T) {
	d, _ := openSandbox(t, SandboxOptions{})
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if err := d.Rules().ReplaceRuleMatches(ctx, "r1", []RuleMatch{{UID: "u1"}, {UID: "u2", Finding: true}}, at); err != nil {
		t.Fatal(err)
	}
	if err := d.Rules().ReplaceRuleMatches(ctx, "r2", []RuleMatch{{UID: "u1"}}, at); err != nil {
		t.Fatal(err)
	}
	all, err := d.Rules().CountRuleMatches(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]RuleMatchCount{"r1": {1, 1}, "r2": {1, 0}}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("every rule (-want +got):\n%s", diff)
	}
	one, err := d.Rules().CountRuleMatches(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]RuleMatchCount{"r2": {1, 0}}, one); diff != "" {
		t.Errorf("r2 (-want +got):\n%s", diff)
	}
}
