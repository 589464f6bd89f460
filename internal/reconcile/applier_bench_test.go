package reconcile

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// BenchmarkApplyParallel measures what recording costs a write: 64
// workers, as --gc-workers would run, each applying decisions whose write
// does nothing, on a real database. Compare it across changes to the
// applier's records (ns/op is per write).
func BenchmarkApplyParallel(b *testing.B) {
	ctx := context.Background()
	store := dbtest.Open(b)
	a, err := NewApplier(ApplierOptions{DB: store.Ledger(), Instance: "bench", Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	const workers = 64
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := a.Apply(ctx, decision(fmt.Sprint(i)), ok); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

// BenchmarkApplyDiskWrites measures the bytes recording writes to disk per
// write (wchar, the WAL and checkpoints) as a collection of 20,000
// dependents with random UIDs runs: 32 workers, each write taking 25 ms at
// the API server. The intent of each write is committed before it, its
// audit row after. It also reports the writer's commits per write and
// writes per commit.
func BenchmarkApplyDiskWrites(b *testing.B) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	store := dbtest.Open(b, db.Options{Registerer: reg})
	a, err := NewApplier(ApplierOptions{DB: store.Ledger(), Instance: "bench", Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	const workers, writes = 32, 20000
	send := func(context.Context) error { time.Sleep(25 * time.Millisecond); return nil }
	var written int64
	for range b.N {
		var next atomic.Int64
		from := testutil.WrittenBytes(b)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for i := next.Add(1); i <= writes; i = next.Add(1) {
					if _, err := a.Apply(ctx, decision(testutil.RandomUID()), send); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		written += testutil.WrittenBytes(b) - from
	}
	b.ReportMetric(float64(written)/1024/float64(writes*b.N), "KB/write")
	fams, _ := reg.Gather()
	for _, f := range fams {
		if f.GetName() == "kubegcd_db_writes_per_commit" {
			h := f.GetMetric()[0].GetHistogram()
			b.ReportMetric(float64(h.GetSampleCount())/float64(writes*b.N), "commits/write")
			b.ReportMetric(float64(h.GetSampleSum())/float64(h.GetSampleCount()), "writes/commit")
		}
	}
}
