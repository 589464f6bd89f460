package db

import (
	"context"
	"fmt"
	"time"
)

// WriterAlive reports whether the writer goroutine, through which every
// write goes, is turning. The writer answers between two transactions. So a
// writer stuck in one call does not answer, while one whose writes fail
// does: a full disk, or another process holding the lock until the busy
// timeout. WriterAlive waits until ctx ends.
func (d *DB) WriterAlive(ctx context.Context) error {
	start := time.Now()
	select {
	case d.probes <- struct{}{}:
		return nil
	case <-d.writerDone:
		return fmt.Errorf("database writer: %w", errClosed)
	case <-ctx.Done():
		return fmt.Errorf("database writer: no answer within %s", time.Since(start).Round(time.Millisecond))
	}
}
