package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/dbfault"
)

func TestCorruptionFoundByAWriteIsReported(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.db")
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rid := fillDB(t, d, 2000)
	if d.CorruptErr() != nil {
		t.Fatalf("CorruptErr of a sound database: %v", d.CorruptErr())
	}

	// Damage the file under the open database, as a failing disk would:
	// move everything into the main file, garble its pages, and make a
	// commit from outside so that d's connections drop their page caches.
	outside, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	var busy, logged, moved int
	if err := outside.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &moved); err != nil || busy != 0 {
		t.Fatalf("checkpoint: busy %d, %v", busy, err)
	}
	dbfault.Garble(t, path, 4096, 0)
	if _, err := outside.Exec(`PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}

	_, err = d.Mirror().ApplyEvents(ctx, []Event{{ResourceID: rid, Object: &Object{UID: "new", APIVersion: "v1", Kind: "ConfigMap",
		Namespace: "ns", Name: "new", ResourceVersion: "2"}}})
	if !IsCorrupt(err) {
		t.Fatalf("write to a damaged file: %v, want a corruption error", err)
	}
	select {
	case <-d.Corrupt():
	default:
		t.Fatal("Corrupt not closed after a write found the file corrupt")
	}
	prefix := "database " + path + " is corrupt (events: database disk image is malformed"
	if got := d.CorruptErr(); got == nil || !strings.HasPrefix(got.Error(), prefix) || !errors.Is(got, ErrCorrupt) {
		t.Fatalf("CorruptErr = %v, want %q… matching ErrCorrupt", got, prefix)
	}
}

func TestIsCorrupt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "k.db")
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// A busy database is not corrupt: another connection holds the write
	// lock past the busy timeout.
	holder, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `ROLLBACK`)
	impatient, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10)")
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	_, busyErr := impatient.Exec(`BEGIN IMMEDIATE`)
	if busyErr == nil {
		t.Fatal("write under another connection's write lock succeeded")
	}

	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", errors.New("database is corrupt"), false},
		{"busy", fmt.Errorf("database events: %w", busyErr), false},
	} {
		if got := IsCorrupt(tc.err); got != tc.want {
			t.Errorf("IsCorrupt(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
