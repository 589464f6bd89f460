package diagnose

import (
	"context"
	"fmt"
	"testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// BenchmarkCascadePreview previews the deletion of a root with 10,000
// transitive dependents (100 owners of 99 dependents each) in a mirror of
// 200,000 objects, written through ingest's list path: the SQL walk and
// the analysis, as GET /objects/{uid}/cascade runs them.
func BenchmarkCascadePreview(b *testing.B) {
	ctx := context.Background()
	d := dbtest.Open(b)
	rid, err := d.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		b.Fatal(err)
	}
	var page []*db.Object
	write := func(o *db.Object) {
		page = append(page, o)
		if len(page) == 500 {
			if err := d.Mirror().WriteListPage(ctx, rid, epoch, page); err != nil {
				b.Fatal(err)
			}
			page = nil
		}
	}
	cm := func(name string, owner string) *db.Object {
		o := &db.Object{UID: "u-" + name, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name, ResourceVersion: "1"}
		if owner != "" {
			o.OwnerReferences = []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: "u-" + owner}}
		}
		return o
	}
	write(cm("root", ""))
	for i := range 100 {
		mid := fmt.Sprintf("mid-%03d", i)
		write(cm(mid, "root"))
		for j := range 99 {
			write(cm(fmt.Sprintf("leaf-%03d-%02d", i, j), mid))
		}
	}
	// The rest of the cluster: owners with one dependent each.
	for i := range 94999 {
		owner := fmt.Sprintf("other-%06d", i)
		write(cm(owner, ""))
		write(cm(owner+"-dep", owner))
	}
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, page); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		b.Fatal(err)
	}

	// The machine is shared: CPU time per preview says more than the
	// wall clock when others load it.
	cpu0 := cpuTime(b)
	for b.Loop() {
		f, err := d.Objects().Cascade(ctx, "u-root", 10000)
		if err != nil {
			b.Fatal(err)
		}
		c := PreviewCascade(f, gcrules.PropagationBackground)
		if c.Total != 10000 || c.Truncated {
			b.Fatalf("previewed %d objects (truncated %v), want 10000", c.Total, c.Truncated)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
}
