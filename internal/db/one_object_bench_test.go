package db

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// BenchmarkExplainReads times the three lookups /objects/{uid} adds, at
// 200,000 mirrored objects: 20,000 owners with 9 dependents each, of which
// one dependent per owner dangles and is being deleted, held by a
// finalizer, with 30 history rows.
func BenchmarkExplainReads(b *testing.B) {
	ctx := context.Background()
	d, rid := benchDB(b)
	deleting := time.Now().Add(-time.Hour)
	var objs []*Object
	for i := range 20000 {
		owner := fmt.Sprintf("owner-%05d", i)
		objs = append(objs, &Object{UID: owner, APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench", Name: owner, ResourceVersion: "1"})
		for j := range 9 {
			o := &Object{UID: fmt.Sprintf("dep-%05d-%d", i, j), APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench",
				Name: fmt.Sprintf("dep-%05d-%d", i, j), ResourceVersion: "1",
				OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: owner}}}
			if j == 0 {
				o.OwnerReferences[0].UID = "gone-" + owner
				o.DeletionTimestamp, o.Finalizers = &deleting, []string{"example.com/hold"}
			}
			objs = append(objs, o)
		}
	}
	for i := 0; i < len(objs); i += 1000 {
		if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(rid, objs[i:min(i+1000, len(objs))]...)); err != nil {
			b.Fatal(err)
		}
	}
	// 29 owner changes of the object explained: its history outgrows the
	// 20 rows shown.
	x := *objs[12345*10+1]
	for k := range 29 {
		x.ResourceVersion = fmt.Sprint(k + 2)
		x.OwnerReferences = []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: fmt.Sprintf("gone-%d", k)}}
		x.DeletionTimestamp, x.Finalizers = &deleting, []string{"example.com/hold"}
		if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(rid, &x)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.Run("Stuck/one-uid", func(b *testing.B) {
		for range b.N {
			if s, err := d.Objects().Stuck(ctx, StuckFilter{UID: x.UID, Limit: 1}); err != nil || len(s.Objects) != 1 {
				b.Fatal(s, err)
			}
		}
	})
	b.Run("LintRefsOf", func(b *testing.B) {
		for range b.N {
			n := 0
			if err := d.Objects().LintRefsOf(ctx, x.UID, func(*LintRef) error { n++; return nil }); err != nil || n != 1 {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("RecentHistoryOf", func(b *testing.B) {
		for range b.N {
			if h, more, err := d.History().RecentHistoryOf(ctx, x.UID, 20); err != nil || len(h) != 20 || !more {
				b.Fatal(len(h), more, err)
			}
		}
	})
}
