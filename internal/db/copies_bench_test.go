package db

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// benchCopyBody is a ConfigMap of about 1.2 KB of JSON.
var benchCopyBody = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"bench",` +
	`"uid":"0e9c6a2e-1d7e-4f0e-9d1a-2b9f6c1e7a11","resourceVersion":"123456","labels":{"app":"web"},` +
	`"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1"}]},` +
	`"data":{"config.yaml":"` + strings.Repeat("key: value\\n", 80) + `"}}`)

// BenchmarkCompressCopy is the CPU a copy's compression costs.
func BenchmarkCompressCopy(b *testing.B) {
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(compress(benchCopyBody))
	}
	b.ReportMetric(float64(n), "stored-bytes/op")
}

// BenchmarkPutDeletedCopiesAtOnce is PutDeletedCopy from 64 goroutines, as
// the controllers' workers send deletes: the writer commits them in groups.
func BenchmarkPutDeletedCopiesAtOnce(b *testing.B) {
	d := openTemp(&testing.T{})
	defer d.Close()
	c := d.Copies()
	var n atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			dc := &DeletedCopy{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench",
				Name: fmt.Sprintf("cm-%d", i), UID: fmt.Sprintf("u-%d", i)}, Resource: "configmaps",
				Controller: api.ControllerRules, TakenAt: time.Now(), Object: benchCopyBody}
			if err := c.PutDeletedCopy(context.Background(), dc); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutDeletedCopy is the copies' own cost per delete: compressing
// a ConfigMap of about 1 KB of JSON and writing it, each write its own
// transaction as the applier's are. It reports the compressed bytes.
func BenchmarkPutDeletedCopy(b *testing.B) {
	d := openTemp(&testing.T{})
	defer d.Close()
	c := d.Copies()
	ctx := context.Background()
	body := benchCopyBody
	var size int64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dc := &DeletedCopy{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "bench",
			Name: fmt.Sprintf("cm-%d", i), UID: fmt.Sprintf("u-%d", i)}, Resource: "configmaps",
			Controller: api.ControllerRules, RuleID: "r", RuleHash: "h", TakenAt: time.Now(), Object: body}
		if err := c.PutDeletedCopy(ctx, dc); err != nil {
			b.Fatal(err)
		}
		size = dc.Size
	}
	b.ReportMetric(float64(len(body)), "json-bytes/op")
	b.ReportMetric(float64(size), "stored-bytes/op")
}
