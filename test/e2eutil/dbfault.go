package e2eutil

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" driver, as any other SQLite client of the file
)

// HoldWriteLock takes the write lock of the SQLite database at path from
// outside the daemon, as another client of the file can (a sqlite3 shell,
// a backup tool): the daemon's writes wait for it, then fail with
// SQLITE_BUSY once their busy timeout runs out. It returns the function that
// releases the lock; the test's end releases it too.
func HoldWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	ctx := context.Background()
	pool, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		conn.Close()
		pool.Close()
		t.Fatalf("taking the write lock of %s: %v", path, err)
	}
	release = sync.OnceFunc(func() {
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Errorf("releasing the write lock of %s: %v", path, err)
		}
		conn.Close()
		pool.Close()
	})
	t.Cleanup(release)
	return release
}
