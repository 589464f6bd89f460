package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

// TestDatabaseCheckAndBackup: while kubegcd runs on its database, `kubegcd
// db check` finds it sound and `kubegcd db backup` copies it (0600, the
// mirror inside, checked); a damaged copy checks as corrupt (exit 3, as
// run exits); a backup never overwrites a file, and a check never creates
// a missing database.
func TestDatabaseCheckAndBackup(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kubegcd.db")
	d := daemons.Start(t, path)
	d.WaitReady(t, time.Minute)
	var status struct {
		Objects int64 `json:"objects"`
	}
	d.GetJSON(t, "/status", http.StatusOK, &status)

	one := func(s string) bool { return strings.Count(strings.TrimSpace(s), "\n") == 0 }
	code, stdout, stderr := runBinary(t, time.Minute, "db", "check", "--db", path)
	if code != 0 || strings.TrimSpace(stdout) != "ok" {
		t.Fatalf("db check while running: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	code, stdout, stderr = runBinary(t, time.Minute, "db", "backup", "--db", path, backup)
	if code != 0 || !strings.Contains(stdout, backup) {
		t.Fatalf("db backup while running: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	st, err := os.Stat(backup)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v, want mode 0600", st, err)
	}
	copyDB, err := db.Open(context.Background(), backup, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := copyDB.Objects().ResourceStats(context.Background())
	copyDB.Close()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range stats {
		n += s.Objects
	}
	if n == 0 || n < status.Objects/2 {
		t.Errorf("the backup holds %d objects; the daemon mirrored %d", n, status.Objects)
	}

	code, _, stderr = runBinary(t, time.Minute, "db", "backup", "--db", path, backup)
	if code != 1 || !strings.Contains(stderr, "exists") || !one(stderr) {
		t.Errorf("backup over an existing file: exit %d, stderr %q; want exit 1, one line", code, stderr)
	}

	// Damage the backup's objects table: check says corrupt, exit 3.
	var root int64
	if err := outsideConn(t, backup).QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name = 'objects'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	garble(t, backup, root, root)
	code, _, stderr = runBinary(t, time.Minute, "db", "check", "--db", backup)
	if code != 3 || !strings.Contains(stderr, "is corrupt") || !one(stderr) {
		t.Errorf("db check of a damaged file: exit %d, stderr %q; want exit 3, one line", code, stderr)
	}

	missing := filepath.Join(t.TempDir(), "missing.db")
	code, _, stderr = runBinary(t, time.Minute, "db", "check", "--db", missing)
	if _, err := os.Stat(missing); code != 1 || !os.IsNotExist(err) || !one(stderr) {
		t.Errorf("db check of a missing file: exit %d, stderr %q, stat %v; want exit 1 and no file made", code, stderr, err)
	}
	for _, args := range [][]string{{"db"}, {"db", "backup"}, {"db", "check", "extra"}, {"db", "frobnicate"}} {
		if code, _, stderr := runBinary(t, time.Minute, args...); code != 2 || !one(stderr) {
			t.Errorf("kubegcd %v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
	if _, ok := d.Exited(); ok {
		t.Errorf("kubegcd exited during the check and the backup:\n%s", tail(d.Logs.String(), 20))
	}
}
