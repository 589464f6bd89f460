// Package dbfault brings the faults a SQLite database meets in production
// into tests, for real rather than mocked: a full filesystem and a write
// lock held by another process, set up the way any SQLite user would.
package dbfault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, as kubegcd uses
)

// FullDisk is a directory whose filesystem a test fills and frees: a small
// tmpfs mounted for the test when it runs as root, as CI does; otherwise a
// temporary directory where Fill caps file sizes with RLIMIT_FSIZE instead.
// That limit holds for the whole test process, so a test using it must not
// run beside others that write files.
type FullDisk struct {
	// Dir is where the database goes.
	Dir     string
	mounted bool
	filler  string
	limit   *syscall.Rlimit // the limit before Fill, without a tmpfs
}

// NewFullDisk mounts a tmpfs of size bytes (as root), unmounted when the
// test ends; do it before starting what uses Dir, so that it is stopped
// first.
func NewFullDisk(t testing.TB, size int64) *FullDisk {
	t.Helper()
	f := &FullDisk{Dir: t.TempDir()}
	if os.Geteuid() != 0 {
		return f
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", f.Dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v: %s", f.Dir, err, out)
	}
	f.mounted = true
	t.Cleanup(func() {
		if out, err := exec.Command("umount", f.Dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", f.Dir, err, out)
		}
	})
	return f
}

// Fill leaves the database at dbPath no room to grow. Its WAL is first
// checkpointed and truncated from an outside connection, so that the next
// commit needs new blocks (a WAL that is only rewound would be rewritten
// in place, and a full disk go unnoticed for a while), then the filesystem
// is filled with a filler file (or, without a tmpfs, file writes are
// capped).
func (f *FullDisk) Fill(t testing.TB, dbPath string) {
	t.Helper()
	TruncateWAL(t, dbPath)
	if !f.mounted {
		var old syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
		// Past the limit a write fails with EFBIG instead of killing the
		// process with SIGXFSZ.
		signal.Ignore(syscall.SIGXFSZ)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 0, Max: old.Max}); err != nil {
			t.Fatal(err)
		}
		f.limit = &old
		return
	}
	f.filler = filepath.Join(f.Dir, "filler")
	file, err := os.OpenFile(f.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	// Big writes first, then small ones for the last blocks.
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			if _, err := file.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}

// Free makes room again: the filler goes (or the limit is lifted).
func (f *FullDisk) Free(t testing.TB) {
	t.Helper()
	if f.limit != nil {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, f.limit); err != nil {
			t.Fatal(err)
		}
		f.limit = nil
		return
	}
	if err := os.Remove(f.filler); err != nil {
		t.Fatal(err)
	}
}

// open opens an outside connection to the database at path, as another
// process would, waiting up to 10 s for locks as kubegcd does.
func open(t testing.TB, path string) *sql.DB {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	conn.SetMaxOpenConns(1)
	return conn
}

// TruncateWAL checkpoints the database's WAL into it and truncates the WAL
// to nothing, retrying while a reader or writer is in the way.
func TruncateWAL(t testing.TB, path string) {
	t.Helper()
	conn := open(t, path)
	defer conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var busy, logFrames, checkpointed int
		err := conn.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed)
		if err == nil && busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpointing %s: busy %d, err %v", path, busy, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HoldWriteLock takes the database's write lock from an outside connection
// (BEGIN IMMEDIATE) and holds it until the returned function is called (or
// the test ends); meanwhile every writer waits out its busy timeout and
// fails.
func HoldWriteLock(t testing.TB, path string) (release func()) {
	t.Helper()
	db := open(t, path)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("taking the write lock of %s: %v", path, err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Errorf("releasing the write lock of %s: %v", path, err)
		}
		conn.Close()
		db.Close()
	}
	t.Cleanup(release)
	return release
}

// Garble overwrites the file at path from offset to its end (at most size
// bytes when size > 0) with garbage, as a bad disk or a stray write leaves
// a file; an offset past the header page keeps it a database.
func Garble(t testing.TB, path string, offset, size int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	end := st.Size()
	if size > 0 {
		end = min(end, offset+size)
	}
	if end <= offset {
		t.Fatalf("%s has %d bytes, nothing past %d to damage", path, st.Size(), offset)
	}
	junk := make([]byte, end-offset)
	for i := range junk {
		junk[i] = byte(i*131 + 7)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(junk, offset); err != nil {
		t.Fatal(err)
	}
}
