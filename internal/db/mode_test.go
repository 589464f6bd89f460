package db

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The database holds the cluster's object names and owner edges: it, its
// WAL and its shared-memory index are readable by their owner only,
// whatever the process's umask.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	// Not parallel: the umask is the process's. 0 lets a mode the code
	// does not set show.
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })

	path := filepath.Join(t.TempDir(), "kubegcd.db")
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	fillDB(t, d, 10) // a write, so that the WAL and its index exist
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", filepath.Base(p), got)
		}
	}
}
