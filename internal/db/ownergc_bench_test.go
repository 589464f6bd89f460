package db

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// The database's part of collecting the dependents of one deleted owner, at
// the size of the ownership-GC benchmark (hack/bench --run ownergc): the
// owner's deletion from the mirror (its commit is what wakes the
// collector), the read of its dependents (time to the first and to the
// last), and each dependent's cost once deleted: its intent, its audit row,
// and its deletion from the mirror, in the batches the writer forms.

const gcBenchDependents = 50000

func gcBenchDB(b *testing.B) (*DB, int64, []*Object) {
	b.Helper()
	d, rid := benchDB(b)
	ctx := context.Background()
	owner := &Object{UID: "owner", APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench", Name: "owner", ResourceVersion: "1"}
	deps := make([]*Object, gcBenchDependents)
	for i := range deps {
		deps[i] = &Object{UID: fmt.Sprintf("dep-%06d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench",
			Name: fmt.Sprintf("dep-%06d", i), ResourceVersion: "2",
			OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner"}}}
	}
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		b.Fatal(err)
	}
	all := append([]*Object{owner}, deps...)
	for i := 0; i < len(all); i += 500 {
		if err := d.Mirror().WriteListPage(ctx, rid, epoch, all[i:min(i+500, len(all))]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		b.Fatal(err)
	}
	return d, rid, deps
}

// BenchmarkOwnerGone: the watch's deletion of the owner, committed; then
// the collector's read of the dependents.
func BenchmarkOwnerGone(b *testing.B) {
	ctx := context.Background()
	var commit, first, all time.Duration
	for b.Loop() {
		b.StopTimer()
		d, rid, _ := gcBenchDB(b)
		b.StartTimer()
		t0 := time.Now()
		if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Deleted: true, Object: &Object{UID: "owner"}}}); err != nil {
			b.Fatal(err)
		}
		commit += time.Since(t0)
		t0 = time.Now()
		n := 0
		if err := d.Objects().DependentObjects(ctx, "owner", func(*Object) error {
			if n++; n == 1 {
				first += time.Since(t0)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		all += time.Since(t0)
		if n != gcBenchDependents {
			b.Fatalf("read %d dependents, want %d", n, gcBenchDependents)
		}
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(commit.Milliseconds())/float64(b.N), "owner-delete-ms")
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first-dependent-ms")
	b.ReportMetric(float64(all.Milliseconds())/float64(b.N), "all-dependents-ms")
}

// BenchmarkDependentGone: per dependent, what the database does for its
// deletion by the collector — the intent (one per worker, group-committed),
// the audit row that resolves it, and the watch's deletion of the mirror
// row — measured in process CPU per dependent, 20 workers at a time.
func BenchmarkDependentGone(b *testing.B) {
	ctx := context.Background()
	const workers = 20
	var cpu cpuMeter
	for b.Loop() {
		b.StopTimer()
		d, rid, deps := gcBenchDB(b)
		if _, err := d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Deleted: true, Object: &Object{UID: "owner"}}}); err != nil {
			b.Fatal(err)
		}
		work := make(chan *Object)
		gone := make(chan *Object, len(deps))
		errs := make(chan error, workers+1)
		b.StartTimer()
		cpu.start()
		for range workers {
			go func() {
				for o := range work {
					e := AuditEntry{Instance: "bench", Controller: "ownergc", Rule: "BR-21-01", Action: "delete", Target: TargetOf(o),
						Reason: "all owners are gone", Facts: []byte(`[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"owner","state":"dangling","via":"absent-cache"}]`)}
					in := &Intent{Entry: e, ResourceVersion: o.ResourceVersion}
					if err := d.Ledger().InsertIntent(ctx, in); err != nil {
						errs <- err
						return
					}
					row := in.Entry
					row.Outcome = api.OutcomeApplied
					writeApplied(d, nil, &row)
					gone <- o
				}
				errs <- nil
			}()
		}
		watchDone := make(chan error, 1)
		go func() {
			// The watch: the deletions as they come, in batches of what is waiting.
			n := 0
			for n < len(deps) {
				batch := []Event{{ResourceID: rid, Deleted: true, Object: <-gone}}
			more:
				for len(batch) < 1000 {
					select {
					case o := <-gone:
						batch = append(batch, Event{ResourceID: rid, Deleted: true, Object: o})
					default:
						break more
					}
				}
				if _, err := d.Mirror().ApplyEvents(ctx, batch); err != nil {
					watchDone <- err
					return
				}
				n += len(batch)
			}
			watchDone <- nil
		}()
		for _, o := range deps {
			work <- o
		}
		close(work)
		for range workers {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		if err := <-watchDone; err != nil {
			b.Fatal(err)
		}
		d.Close() // commits the audit rows still queued
		cpu.stop()
		b.StopTimer()
		b.StartTimer()
	}
	n := float64(gcBenchDependents * b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "dependents/s")
	b.ReportMetric(float64(cpu.total.Nanoseconds())/n, "cpu-ns/dependent")
}

// BenchmarkLeafGone: what the collector reads when a dependent it deleted
// leaves the mirror: its own dependents (it has none).
func BenchmarkLeafGone(b *testing.B) {
	ctx := context.Background()
	d, _, deps := gcBenchDB(b)
	i := 0
	for b.Loop() {
		if err := d.Objects().DependentObjects(ctx, deps[i%len(deps)].UID, func(*Object) error {
			b.Fatal("a leaf has no dependents")
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
