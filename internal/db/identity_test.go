package db

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileWatch: a database file deleted, moved away or replaced under an
// open DB is reported, with what became of it; writes, checkpoints and a
// file touched in place are not. A corruption found then is put down to
// the file gone.
func TestFileWatch(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		want   string // in the error; "" for none
	}{
		{"written and checkpointed", func(*testing.T, string) {}, ""},
		{"touched", func(t *testing.T, path string) {
			now := time.Now()
			if err := os.Chtimes(path, now, now); err != nil {
				t.Fatal(err)
			}
		}, ""},
		{"deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, "nothing is at its path now"},
		{"moved away", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
		}, "nothing is at its path now"},
		{"replaced", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "restored.db")
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}, "another file is at its path now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := openTemp(t)
			w, err := d.WatchFile()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Check(); err != nil {
				t.Fatalf("just opened: %v", err)
			}
			fillDB(t, d, 100)
			if _, err := d.write.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
				t.Fatal(err)
			}
			tt.change(t, d.Path)
			err = w.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.want != "" && (!errors.Is(err, ErrFileGone) || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), d.Path)):
				t.Errorf("Check: %v, want an ErrFileGone naming %s and saying %q", err, d.Path, tt.want)
			}
			// A corruption found meanwhile is the file's fate when it is
			// gone, and itself when it is not.
			cause := w.Cause(corruptError(d.Path, "a write: database disk image is malformed (11)"))
			if gone := tt.want != ""; errors.Is(cause, ErrFileGone) != gone || errors.Is(cause, ErrCorrupt) == gone {
				t.Errorf("Cause of a corruption: %v, want the file gone: %v", cause, gone)
			}
		})
	}
}

// TestFileWatchWatch: Watch returns the file's error within a period of
// its deletion, and nil when its context ends.
func TestFileWatchWatch(t *testing.T) {
	d := openTemp(t)
	w, err := d.WatchFile()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Watch(ctx, 10*time.Millisecond); err != nil {
		t.Errorf("Watch after its context ended: %v", err)
	}

	done := make(chan error, 1)
	go func() { done <- w.Watch(context.Background(), 10*time.Millisecond) }()
	if err := os.Remove(d.Path); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrFileGone) {
			t.Errorf("Watch: %v, want ErrFileGone", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not notice the deleted file within 10s")
	}
}

// TestReadConnectionCreatesNoFile: a read connection opened after the
// database file is gone fails, and leaves no empty database at the path.
func TestReadConnectionCreatesNoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone.db")
	conn, err := sql.Open("sqlite", dsn(path, true, false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Ping(); err == nil {
		t.Errorf("a read connection to a missing database opened")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read connection left a file at the path: %v", err)
	}
}
