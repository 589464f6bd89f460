package db

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	kubetestutil "github.com/kubegcd/kubegcd/internal/testutil"
)

// fileSize is the size of the file at path; 0 when there is none.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// writeAudits commits n audit rows of about 1 KB each, numbered from
// from, one commit per row, as workers that each wait for their write do.
func writeAudits(t *testing.T, d *DB, from, n int) {
	t.Helper()
	reason := strings.Repeat("r", 1000)
	for i := from; i < from+n; i++ {
		e := &AuditEntry{Instance: "i", Controller: "gc", Rule: "owner-gone", Action: "delete", Reason: reason, Outcome: "applied",
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("cm-", i), UID: fmt.Sprint("uid-", i)}}
		if err := d.Ledger().InsertAudit(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// The writer's commits do not checkpoint: with the checkpointer held off,
// 300 commits of an audit row each (8 pages: the row, its six indexes and
// the id sequence) leave every page they wrote in the WAL, where SQLite's
// default would have copied them into the file every 1,000 pages.
func TestCommitsLeaveCheckpointsToCheckpointer(t *testing.T) {
	d := openTemp(t, Options{CheckpointEvery: time.Hour})
	before := fileSize(t, d.Path)
	writeAudits(t, d, 0, 300)
	if wal := fileSize(t, d.Path+"-wal"); wal < 4<<20 {
		t.Fatalf("the WAL holds %d bytes after 300 commits, want more than 4 MB", wal)
	}
	if after := fileSize(t, d.Path); after != before {
		t.Fatalf("the database file went from %d to %d bytes: a commit checkpointed", before, after)
	}
	for pragma, want := range map[string]int64{"wal_autocheckpoint": walBackstopPages, "journal_size_limit": walSizeLimit} {
		var got int64
		if err := d.write.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("the writer's %s is %d, want %d", pragma, got, want)
		}
	}
}

// The checkpointer copies the WAL into the file after commits, again after
// later ones, and stops with Close.
func TestCheckpointerCopiesCommits(t *testing.T) {
	d := openTemp(t, Options{CheckpointEvery: 20 * time.Millisecond})
	c := d.checkpointer
	size := fileSize(t, d.Path)
	for round := range 2 {
		writeAudits(t, d, round*200, 200)
		deadline := time.Now().Add(10 * time.Second)
		for fileSize(t, d.Path) <= size {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the database file stayed at %d bytes for 10 s after the commits", round, size)
			}
			time.Sleep(10 * time.Millisecond)
		}
		size = fileSize(t, d.Path)
	}
	if n := testutil.CollectAndCount(c.seconds); n != 1 {
		t.Fatalf("%d checkpoint histograms, want 1", n)
	}
	if got := testutil.ToFloat64(c.errors); got != 0 {
		t.Fatalf("%v checkpoint errors", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	default:
		t.Fatal("the checkpointer still runs after Close")
	}
	// The rows are in the file: a new Open reads them without the WAL
	// that Close removed.
	if wal := fileSize(t, d.Path+"-wal"); wal != 0 {
		t.Fatalf("a WAL of %d bytes is left after Close", wal)
	}
	again, err := Open(context.Background(), d.Path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	var rows int
	if err := again.read.QueryRow("SELECT count(*) FROM audit").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 400 {
		t.Fatalf("%d audit rows after Close and Open, want 400", rows)
	}
}

// A read-only database has no checkpointer: its connections write nothing.
func TestReadOnlyHasNoCheckpointer(t *testing.T) {
	d := openTemp(t, Options{CheckpointEvery: time.Millisecond})
	ro, err := Open(context.Background(), d.Path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.checkpointer != nil {
		t.Fatal("a read-only database started a checkpointer")
	}
}

// A list transaction writes each page it changes once: its changes stay
// in the writer's cache until the commit. A page that spills before the commit
// is written to the WAL and written over in place at the commit, so only
// the bytes written show it. One list page of 10,000 objects with random
// UIDs changes about 9 MB of pages.
func TestBigTransactionWritesEachPageOnce(t *testing.T) {
	d := openTemp(t, Options{CheckpointEvery: time.Hour})
	ctx := context.Background()
	rid, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := d.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	owner := kubetestutil.RandomUID()
	objs := make([]*Object, 10000)
	for i := range objs {
		objs[i] = &Object{UID: kubetestutil.RandomUID(), APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i),
			ResourceVersion: fmt.Sprint(i + 1), OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner}}}
	}
	var pageSize int64
	if err := d.write.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	wal := fileSize(t, d.Path+"-wal")
	written := kubetestutil.WrittenBytes(t)
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, objs); err != nil {
		t.Fatal(err)
	}
	written = kubetestutil.WrittenBytes(t) - written
	// A WAL frame is a page and a 24-byte header.
	frame := pageSize + 24
	frames := (fileSize(t, d.Path+"-wal") - wal) / frame
	if written > frames*frame*11/10 {
		t.Fatalf("the list wrote %d KB for %d frames of the WAL (%d KB): pages spilled before the commit",
			written>>10, frames, frames*frame>>10)
	}
	t.Logf("the list wrote %d KB, %d frames", written>>10, frames)
	// The cache stays large from one page to the next while the list is
	// under way, and is SQLite's default again once it ends: kept at its
	// size, it would fill with the pages of every later write.
	if got := writerCache(t, d); got != -listCacheKB {
		t.Errorf("the writer's cache_size is %d between two pages of a list, want %d", got, -listCacheKB)
	}
	if _, err := d.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		t.Fatal(err)
	}
	if got := writerCache(t, d); got != -defaultCacheKB {
		t.Errorf("the writer's cache_size is %d after a list, want %d", got, -defaultCacheKB)
	}
	// A list that fails ends too.
	epoch, err = d.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Mirror().WriteListPage(ctx, rid, epoch, objs[:10]); err != nil {
		t.Fatal(err)
	}
	if err := d.Mirror().EndList(ctx, rid); err != nil {
		t.Fatal(err)
	}
	if got := writerCache(t, d); got != -defaultCacheKB {
		t.Errorf("the writer's cache_size is %d after a list ended, want %d", got, -defaultCacheKB)
	}
}

// writerCache reads the cache_size of the writer's connection.
func writerCache(t *testing.T, d *DB) int64 {
	t.Helper()
	var cache int64
	if err := d.write.QueryRow("PRAGMA cache_size").Scan(&cache); err != nil {
		t.Fatal(err)
	}
	return cache
}
