package leader

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// The lock remembers the last other holder it read, even once this
// instance holds the Lease or the Lease was released: a new leader
// fetches that instance's audit rows before its first write.
func TestPreviousHolder(t *testing.T) {
	ctx := context.Background()
	m := &memoryLock{identity: "new_1"}
	e := New(Config{Enabled: true}, "new_1")
	f := newFencedLock(m, 15*time.Second, time.Now)
	e.fence.Store(f)
	if got := e.PreviousHolder(); got != "" {
		t.Errorf("before any read: %q, want none", got)
	}
	for _, holder := range []string{"old_1", "", "new_1"} {
		m.rec = &resourcelock.LeaderElectionRecord{HolderIdentity: holder}
		if _, _, err := f.Get(ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.PreviousHolder(); got != "old_1" {
			t.Errorf("after reading holder %q: previous holder %q, want old_1", holder, got)
		}
	}
}
