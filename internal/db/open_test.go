package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/dbfault"
)

// fillDB writes n ConfigMaps into d, so that the file has pages to damage.
func fillDB(t *testing.T, d *DB, n int) int64 {
	t.Helper()
	ctx := context.Background()
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]*Object, n)
	for i := range objs {
		objs[i] = &Object{UID: fmt.Sprintf("uid-%05d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns",
			Name: fmt.Sprintf("cm-%05d", i), ResourceVersion: "1"}
	}
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, objs); err != nil {
		t.Fatal(err)
	}
	return rid
}

func TestOpenRefusesCorruptFile(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
		want   string
	}{
		{"pages after a valid header", func(t *testing.T, path string) { dbfault.Garble(t, path, 4096, 12288) }, "PRAGMA quick_check: "},
		{"not a database at all", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(strings.Repeat("this is no SQLite file. ", 400)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "file is not a database"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k.db")
			d, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fillDB(t, d, 2000)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, path)

			prefix := "database " + path + " is corrupt ("
			suffix := "); restore it from a backup or move it away to start afresh"
			_, err = Open(ctx, path, Options{})
			if err == nil {
				t.Fatal("Open of a corrupt database succeeded")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) ||
				!strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("Open: %q, want one line %q…%q…%q", msg, prefix, tc.want, suffix)
			}
			if !errors.Is(err, ErrCorrupt) { // kubegcd run exits 3 on it
				t.Errorf("Open: %v is not ErrCorrupt", err)
			}
			if _, _, err := Migrate(ctx, path, "up"); err == nil || !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("Migrate up: %v, want %q…", err, prefix)
			}
		})
	}
}

// writers counts the goroutines running a DB's writer.
func writers() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "db.(*core).runWriter(")
}

func TestRefusedOpenLeavesNoWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.db")
	first, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	before := writers()
	for range 3 {
		if _, err := Open(ctx, path, Options{}); err == nil {
			t.Fatal("second Open of a locked database succeeded")
		}
	}
	if after := writers(); after != before {
		t.Fatalf("writer goroutines: %d before three refused Opens, %d after", before, after)
	}
}

func TestOpenNamesExactlyThatFile(t *testing.T) {
	ctx := context.Background()
	// Not the subtests' own temporary directories: their names hold the
	// characters under test.
	base := t.TempDir()
	for i, name := range []string{"k#1.db", "a?b.db", "50%.db", "sp ace&x=y.db"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(base, strconv.Itoa(i))
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			d, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			fillDB(t, d, 10)
			if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrLocked) {
				t.Errorf("second Open of %s: %v, want ErrLocked", name, err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if want := []string{name, name + ".lock"}; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("files in the directory: %q, want %q", got, want)
			}
			// The file named is the database, with its rows.
			conn, err := sql.Open("sqlite", dsn(path, true, true))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var n int
			if err := conn.QueryRow(`SELECT count(*) FROM objects`).Scan(&n); err != nil || n != 10 {
				t.Errorf("objects in %s: %d, %v; want 10", name, n, err)
			}
			if v, _, err := Migrate(ctx, path, "version"); err != nil || v != LatestVersion() {
				t.Errorf("Migrate version of %s: %d, %v; want %d", name, v, err, LatestVersion())
			}
		})
	}
}

// TestReadOnlyOpen: the HTTP API's view of the database reads what the
// daemon's writes, with a pool of the size asked, takes no lock and has no
// writer: a write through it fails at once instead of reaching the file.
func TestReadOnlyOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kubegcd.db")
	rw, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	ro, err := Open(ctx, path, Options{ReadOnly: true, ReadConns: 3})
	if err != nil {
		t.Fatalf("read-only open beside the daemon's: %v", err)
	}
	defer ro.Close()
	if got := ro.read.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("read pool of %d connections, want 3", got)
	}
	if ro.write != nil || ro.lock != nil {
		t.Error("a read-only open holds a writer or the lock")
	}
	if _, err := rw.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	res, err := ro.Mirror().Resources(ctx)
	if err != nil || len(res) != 1 {
		t.Fatalf("read-only view reads %v, %v; want the one resource written", res, err)
	}
	if _, err := ro.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "secrets", Kind: "Secret", Namespaced: true}); err == nil {
		t.Error("a write through the read-only view succeeded")
	}
}

// TestOnlyMappedPoolsMapTheFile: the controllers' reads (the default) read
// pages into memory of their own, bounded; a pool opened with MapReads (the
// HTTP API's) maps the file.
func TestOnlyMappedPoolsMapTheFile(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	api, err := Open(ctx, d.Path, Options{ReadOnly: true, MapReads: true})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	for _, c := range []struct {
		name string
		d    *DB
		want int64
	}{{"the controllers' reads", d, 0}, {"the API's reads", api, 1 << 30}} {
		var size int64
		if err := c.d.read.QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&size); err != nil {
			t.Fatal(err)
		}
		if size != c.want {
			t.Errorf("%s: mmap_size %d, want %d", c.name, size, c.want)
		}
	}
}
