package db

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// lingerWrite queues, through inWriteTxAsync with linger, the insert of
// resource name; runs counts the times it ran, and its result arrives on
// the returned channel.
func lingerWrite(d *DB, name string, linger time.Duration, runs *atomic.Int32) chan error {
	done := make(chan error, 1)
	insert := func(tx *sql.Tx) error {
		runs.Add(1)
		_, err := tx.Exec(`INSERT INTO resources (api_group, version, resource, kind, namespaced, synced)
			VALUES ('example.com', 'v1', ?, 'K', 1, 0)`, name)
		return err
	}
	d.inWriteTxAsync(writeOp{name: "linger"}, linger, insert, func(err error) { done <- err })
	return done
}

// startStream runs one write with linger and waits for it: the writer
// holds the next ones that come within linger.
func startStream(t *testing.T, d *DB, linger time.Duration) {
	t.Helper()
	var runs atomic.Int32
	waitResult(t, lingerWrite(d, "first", linger, &runs), "the first write of a stream")
}

func waitResult(t *testing.T, done chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s was not committed within 10 s", what)
	}
}

// A lingering write alone runs at once. One that follows within its
// linger runs once the linger after the first is over, not before, while
// other writes go on.
func TestLingeringWriteWaits(t *testing.T) {
	d := openTemp(t)
	const linger = 300 * time.Millisecond
	start := time.Now()
	startStream(t, d, linger)
	if took := time.Since(start); took >= linger {
		t.Fatalf("a lone lingering write took %v, its linger %v: it was held", took, linger)
	}
	var runs atomic.Int32
	done := lingerWrite(d, "late", linger, &runs)
	if err := d.Ledger().InsertIntent(context.Background(), &Intent{Entry: AuditEntry{Controller: "gc", Action: "delete"}}); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the lingering write ran %d times before an intent's commit", n)
	}
	waitResult(t, done, "the lingering write")
	if took := time.Since(start); took < linger {
		t.Fatalf("the second lingering write was committed %v after the first began, within its linger of %v", took, linger)
	}
	if got := resourceNames(t, d); len(got) != 2 || got[1] != "late" {
		t.Fatalf("resources %v, want [first late]", got)
	}
}

// A write of the ledger takes the held writes with it, before it: audit
// rows keep the order of what they record.
func TestLedgerWriteTakesHeldWrites(t *testing.T) {
	d := openTemp(t)
	ctx := context.Background()
	startStream(t, d, time.Hour)
	var runs atomic.Int32
	done := lingerWrite(d, "held", time.Hour, &runs)
	applied := &AuditEntry{Time: time.Now(), Controller: "gc", Action: "delete", Outcome: "applied", Target: api.Target{UID: "a"}}
	heldAudit := make(chan error, 1)
	d.inWriteTxAsync(opAudit, time.Hour, func(tx *sql.Tx) error { return d.insertAudit(ctx, tx, applied) },
		func(err error) { heldAudit <- err })
	pause := &AuditEntry{Controller: "kubegcd", Action: "pause", Outcome: "applied"}
	if err := d.Ledger().InsertAudit(ctx, pause); err != nil {
		t.Fatal(err)
	}
	waitResult(t, done, "the held write")
	waitResult(t, heldAudit, "the held audit row")
	if applied.ID == 0 || applied.ID > pause.ID {
		t.Fatalf("the held row has id %d, the later one %d: want the held one first", applied.ID, pause.ID)
	}
	if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "gc", Target: api.Target{UID: "b"}, Action: "delete"}); err != nil {
		t.Fatal(err)
	}
	held := lingerWrite(d, "held-2", time.Hour, &runs)
	if err := d.Ledger().ClearPending(ctx, "gc", "b"); err != nil {
		t.Fatal(err)
	}
	waitResult(t, held, "the write held before a pending row's")
}

// Close commits a held write at once.
func TestCloseCommitsHeldWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubegcd.db")
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	startStream(t, d, time.Hour)
	var runs atomic.Int32
	done := lingerWrite(d, "held", time.Hour, &runs)
	start := time.Now()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	waitResult(t, done, "the held write")
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %v with a write held for an hour", took)
	}
	again, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got := resourceNames(t, again); len(got) != 2 || got[1] != "held" {
		t.Fatalf("resources after Close and Open %v, want [first held]", got)
	}
}
