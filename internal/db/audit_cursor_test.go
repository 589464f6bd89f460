package db

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

// An audit sink reads the history after its cursor, oldest first, a page
// at a time, and its cursor survives a reopening of the file.
func TestAuditAfterAndSinkCursor(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kubegcd.db")
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var entries []*AuditEntry
	for _, uid := range []string{"a", "b", "c", "d", "e"} {
		entries = append(entries, auditEntry("ownergc", "delete", uid, api.OutcomeApplied, t0))
	}
	if err := d.Ledger().InsertAudits(ctx, entries); err != nil {
		t.Fatal(err)
	}
	uids := func(rows []AuditEntry) (out []string) {
		for _, r := range rows {
			out = append(out, r.Target.UID)
		}
		return out
	}
	page, err := d.Decisions().AuditAfter(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, uids(page)); diff != "" {
		t.Errorf("first page (-want +got):\n%s", diff)
	}
	page, err = d.Decisions().AuditAfter(ctx, page[1].ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c", "d", "e"}, uids(page)); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}

	if _, ok, err := d.Decisions().SinkCursor(ctx, "log"); err != nil || ok {
		t.Fatalf("a new sink's cursor: ok %v, err %v; want none", ok, err)
	}
	if err := d.Decisions().SaveSinkCursor(ctx, "log", page[1].ID, t0); err != nil {
		t.Fatal(err)
	}
	// A cursor never moves back: a late save of an older position is
	// ignored.
	if err := d.Decisions().SaveSinkCursor(ctx, "log", page[0].ID, t0); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, ok, err := d.Decisions().SinkCursor(ctx, "log")
	if err != nil || !ok || got != page[1].ID {
		t.Fatalf("cursor after reopening: %d, ok %v, err %v; want %d", got, ok, err, page[1].ID)
	}
	if _, ok, _ := d.Decisions().SinkCursor(ctx, "webhook"); ok {
		t.Error("another sink shares the log's cursor")
	}
	rest, err := d.Decisions().AuditAfter(ctx, got, 10)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"e"}, uids(rest)); diff != "" {
		t.Errorf("after the cursor (-want +got):\n%s", diff)
	}
}
