package db

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

// replicaOf reads every row of d as a peer reads it.
func replicaOf(t *testing.T, d *DB) []ReplicaRow {
	t.Helper()
	rows, _, err := d.Decisions().ReplicaPage(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// A page merged twice, or from two peers that both hold it, is one set of
// rows: (instance, origin id) names a row in every copy.
func TestMergeAuditIdempotent(t *testing.T) {
	ctx := context.Background()
	src, dst := openTemp(t), openTemp(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, uid := range []string{"a", "b", "c"} {
		e := auditEntry("ownergc", "delete", uid, api.OutcomeApplied, t0.Add(time.Duration(i)*time.Second))
		e.Instance = "leader_1"
		if err := src.Ledger().InsertAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	page := replicaOf(t, src)
	for _, store := range []string{"s1", "s1", "s2"} {
		if _, err := dst.AuditPeers().Merge(ctx, PeerCursor{Store: store, After: 3}, page, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := replicaOf(t, dst)
	if len(got) != 3 {
		t.Fatalf("merged the page three times: %d rows, want 3", len(got))
	}
	for i := range got {
		if got[i].OriginID != page[i].OriginID || got[i].Instance != "leader_1" || got[i].Target.UID != page[i].Target.UID {
			t.Errorf("row %d: got origin %d instance %s uid %s, want origin %d leader_1 %s", i, got[i].OriginID,
				got[i].Instance, got[i].Target.UID, page[i].OriginID, page[i].Target.UID)
		}
	}
	// The copy serves the rows with their origin, so that a third copy
	// merging from it adds nothing either.
	third := openTemp(t)
	for _, from := range [][]ReplicaRow{page, got} {
		if _, err := third.AuditPeers().Merge(ctx, PeerCursor{Store: "x", After: 3}, from, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(replicaOf(t, third)); n != 3 {
		t.Errorf("a third copy merged the writer's and the copy's rows: %d rows, want 3", n)
	}
	if after, err := dst.AuditPeers().Cursor(ctx, "s1"); err != nil || after != 3 {
		t.Errorf("cursor of s1: %d, %v; want 3", after, err)
	}
}

// A merged row never replaces a row this database's instance wrote, even
// one that claims the same instance and id; and refuse keeps a peer's
// copies of this instance's rows out altogether.
func TestMergeAuditNeverOverwritesOwnRows(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	own := auditEntry("ownergc", "delete", "mine", api.OutcomeApplied, t0)
	own.Instance = "self_1"
	if err := d.Ledger().InsertAudit(ctx, own); err != nil {
		t.Fatal(err)
	}
	forged := ReplicaRow{AuditEntry: *auditEntry("ownergc", "delete", "forged", api.OutcomeFailed, t0), OriginID: own.ID}
	forged.Instance = "self_1"
	added, err := d.AuditPeers().Merge(ctx, PeerCursor{Store: "p", After: 1}, []ReplicaRow{forged}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if added != 0 {
		t.Errorf("a peer's row with this instance's identity and id was added (%d)", added)
	}
	other := forged
	other.OriginID = own.ID + 100
	refuse := func(instance string) bool { return instance == "self_1" }
	if added, err = d.AuditPeers().Merge(ctx, PeerCursor{Store: "p", After: 2}, []ReplicaRow{other}, refuse); err != nil {
		t.Fatal(err)
	}
	if added != 0 {
		t.Errorf("a row of this instance's identity came from a peer (%d added)", added)
	}
	got := replicaOf(t, d)
	want := []string{"mine"}
	var uids []string
	for _, r := range got {
		uids = append(uids, r.Target.UID)
	}
	if diff := cmp.Diff(want, uids); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if got[0].Outcome != api.OutcomeApplied || got[0].OriginID != own.ID {
		t.Errorf("own row changed: %+v", got[0])
	}
}

// A gap is recorded once per instance, keeps its since, and goes when
// cleared; NewestOf reads the newest row an instance wrote.
func TestAuditGaps(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	p := d.AuditPeers()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		e := auditEntry("ownergc", "delete", "u", api.OutcomeApplied, t0.Add(time.Duration(i)*time.Minute))
		e.Instance = "old_1"
		if err := d.Ledger().InsertAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	since, err := p.NewestOf(ctx, "old_1")
	if err != nil || since == nil || !since.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("NewestOf: %v, %v; want %v", since, err, t0.Add(2*time.Minute))
	}
	if none, err := p.NewestOf(ctx, "nobody"); err != nil || none != nil {
		t.Errorf("NewestOf(nobody): %v, %v; want nil", none, err)
	}
	for _, before := range []time.Time{t0.Add(time.Hour), t0.Add(2 * time.Hour)} {
		if err := p.RecordGap(ctx, AuditGap{Instance: "old_1", Since: since, Before: before, RecordedBy: "new_1"}); err != nil {
			t.Fatal(err)
		}
	}
	gaps, err := d.Decisions().AuditGaps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []AuditGap{{Instance: "old_1", Since: since, Before: t0.Add(2 * time.Hour), RecordedBy: "new_1"}}
	if diff := cmp.Diff(want, gaps); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}
	cleared, err := p.ClearGaps(ctx, []string{"other", "old_1"})
	if err != nil || len(cleared) != 1 || cleared[0] != "old_1" {
		t.Errorf("ClearGaps: %v, %v; want [old_1]", cleared, err)
	}
	if gaps, _ := p.Gaps(ctx); len(gaps) != 0 {
		t.Errorf("gaps after clearing: %v", gaps)
	}
}

// The database has an id of its own, and remembers who wrote into it,
// those of before migration 0025 included.
func TestAuditStoreAndWriters(t *testing.T) {
	ctx := context.Background()
	a, b := openTemp(t), openTemp(t)
	ida, err := a.AuditPeers().StoreID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idb, _ := b.Decisions().AuditStore(ctx)
	if len(ida) != 32 || ida == idb {
		t.Errorf("store ids %q and %q: want two different 32-hex ids", ida, idb)
	}
	for _, in := range []string{"x_1", "x_2", "x_1"} {
		if err := a.AuditPeers().RecordWriter(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	w, err := a.Decisions().AuditWriters(ctx)
	if err != nil || len(w) != 2 {
		t.Errorf("writers: %v, %v; want x_1 and x_2", w, err)
	}
}

// A pause merged from a peer after this instance released a later hold is
// older than the release: the newest hold is the release. Merged rows take
// the next local ids, so the newest is found by time, not by id.
func TestLastHoldByTimeWithMergedRows(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	release := auditEntry(api.ControllerOperator, api.ActionRelease, "", api.OutcomeApplied, t0.Add(time.Minute))
	release.Instance = "self_1"
	if err := d.Ledger().InsertAudit(ctx, release); err != nil {
		t.Fatal(err)
	}
	pause := ReplicaRow{AuditEntry: *auditEntry(api.ControllerKubegcd, api.ActionPause, "", api.OutcomeApplied, t0),
		OriginID: 7}
	pause.Instance = "peer_1"
	if _, err := d.AuditPeers().Merge(ctx, PeerCursor{Store: "p", After: 7}, []ReplicaRow{pause}, nil); err != nil {
		t.Fatal(err)
	}
	action, at, err := d.Ledger().LastHold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if action != api.ActionRelease || !at.Equal(t0.Add(time.Minute)) {
		t.Errorf("LastHold: %s at %v, want the release at %v", action, at, t0.Add(time.Minute))
	}
}

// An audit sink ships the rows this database's instances wrote, not those
// merged from peers: each instance ships its own, and a pipeline that
// collects every instance holds every row once.
func TestAuditAfterLeavesMergedRowsOut(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	own := auditEntry("ownergc", "delete", "mine", api.OutcomeApplied, t0)
	if err := d.Ledger().InsertAudit(ctx, own); err != nil {
		t.Fatal(err)
	}
	merged := ReplicaRow{AuditEntry: *auditEntry("ownergc", "delete", "theirs", api.OutcomeApplied, t0), OriginID: 1}
	merged.Instance = "peer_1"
	if _, err := d.AuditPeers().Merge(ctx, PeerCursor{Store: "p", After: 1}, []ReplicaRow{merged}, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := d.Decisions().AuditAfter(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Target.UID != "mine" {
		t.Errorf("rows shipped: %+v, want the own row alone", rows)
	}
}
