package db

import (
	"context"
	"testing"
)

// TestResumeVersion follows a resource's resume point through its life:
// none before the first list and while any list is under way, the list's
// at its end, then each committed watch batch's or bookmark's.
func TestResumeVersion(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	id, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	want := func(step, rv string) {
		t.Helper()
		got, err := d.Mirror().ResumeVersion(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got != rv {
			t.Errorf("%s: resume point %q, want %q", step, got, rv)
		}
	}
	want("new resource", "")
	epoch, err := d.Mirror().BeginList(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cm := &Object{UID: "u1", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a", ResourceVersion: "40"}
	if err := d.Mirror().WriteListPage(ctx, id, epoch, []*Object{cm}); err != nil {
		t.Fatal(err)
	}
	want("list under way", "")
	if _, err := d.Mirror().FinishList(ctx, id, epoch, "50"); err != nil {
		t.Fatal(err)
	}
	want("list done", "50")
	if _, err := d.Mirror().ApplyWatchEvents(ctx, id, "60", []Event{{ResourceID: id, Object: &Object{UID: "u2", APIVersion: "v1",
		Kind: "ConfigMap", Namespace: "ns", Name: "b", ResourceVersion: "60"}}}); err != nil {
		t.Fatal(err)
	}
	want("watch batch", "60")
	if err := d.Mirror().SetResumeVersion(ctx, id, "70"); err != nil {
		t.Fatal(err)
	}
	want("bookmark", "70")
	if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: id, Deleted: true, Object: &Object{UID: "u2"}}}); err != nil {
		t.Fatal(err)
	}
	want("events of no watch", "70")
	if err := d.Mirror().MarkAllUnsynced(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	want("next start", "70")
	if _, err := d.Mirror().BeginList(ctx, id); err != nil {
		t.Fatal(err)
	}
	want("relist under way", "")
}

func TestForgetResumePointsAndNamespaceUID(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	if uid, err := d.Mirror().NamespaceUID(ctx, "kube-system"); err != nil || uid != "" {
		t.Fatalf("NamespaceUID of an empty mirror = %q, %v; want none", uid, err)
	}
	id, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"})
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := d.Mirror().BeginList(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	objs := []*Object{
		{UID: "ks", APIVersion: "v1", Kind: "Namespace", Name: "kube-system", ResourceVersion: "3"},
		{UID: "cm", APIVersion: "v1", Kind: "ConfigMap", Namespace: "other", Name: "kube-system", ResourceVersion: "4"},
	}
	if err := d.Mirror().WriteListPage(ctx, id, epoch, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Mirror().FinishList(ctx, id, epoch, "50"); err != nil {
		t.Fatal(err)
	}
	if uid, err := d.Mirror().NamespaceUID(ctx, "kube-system"); err != nil || uid != "ks" {
		t.Errorf("NamespaceUID = %q, %v; want ks", uid, err)
	}
	if err := d.Mirror().ForgetResumePoints(ctx); err != nil {
		t.Fatal(err)
	}
	if rv, err := d.Mirror().ResumeVersion(ctx, id); err != nil || rv != "" {
		t.Errorf("resume point after ForgetResumePoints %q, %v; want none", rv, err)
	}
}
