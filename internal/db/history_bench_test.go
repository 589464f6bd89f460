package db

import (
	"context"
	"database/sql"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// The ingest write path with the cost of history in it, over 10,000
// ConfigMaps that each have an owner, at the batch sizes ingestion uses
// (list pages of 500, watch batches of up to 1,000). Compare objects/s, and
// the process CPU time per object (steadier than wall time on a busy
// machine), with the same benchmarks on a kubegcd without history.

const benchObjects = 10000

func benchObjectsOf(rv int, owner func(i int) string) []*Object {
	objs := make([]*Object, benchObjects)
	for i := range objs {
		objs[i] = &Object{UID: fmt.Sprintf("uid-%05d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench",
			Name: fmt.Sprintf("cm-%05d", i), ResourceVersion: fmt.Sprint(rv),
			OwnerReferences: []api.OwnerRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner(i), UID: owner(i),
				Controller: boolp(true), BlockOwnerDeletion: boolp(true)}}}
	}
	return objs
}

func benchList(b *testing.B, d *DB, rid int64, objs []*Object) {
	b.Helper()
	benchListBy(b, d, rid, objs, 500)
}

// benchListBy lists objs, per objects a transaction.
func benchListBy(b *testing.B, d *DB, rid int64, objs []*Object, per int) {
	b.Helper()
	ctx := context.Background()
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(objs); i += per {
		if err := d.Mirror().WriteListPage(ctx, rid, epoch, objs[i:min(i+per, len(objs))]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		b.Fatal(err)
	}
}

func benchEvents(b *testing.B, d *DB, rid int64, objs []*Object) {
	b.Helper()
	for i := 0; i < len(objs); i += 1000 {
		if _, err := d.Mirror().ApplyEvents(context.Background(), eventsOf(rid, objs[i:min(i+1000, len(objs))]...)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDB(b *testing.B) (*DB, int64) {
	b.Helper()
	return benchDBOf(b, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
}

// benchDBOf opens an empty database for a benchmark, with res in it.
func benchDBOf(b *testing.B, res Resource) (*DB, int64) {
	b.Helper()
	d, err := Open(context.Background(), b.TempDir()+"/bench.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	rid, err := d.Mirror().EnsureResource(context.Background(), res)
	if err != nil {
		b.Fatal(err)
	}
	return d, rid
}

// cpuMeter adds up the process's CPU time (user and system, every
// goroutine: SQLite runs in Go here) between start and stop.
type cpuMeter struct{ total, from time.Duration }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (m *cpuMeter) start() { m.from = cpuTime() }
func (m *cpuMeter) stop()  { m.total += cpuTime() - m.from }

func reportObjects(b *testing.B, cpu *cpuMeter) {
	n := float64(benchObjects * b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "objects/s")
	b.ReportMetric(float64(cpu.total.Nanoseconds())/n, "cpu-ns/object")
}

func rsOf(i int) string            { return fmt.Sprintf("rs-%d", i/10) }
func otherRSOf(i int) string       { return fmt.Sprintf("rs2-%d", i/10) }
func benchVersion(i int) []*Object { return benchObjectsOf(i, rsOf) }

// BenchmarkIngestFirstList: the first list of a fresh database, where every
// object is new (and, with history, gets its "created" row).
func BenchmarkIngestFirstList(b *testing.B) { benchFirstList(b, 500) }

// benchFirstList lists benchVersion(1) into a new database, per objects a
// transaction.
func benchFirstList(b *testing.B, per int) {
	objs := benchVersion(1)
	var cpu cpuMeter
	for range b.N {
		b.StopTimer()
		d, rid := benchDB(b)
		b.StartTimer()
		cpu.start()
		benchListBy(b, d, rid, objs, per)
		cpu.stop()
	}
	reportObjects(b, &cpu)
}

// BenchmarkIngestRelistUnchanged: a relist where nothing changed, the
// common case: one UPDATE of the epoch per object, no history.
func BenchmarkIngestRelistUnchanged(b *testing.B) {
	d, rid := benchDB(b)
	objs := benchVersion(1)
	benchList(b, d, rid, objs)
	b.ResetTimer()
	var cpu cpuMeter
	cpu.start()
	for range b.N {
		benchList(b, d, rid, objs)
	}
	cpu.stop()
	reportObjects(b, &cpu)
}

// BenchmarkIngestWatchUpdates: watch updates that change the
// resourceVersion but no ownership fact (a label, a status): with history,
// one indexed read each and no write.
func BenchmarkIngestWatchUpdates(b *testing.B) {
	d, rid := benchDB(b)
	benchList(b, d, rid, benchVersion(1))
	versions := [2][]*Object{benchVersion(2), benchVersion(3)}
	b.ResetTimer()
	var cpu cpuMeter
	cpu.start()
	for i := range b.N {
		benchEvents(b, d, rid, versions[i%2])
	}
	cpu.stop()
	reportObjects(b, &cpu)
}

// BenchmarkIngestWatchOwnerChanges: watch updates that each change the
// object's owner: with history, a row and an owner pair each.
func BenchmarkIngestWatchOwnerChanges(b *testing.B) {
	d, rid := benchDB(b)
	benchList(b, d, rid, benchVersion(1))
	versions := [2][]*Object{benchObjectsOf(2, otherRSOf), benchObjectsOf(3, rsOf)}
	b.ResetTimer()
	var cpu cpuMeter
	cpu.start()
	for i := range b.N {
		benchEvents(b, d, rid, versions[i%2])
	}
	cpu.stop()
	reportObjects(b, &cpu)
}

// BenchmarkHistoryReads reads history at 200,000 mirrored objects: 19,000
// owners with 9 dependents each, and one owner with 10,000 (whose /graph
// at a time walks all of them).
func BenchmarkHistoryReads(b *testing.B) {
	ctx := context.Background()
	d, rid := benchDB(b)
	var objs []*Object
	add := func(uid string, owner string) {
		o := &Object{UID: uid, APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench", Name: uid, ResourceVersion: "1"}
		if owner != "" {
			o.OwnerReferences = []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: owner}}
		}
		objs = append(objs, o)
	}
	for i := range 19000 {
		owner := fmt.Sprintf("owner-%05d", i)
		add(owner, "")
		for j := range 9 {
			add(fmt.Sprintf("dep-%05d-%d", i, j), owner)
		}
	}
	add("big", "")
	for j := range 9999 {
		add(fmt.Sprintf("big-dep-%04d", j), "big")
	}
	for i := 0; i < len(objs); i += 1000 {
		if _, err := d.Mirror().ApplyEvents(ctx, eventsOf(rid, objs[i:min(i+1000, len(objs))]...)); err != nil {
			b.Fatal(err)
		}
	}
	at := d.Now().Add(time.Hour)
	b.Run("HistoryOf", func(b *testing.B) {
		for range b.N {
			if h, err := d.History().HistoryOf(ctx, "dep-12345-3"); err != nil || len(h) != 1 {
				b.Fatal(h, err)
			}
		}
	})
	b.Run("HistoryAt/one-dependent", func(b *testing.B) {
		for range b.N {
			if s, err := d.History().HistoryAt(ctx, []string{"dep-12345-3"}, at, 10000); err != nil || len(s.States) != 2 {
				b.Fatal(s, err)
			}
		}
	})
	b.Run("HistoryAt/10000-dependents", func(b *testing.B) {
		for range b.N {
			if s, err := d.History().HistoryAt(ctx, []string{"big"}, at, 10000); err != nil || len(s.States) != 10000 {
				b.Fatal(len(s.States), err)
			}
		}
	})
}

// BenchmarkHistoryRecordUnchanged is the cost history adds to a write of an
// object whose ownership facts did not change (a watch update of a label or
// a status): the read of its last row, the comparison, no write.
func BenchmarkHistoryRecordUnchanged(b *testing.B) {
	ctx := context.Background()
	d, rid := benchDB(b)
	objs := benchVersion(1)
	benchList(b, d, rid, objs)
	var cpu cpuMeter
	b.ResetTimer()
	cpu.start()
	for range b.N {
		err := d.inWriteTx(ctx, writeOp{name: "bench"}, func(tx *sql.Tx) error {
			s, err := d.prepare(ctx, tx)
			if err != nil {
				return err
			}
			for _, o := range objs {
				refs := jsonOrNull(o.OwnerReferences)
				if _, changed, err := s.history.record(ctx, o, refs, ownersHash(refs), nil, true); err != nil || changed {
					return fmt.Errorf("record %s: changed %v, %v", o.UID, changed, err)
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	cpu.stop()
	reportObjects(b, &cpu)
}

// BenchmarkIngestLeaseRenewals: nodes' heartbeats, each a watch update of
// a Lease whose renewTime and resourceVersion alone changed, in batches of
// 200 (2,000 nodes renewing every 10 s, with the watch's 1 s linger).
func BenchmarkIngestLeaseRenewals(b *testing.B) {
	d, rid := benchDBOf(b, Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Namespaced: true})
	base := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	leases := func(rv int) []*Object {
		objs := make([]*Object, benchObjects)
		for i := range objs {
			renew := base.Add(time.Duration(rv) * 10 * time.Second)
			objs[i] = &Object{UID: fmt.Sprintf("lease-%05d", i), APIVersion: "coordination.k8s.io/v1", Kind: "Lease",
				Namespace: "kube-node-lease", Name: fmt.Sprintf("node-%05d", i), ResourceVersion: fmt.Sprint(rv),
				Lease: &Lease{HolderIdentity: new(fmt.Sprintf("node-%05d", i)), LeaseDurationSeconds: new(int32(40)), RenewTime: &renew}}
		}
		return objs
	}
	benchList(b, d, rid, leases(1))
	versions := [2][]*Object{leases(2), leases(3)}
	b.ResetTimer()
	var cpu cpuMeter
	cpu.start()
	for i := range b.N {
		objs := versions[i%2]
		for j := 0; j < len(objs); j += 200 {
			if _, err := d.Mirror().ApplyEvents(context.Background(), eventsOf(rid, objs[j:j+200]...)); err != nil {
				b.Fatal(err)
			}
		}
	}
	cpu.stop()
	reportObjects(b, &cpu)
}

// BenchmarkIngestFirstListBatched is BenchmarkIngestFirstList at the
// batch size a list writes (listBatch in internal/ingest: 5,000).
func BenchmarkIngestFirstListBatched(b *testing.B) { benchFirstList(b, 5000) }
