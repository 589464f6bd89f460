package auditpeers

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// BenchmarkPullRows reads 1,000 rows of a peer over its HTTP API into a
// second database: the cost of sharing one audit row, both sides in one
// process. It reports the answer's bytes, the requests and the CPU time
// (user and system, both sides, the test server included) per row.
func BenchmarkPullRows(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	peerDB := dbtest.Open(b)
	writeB(b, peerDB, n)
	srv := peerServerB(b, peerDB)
	b.ResetTimer()
	var bytes, requests float64
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		here := dbtest.Open(b)
		s := New(Config{Identity: "self_1", Static: []string{srv.URL}}, here.AuditPeers())
		if err := s.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0 := cpuTime()
		if caughtUp, err := s.pullPeer(ctx, srv.URL, 10*time.Second); err != nil || !caughtUp {
			b.Fatalf("pull: %v %v", caughtUp, err)
		}
		cpu += cpuTime() - cpu0
		bytes += counterValue(s.metrics.bytes)
		requests += counterValue(s.metrics.requests)
	}
	b.ReportMetric(bytes/float64(b.N*n), "bytes/row")
	b.ReportMetric(requests/float64(b.N*n), "requests/row")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/row")
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
