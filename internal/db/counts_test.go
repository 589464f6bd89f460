package db

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubegcd/kubegcd/internal/api"
)

func TestObjectCounts(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	resource := func(r Resource) int64 {
		t.Helper()
		id, err := d.Mirror().EnsureResource(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	cms := resource(Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	// Deployments are mirrored but have no object: a 0, not a missing kind.
	resource(Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true})
	// Two versions of one kind are one count.
	w1 := resource(Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true})
	w2 := resource(Resource{Group: "example.com", Version: "v2", Resource: "widgets", Kind: "Widget", Namespaced: true})

	ref := func(apiVersion, kind, uid string) api.OwnerRef {
		return api.OwnerRef{APIVersion: apiVersion, Kind: kind, Name: uid, UID: uid}
	}
	obj := func(rid int64, apiVersion, kind, uid string, refs ...api.OwnerRef) Event {
		return Event{ResourceID: rid, Object: &Object{UID: uid, APIVersion: apiVersion, Kind: kind, Namespace: "ns", Name: uid,
			ResourceVersion: "1", OwnerReferences: refs}}
	}
	if _, err := d.Mirror().ApplyEvents(ctx, []Event{
		obj(cms, "v1", "ConfigMap", "a"),
		obj(cms, "v1", "ConfigMap", "b"),
		obj(cms, "v1", "ConfigMap", "one", ref("v1", "ConfigMap", "a")),
		// Two ConfigMap owners: one dependent of that pair.
		obj(cms, "v1", "ConfigMap", "two", ref("v1", "ConfigMap", "a"), ref("v1", "ConfigMap", "b")),
		// Owners of two kinds: once in each pair.
		obj(cms, "v1", "ConfigMap", "mixed", ref("v1", "ConfigMap", "a"), ref("example.com/v1", "Widget", "w")),
		// Two versions of one owner group and kind: one pair, counted once;
		// the owner need not be mirrored.
		obj(cms, "v1", "ConfigMap", "versions", ref("apps/v1", "Deployment", "gone"), ref("apps/v1beta1", "Deployment", "gone2")),
		obj(w1, "example.com/v1", "Widget", "w"),
		obj(w2, "example.com/v2", "Widget", "w-dep", ref("v1", "ConfigMap", "b")),
		obj(w1, "example.com/v1", "Widget", "w-dep2", ref("v1", "ConfigMap", "a")),
	}); err != nil {
		t.Fatal(err)
	}

	objects, owned, err := d.Objects().ObjectCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantObjects := []KindCount{
		{Group: "", Kind: "ConfigMap", Count: 6},
		{Group: "apps", Kind: "Deployment", Count: 0},
		{Group: "example.com", Kind: "Widget", Count: 3},
	}
	if diff := cmp.Diff(wantObjects, objects); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	wantOwned := []OwnedCount{
		{Group: "", Kind: "ConfigMap", OwnerGroup: "", OwnerKind: "ConfigMap", Count: 3},
		{Group: "", Kind: "ConfigMap", OwnerGroup: "apps", OwnerKind: "Deployment", Count: 1},
		{Group: "", Kind: "ConfigMap", OwnerGroup: "example.com", OwnerKind: "Widget", Count: 1},
		{Group: "example.com", Kind: "Widget", OwnerGroup: "", OwnerKind: "ConfigMap", Count: 2},
	}
	if diff := cmp.Diff(wantOwned, owned); diff != "" {
		t.Errorf("owned (-want +got):\n%s", diff)
	}
}

func TestObjectCountsEmpty(t *testing.T) {
	objects, owned, err := openTemp(t).Objects().ObjectCounts(context.Background())
	if err != nil || len(objects) != 0 || len(owned) != 0 {
		t.Errorf("ObjectCounts on an empty mirror = %v, %v, %v; want nothing", objects, owned, err)
	}
}

// BenchmarkObjectCounts runs the metrics' query over 200,000 ConfigMaps,
// filled through the list path ingestion uses: half owners, half their
// dependents, every tenth dependent also owned by a Deployment.
func BenchmarkObjectCounts(b *testing.B) {
	ctx := context.Background()
	d, err := Open(ctx, filepath.Join(b.TempDir(), "kubegcd.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	const n = 200000
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		b.Fatal(err)
	}
	var page []*Object
	for i := range n {
		o := &Object{UID: fmt.Sprint("uid-", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: fmt.Sprint("ns-", i%10),
			Name: fmt.Sprint("cm-", i), ResourceVersion: "1"}
		if i%2 == 1 {
			o.OwnerReferences = []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprint("cm-", i-1), UID: fmt.Sprint("uid-", i-1)}}
			if i%20 == 1 {
				o.OwnerReferences = append(o.OwnerReferences, api.OwnerRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web"})
			}
		}
		if page = append(page, o); len(page) == 500 {
			if err := d.Mirror().WriteListPage(ctx, rid, epoch, page); err != nil {
				b.Fatal(err)
			}
			page = page[:0]
		}
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		b.Fatal(err)
	}
	want := []OwnedCount{
		{Kind: "ConfigMap", OwnerKind: "ConfigMap", Count: n / 2},
		{Kind: "ConfigMap", OwnerGroup: "apps", OwnerKind: "Deployment", Count: n / 20},
	}
	b.ResetTimer()
	for b.Loop() {
		objects, owned, err := d.Objects().ObjectCounts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(objects) != 1 || objects[0].Count != n || !cmp.Equal(owned, want) {
			b.Fatalf("counts %v %v, want %d ConfigMaps and %v", objects, owned, n, want)
		}
	}
}
