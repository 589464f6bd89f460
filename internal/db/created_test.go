package db

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/testutil"
	"github.com/prometheus/client_golang/prometheus"
)

// TestOpenCreatesMissingDirectories: Open makes the directories missing
// above the database, readable by their owner only, and leaves those that
// were there as they were.
func TestOpenCreatesMissingDirectories(t *testing.T) {
	tests := []struct {
		name    string
		dbPath  string   // under the test's directory
		missing []string // the directories Open must make
	}{
		{name: "directory there", dbPath: "k.db"},
		{name: "one missing", dbPath: "a/k.db", missing: []string{"a"}},
		{name: "two missing", dbPath: "a/b/k.db", missing: []string{"a", "a/b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			d, err := Open(context.Background(), filepath.Join(dir, tc.dbPath), Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.missing {
				st, err := os.Stat(filepath.Join(dir, m))
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o700 {
					t.Errorf("%s: mode %v, want 0700", m, st.Mode().Perm())
				}
			}
			if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o755 {
				t.Errorf("the directory that was there: %v %v, want its mode 0755 kept", st.Mode().Perm(), err)
			}
		})
	}
}

// TestOpenNamesTheDirectoryItCannotMake: when a directory of the
// database's path cannot be made, Open says which one and why, in one
// line, and makes none of them.
func TestOpenNamesTheDirectoryItCannotMake(t *testing.T) {
	tests := []struct {
		name   string
		dbPath string // under the test's directory, where "file" is a file
		want   string // after the directory's path
	}{
		{name: "a file in the way", dbPath: "file/k.db", want: ": not a directory"},
		{name: "a file higher up", dbPath: "file/a/k.db", want: ": not a directory"},
		{name: "a file in a directory there", dbPath: "a/file/b/k.db", want: ": not a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "file")
			if strings.HasPrefix(tc.dbPath, "a/") {
				file = filepath.Join(dir, "a", "file")
				if err := os.Mkdir(filepath.Join(dir, "a"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			before := testutil.FilesIn(t, dir)
			_, err := Open(context.Background(), filepath.Join(dir, tc.dbPath), Options{})
			want := "database directory " + file + tc.want
			if err == nil || err.Error() != want {
				t.Fatalf("Open: %v, want %q", err, want)
			}
			if got := testutil.FilesIn(t, dir); !slices.Equal(got, before) {
				t.Errorf("after the refused Open, %q; want %q", got, before)
			}
		})
	}
}

// TestFailedOpenRemovesWhatItCreated: an Open that fails once it made the
// database leaves none of what it made: file, lock file, directories. One
// that fails on a database that was there keeps it.
func TestFailedOpenRemovesWhatItCreated(t *testing.T) {
	ctx := context.Background()
	// A registry that already holds the database's metrics refuses the
	// second Open's, which fails last, after everything is made.
	reg := prometheus.NewRegistry()
	first, err := Open(ctx, filepath.Join(t.TempDir(), "first.db"), Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	for _, dbPath := range []string{"k.db", "a/b/k.db"} {
		t.Run(dbPath, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Open(ctx, filepath.Join(dir, dbPath), Options{Registerer: reg})
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				t.Fatalf("Open: %v, want its metrics refused", err)
			}
			if got := testutil.FilesIn(t, dir); len(got) != 0 {
				t.Errorf("after the failed Open, %q; want nothing", got)
			}
		})
	}
	t.Run("existing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "k.db")
		d, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		fillDB(t, d, 1)
		d.Close()
		before := testutil.FilesIn(t, filepath.Dir(path))
		if _, err := Open(ctx, path, Options{Registerer: reg}); err == nil {
			t.Fatal("Open succeeded, want its metrics refused")
		}
		if got := testutil.FilesIn(t, filepath.Dir(path)); !slices.Equal(got, before) {
			t.Errorf("after the failed Open, %q; want %q", got, before)
		}
		checkFilled(t, path)
	})
}

// checkFilled checks that the database at path still holds what fillDB
// wrote.
func checkFilled(t *testing.T, path string) {
	t.Helper()
	d, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if o, err := d.Objects().GetObject(context.Background(), "uid-00000"); err != nil || o == nil {
		t.Errorf("the database lost its row: %v %v", o, err)
	}
}

// TestDiscardRemovesWhatOpenCreated: Discard removes the database file,
// its -wal and -shm, the lock file and the directories Open made, and
// nothing that was there before Open or was put there since.
func TestDiscardRemovesWhatOpenCreated(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		dbPath string                               // under the test's directory
		before func(t *testing.T, dir, path string) // what is there before Open
		during func(t *testing.T, dir string)       // what is put there while it is open
		want   []string                             // what stays after Discard
	}{
		{name: "new file", dbPath: "k.db"},
		{name: "new directories", dbPath: "a/b/k.db"},
		{name: "existing database", dbPath: "k.db",
			before: func(t *testing.T, _, path string) {
				d, err := Open(ctx, path, Options{})
				if err != nil {
					t.Fatal(err)
				}
				fillDB(t, d, 1)
				d.Close()
			},
			want: []string{"k.db", "k.db.lock"}},
		{name: "existing lock file", dbPath: "k.db",
			before: func(t *testing.T, _, path string) {
				if err := os.WriteFile(path+".lock", nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"k.db.lock"}},
		{name: "a new directory holds something else", dbPath: "a/b/k.db",
			during: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, "a", "other"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"a", "a/other"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.dbPath)
			if tc.before != nil {
				tc.before(t, dir, path)
			}
			d, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := d.Created(), tc.before == nil || tc.name == "existing lock file"; got != want {
				t.Errorf("Created: %v, want %v", got, want)
			}
			// Writes, for SQLite to keep a -wal and a -shm.
			fillDB(t, d, 10)
			if tc.during != nil {
				tc.during(t, dir)
			}
			if err := d.Discard(); err != nil {
				t.Fatalf("Discard: %v", err)
			}
			if got := testutil.FilesIn(t, dir); !slices.Equal(got, tc.want) {
				t.Errorf("after Discard, %q; want %q", got, tc.want)
			}
			if tc.name == "existing database" {
				checkFilled(t, path)
			}
		})
	}
}

// TestOpenRefusedByTheLockRemovesNothing: an Open refused because another
// holds the lock of a database it just created removes none of its files.
func TestOpenRefusedByTheLockRemovesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "k.db")
	holder, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	before := testutil.FilesIn(t, dir)
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if got := testutil.FilesIn(t, dir); !slices.Equal(got, before) {
		t.Errorf("after the refused Open, %q; want %q", got, before)
	}
}

// TestIsFileAt: a lock taken on a lock file that was removed, or removed
// and made again, is not the lock of the path.
func TestIsFileAt(t *testing.T) {
	tests := []struct {
		name  string
		after func(t *testing.T, path string) // once the file is open
		want  bool
	}{
		{name: "same file", after: func(*testing.T, string) {}, want: true},
		{name: "removed", after: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "made again", after: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k.db.lock")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tc.after(t, path)
			if got, err := isFileAt(f, path); err != nil || got != tc.want {
				t.Errorf("isFileAt: %v %v, want %v", got, err, tc.want)
			}
		})
	}
}
