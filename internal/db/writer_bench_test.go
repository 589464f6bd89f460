package db

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkIngestConcurrentLists: the first lists of eight resources at
// once, as at a start against a big cluster: the writer groups their pages
// into shared transactions.
func BenchmarkIngestConcurrentLists(b *testing.B) {
	const resources = 8
	objs := make([][]*Object, resources)
	for r := range objs {
		objs[r] = benchObjectsOf(1, rsOf)
		for i, o := range objs[r] {
			c := *o
			c.UID = fmt.Sprintf("uid-%d-%05d", r, i)
			objs[r][i] = &c
		}
	}
	var cpu cpuMeter
	for range b.N {
		b.StopTimer()
		d, _ := benchDB(b)
		rids := make([]int64, resources)
		for r := range rids {
			var err error
			rids[r], err = d.Mirror().EnsureResource(context.Background(), Resource{Version: "v1", Resource: fmt.Sprintf("r%d", r), Kind: fmt.Sprintf("K%d", r), Namespaced: true})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		cpu.start()
		var wg sync.WaitGroup
		for r := range resources {
			wg.Add(1)
			go func() { defer wg.Done(); benchList(b, d, rids[r], objs[r]) }()
		}
		wg.Wait()
		cpu.stop()
	}
	b.ReportMetric(float64(resources*benchObjects*b.N)/b.Elapsed().Seconds(), "objects/s")
	b.ReportMetric(float64(cpu.total.Nanoseconds())/float64(resources*benchObjects*b.N), "cpu-ns/object")
}
