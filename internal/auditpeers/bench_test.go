package auditpeers

import (
	"context"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// BenchmarkPullRows reads 1,000 rows of a peer over its HTTP API into a
// second database: the cost of sharing one audit row, both sides in one
// process. It reports the answer's bytes and the requests per row.
func BenchmarkPullRows(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	peerDB := dbtest.Open(b)
	writeB(b, peerDB, n)
	srv := peerServerB(b, peerDB)
	b.ResetTimer()
	var bytes, requests float64
	for range b.N {
		b.StopTimer()
		here := dbtest.Open(b)
		s := New(Config{Identity: "self_1", Static: []string{srv.URL}}, here.AuditPeers())
		if err := s.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if caughtUp, err := s.pullPeer(ctx, srv.URL, 10*time.Second); err != nil || !caughtUp {
			b.Fatalf("pull: %v %v", caughtUp, err)
		}
		bytes += counterValue(s.metrics.bytes)
		requests += counterValue(s.metrics.requests)
	}
	b.ReportMetric(bytes/float64(b.N*n), "bytes/row")
	b.ReportMetric(requests/float64(b.N*n), "requests/row")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
