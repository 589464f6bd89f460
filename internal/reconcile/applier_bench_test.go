package reconcile

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db/dbtest"
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
