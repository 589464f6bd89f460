package ownergc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/promutil"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// candidateStore is a Store whose only answer is its candidates.
type candidateStore struct {
	Store
	uids []string
}

func (s candidateStore) OwnerGCCandidates(context.Context) ([]string, error) { return s.uids, nil }

// TestFullPassLeavesRoomForChanges: a full pass keeps at most
// resyncBacklog of its candidates in the queue, topping it up as workers
// finish items, so that an item a change queues in the middle of the pass
// is taken after those few, not after every candidate.
func TestFullPassLeavesRoomForChanges(t *testing.T) {
	const workers, candidates = 2, 1000
	backlog := resyncBacklog(workers)
	var uids []string
	for i := range candidates {
		uids = append(uids, fmt.Sprintf("candidate-%04d", i))
	}
	m := newMetrics(promutil.With(prometheus.NewRegistry(), string(api.ControllerOwnerGC)))
	c := &Controller{opts: Options{DB: candidateStore{uids: uids}, Workers: workers}, metrics: m,
		drained: make(chan struct{}, 1), queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]())}
	defer c.queue.ShutDown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); c.fullPass(ctx) }()

	deadline := time.Now().Add(10 * time.Second)
	for c.queue.Len() < backlog {
		if time.Now().After(deadline) {
			t.Fatalf("the pass queued %d items, want %d", c.queue.Len(), backlog)
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the pass queued every candidate at once")
	default:
	}
	c.queue.Add(item{uid: "changed"})
	// A worker: take each item, and say so as processNext does.
	taken, at, most := 0, -1, 0
	for taken < candidates+1 {
		most = max(most, c.queue.Len())
		it, _ := c.queue.Get()
		c.queue.Done(it)
		reconcile.Wake(c.drained)
		if it.uid == "changed" {
			at = taken
		}
		taken++
	}
	if at < 0 || at > backlog {
		t.Errorf("the changed item was taken %dth, want within the first %d", at+1, backlog+1)
	}
	if most > backlog+1 {
		t.Errorf("%d items waited at once, want at most %d (the pass's and the change's)", most, backlog+1)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pass did not end once every candidate was queued")
	}
}
