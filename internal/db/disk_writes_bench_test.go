package db

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// BenchmarkMirrorDiskWrites: the bytes written to mirror 20,000
// dependents of one owner, with random UIDs as the API server gives them:
// their first list, 5,000 objects a transaction as ingest writes it,
// then their deletion, seen by a watch at 1,000 deletions/s (ten batches
// of 100 a second, as the watcher flushes every 100 ms) in name order.
// Random UIDs spread each batch over the leaves of every index keyed by
// UID, and each leaf changed costs a whole page in the WAL and again at
// the next checkpoint.
func BenchmarkMirrorDiskWrites(b *testing.B) {
	const n, batch = 20000, 100
	owner := testutil.RandomUID()
	objs := make([]*Object, n)
	for i := range objs {
		objs[i] = &Object{UID: testutil.RandomUID(), APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench", Name: fmt.Sprintf("dep-%05d", i),
			ResourceVersion: fmt.Sprint(1000 + i), OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner",
				UID: owner, Controller: boolp(true), BlockOwnerDeletion: boolp(true)}}}
	}
	ctx := context.Background()
	var listed, deleted int64
	for range b.N {
		b.StopTimer()
		d, rid := benchDB(b)
		b.StartTimer()
		from := testutil.WrittenBytes(b)
		benchListBy(b, d, rid, objs, 5000)
		mid := testutil.WrittenBytes(b)
		tick := time.NewTicker(100 * time.Millisecond)
		for i := 0; i < n; i += batch {
			<-tick.C
			evs := make([]Event, 0, batch)
			for _, o := range objs[i:min(i+batch, n)] {
				evs = append(evs, Event{ResourceID: rid, Deleted: true, Object: o})
			}
			if _, err := d.Mirror().ApplyWatchEvents(ctx, rid, fmt.Sprint(2000+i), evs); err != nil {
				b.Fatal(err)
			}
		}
		tick.Stop()
		listed += mid - from
		deleted += testutil.WrittenBytes(b) - mid
	}
	b.ReportMetric(float64(listed)/1024/float64(n*b.N), "list-KB/object")
	b.ReportMetric(float64(deleted)/1024/float64(n*b.N), "delete-KB/object")
}
