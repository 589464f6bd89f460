package http

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestOverview(t *testing.T) {
	srv, store := testServer(t)
	ctx := context.Background()
	now := time.Now().UTC()
	entry := func(uid string, at time.Time, dryRun bool) *db.AuditEntry {
		e := &db.AuditEntry{Time: at, Instance: "i", Controller: "ownergc", Rule: "r", Action: "delete", Outcome: api.OutcomeApplied,
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: uid, UID: uid}}
		if dryRun {
			e.DryRun, e.Outcome = true, api.OutcomeDryRun
		}
		return e
	}
	if err := store.Ledger().InsertAudits(ctx, []*db.AuditEntry{
		entry("now", now, false),
		entry("now-dry", now, true),
		entry("2h", now.Add(-2*time.Hour), false),
		entry("2d", now.Add(-48*time.Hour), false),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Ledger().UpsertPending(ctx, &db.Pending{Controller: "podgc", Action: "delete", Rule: "r",
		Target: api.Target{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "p"}}); err != nil {
		t.Fatal(err)
	}
	var got api.Overview
	getJSON(t, srv, "/overview", 200, &got)
	if diff := cmp.Diff(map[api.Controller]int{"ownergc": 0, "podgc": 1, "ttl": 0, "svgc": 0, "lcgc": 0, "rules": 0}, got.PendingByController); diff != "" {
		t.Errorf("pendingByController (-want +got):\n%s", diff)
	}
	total := func(bs []api.DeletionBucket) (applied, dryRun int) {
		for _, b := range bs {
			applied += b.Applied
			dryRun += b.DryRun
		}
		return applied, dryRun
	}
	h, d := got.Deletions.LastHour, got.Deletions.LastDay
	if len(h) != 60 || len(d) != 24 {
		t.Fatalf("%d hour buckets and %d day buckets, want 60 and 24", len(h), len(d))
	}
	// The test may cross a minute between the insert and the request: the
	// rows of now are in the newest bucket or the one before.
	if a, dr := h[59].Applied+h[58].Applied, h[59].DryRun+h[58].DryRun; a != 1 || dr != 1 {
		t.Errorf("last minutes: %d applied, %d dry-run, want 1 and 1: %+v", a, dr, h[58:])
	}
	if a, dr := total(h); a != 1 || dr != 1 {
		t.Errorf("last hour: %d applied, %d dry-run, want 1 and 1", a, dr)
	}
	if a, dr := total(d); a != 2 || dr != 1 {
		t.Errorf("last day: %d applied, %d dry-run, want 2 and 1", a, dr)
	}
	for i := 1; i < len(h); i++ {
		if step := h[i].Start.Sub(h[i-1].Start); step != time.Minute {
			t.Fatalf("hour bucket %d starts %s after the one before", i, step)
		}
	}
}

func TestOverviewRefusesParameters(t *testing.T) {
	srv, _ := testServer(t)
	var got errorJSON
	getJSON(t, srv, "/overview?window=1h", 400, &got)
	if got.Error != `unknown query parameter "window"` {
		t.Errorf("error = %q", got.Error)
	}
}
