package db

import (
	"context"
	"fmt"
	"testing"
)

// The ingest write path with the cost of history in it, over 10,000
// ConfigMaps that each have an owner, at the batch sizes ingestion uses
// (list pages of 500, watch batches of up to 1,000). Compare objects/s with
// the same benchmarks on a kubegcd without history.

const benchObjects = 10000

func benchObjectsOf(rv int, owner func(i int) string) []*Object {
	objs := make([]*Object, benchObjects)
	for i := range objs {
		objs[i] = &Object{UID: fmt.Sprintf("uid-%05d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench",
			Name: fmt.Sprintf("cm-%05d", i), ResourceVersion: fmt.Sprint(rv),
			OwnerReferences: []OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner(i), UID: owner(i),
				Controller: boolp(true), BlockOwnerDeletion: boolp(true)}}}
	}
	return objs
}

func benchList(b *testing.B, d *DB, rid int64, objs []*Object) {
	b.Helper()
	ctx := context.Background()
	epoch, err := d.BeginList(ctx, rid)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(objs); i += 500 {
		if err := d.WriteListPage(ctx, rid, epoch, objs[i:min(i+500, len(objs))]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := d.FinishList(ctx, rid, epoch, "1"); err != nil {
		b.Fatal(err)
	}
}

func benchEvents(b *testing.B, d *DB, rid int64, objs []*Object) {
	b.Helper()
	for i := 0; i < len(objs); i += 1000 {
		if _, err := d.ApplyEvents(context.Background(), eventsOf(rid, objs[i:min(i+1000, len(objs))]...)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDB(b *testing.B) (*DB, int64) {
	b.Helper()
	d, err := Open(context.Background(), b.TempDir()+"/bench.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	rid, err := d.EnsureResource(context.Background(), Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	return d, rid
}

func reportObjects(b *testing.B) {
	b.ReportMetric(float64(benchObjects*b.N)/b.Elapsed().Seconds(), "objects/s")
}

func rsOf(i int) string            { return fmt.Sprintf("rs-%d", i/10) }
func otherRSOf(i int) string       { return fmt.Sprintf("rs2-%d", i/10) }
func benchVersion(i int) []*Object { return benchObjectsOf(i, rsOf) }

// BenchmarkIngestFirstList: the first list of a fresh database, where every
// object is new (and, with history, gets its "created" row).
func BenchmarkIngestFirstList(b *testing.B) {
	objs := benchVersion(1)
	for range b.N {
		b.StopTimer()
		d, rid := benchDB(b)
		b.StartTimer()
		benchList(b, d, rid, objs)
	}
	reportObjects(b)
}

// BenchmarkIngestRelistUnchanged: a relist where nothing changed, the
// common case: one UPDATE of the epoch per object, no history.
func BenchmarkIngestRelistUnchanged(b *testing.B) {
	d, rid := benchDB(b)
	objs := benchVersion(1)
	benchList(b, d, rid, objs)
	b.ResetTimer()
	for range b.N {
		benchList(b, d, rid, objs)
	}
	reportObjects(b)
}

// BenchmarkIngestWatchUpdates: watch updates that change the
// resourceVersion but no ownership fact (a label, a status): with history,
// one indexed read each and no write.
func BenchmarkIngestWatchUpdates(b *testing.B) {
	d, rid := benchDB(b)
	benchList(b, d, rid, benchVersion(1))
	versions := [2][]*Object{benchVersion(2), benchVersion(3)}
	b.ResetTimer()
	for i := range b.N {
		benchEvents(b, d, rid, versions[i%2])
	}
	reportObjects(b)
}

// BenchmarkIngestWatchOwnerChanges: watch updates that each change the
// object's owner: with history, a row and an owner pair each.
func BenchmarkIngestWatchOwnerChanges(b *testing.B) {
	d, rid := benchDB(b)
	benchList(b, d, rid, benchVersion(1))
	versions := [2][]*Object{benchObjectsOf(2, otherRSOf), benchObjectsOf(3, rsOf)}
	b.ResetTimer()
	for i := range b.N {
		benchEvents(b, d, rid, versions[i%2])
	}
	reportObjects(b)
}
