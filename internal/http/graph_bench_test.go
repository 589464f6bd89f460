package http

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// BenchmarkGraphWhole serves the whole ownership graph, JSON and DOT, over
// a mirror of KUBEGCD_BENCH_GRAPH_OBJECTS objects (default 200,000: owners
// with 1 to 9 dependents, 5 % of them dangling) written through
// ingestion's list path, with ?limit= all of them. Besides ns/op it reports
// the answer's size and the peak live heap while serving it, above the heap
// before (peak-heap-MB): the graph streams, so that stays flat however large
// the graph.
func BenchmarkGraphWhole(b *testing.B) {
	n := 200_000
	if v := os.Getenv("KUBEGCD_BENCH_GRAPH_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	store := benchStore(b)
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	epoch, err := store.Mirror().BeginList(ctx, rid)
	if err != nil {
		b.Fatal(err)
	}
	var page []*db.Object
	add := func(o *db.Object) {
		if page = append(page, o); len(page) == 500 {
			if err := store.Mirror().WriteListPage(ctx, rid, epoch, page); err != nil {
				b.Fatal(err)
			}
			page = page[:0]
		}
	}
	yes := true
	for i := 0; i < n; {
		ns := fmt.Sprint("ns-", i%300)
		owner := &db.Object{UID: fmt.Sprintf("u-%08d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: ns,
			Name: fmt.Sprint("owner-", i), ResourceVersion: "1"}
		add(owner)
		i++
		for j := range 1 + i%9 {
			ref := api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &yes}
			if i%20 == 0 {
				ref.UID += "-gone"
			}
			add(&db.Object{UID: fmt.Sprintf("u-%08d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: ns,
				Name: fmt.Sprintf("%s-dep-%d", owner.Name, j), ResourceVersion: "1", OwnerReferences: []api.OwnerRef{ref}})
			i++
		}
	}
	if len(page) > 0 {
		if err := store.Mirror().WriteListPage(ctx, rid, epoch, page); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := store.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		b.Fatal(err)
	}
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	for _, format := range []string{"json", "dot"} {
		path := fmt.Sprintf("/graph?format=%s&limit=%d", format, n+n/10)
		b.Run(format, func(b *testing.B) {
			var peak float64
			for b.Loop() {
				runtime.GC()
				base := liveHeap()
				var top atomic.Uint64
				done := make(chan struct{})
				go func() {
					t := time.NewTicker(5 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-done:
							return
						case <-t.C:
							if h := liveHeap(); h > top.Load() {
								top.Store(h)
							}
						}
					}
				}()
				w := &countingWriter{header: http.Header{}}
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
				close(done)
				if w.code != http.StatusOK {
					b.Fatalf("%s: %d", path, w.code)
				}
				b.ReportMetric(float64(w.n)/1e6, "MB/answer")
				if top.Load() > base {
					peak = max(peak, float64(top.Load()-base)/1e6)
				}
			}
			b.ReportMetric(peak, "peak-heap-MB")
		})
	}
}

// liveHeap is the heap's bytes in live and not yet swept objects.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
