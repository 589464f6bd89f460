package reconcile

import (
	"context"
	"time"
)

// WaitSynced waits until synced (the mirror is complete) and reports
// whether it is; false means ctx ended first. No controller decides before.
func WaitSynced(ctx context.Context, synced func() bool) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !synced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// Wake signals a controller's wake-up channel (buffered, of one) without
// blocking: a wake-up already pending covers this one.
func Wake(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
