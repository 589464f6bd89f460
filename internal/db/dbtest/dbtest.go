// Package dbtest opens kubegcd databases for tests.
package dbtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Open opens a new database in a temporary directory of tb, with opts when
// given, and closes it when tb ends. It fails tb when the database cannot
// be opened or closed.
func Open(tb testing.TB, opts ...db.Options) *db.DB {
	tb.Helper()
	var o db.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	d, err := db.Open(context.Background(), filepath.Join(tb.TempDir(), "kubegcd.db"), o)
	if err != nil {
		tb.Fatalf("opening a test database: %v", err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Errorf("closing the test database: %v", err)
		}
	})
	return d
}
