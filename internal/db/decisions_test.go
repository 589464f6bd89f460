package db

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

// Deletions per minute count only the controllers' deletes that were sent
// (applied) or decided in dry-run, from since on.
func TestDeletionsPerMinute(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	dry := auditEntry("ownergc", "delete", "dry", api.OutcomeDryRun, t0.Add(30*time.Second))
	dry.DryRun = true
	entries := []*AuditEntry{
		auditEntry("ownergc", "delete", "before", api.OutcomeApplied, t0.Add(-time.Second)),
		auditEntry("ownergc", "delete", "a", api.OutcomeApplied, t0),
		auditEntry("podgc", "delete", "b", api.OutcomeApplied, t0.Add(59*time.Second)),
		dry,
		auditEntry("ownergc", "remove-owner-refs", "c", api.OutcomeApplied, t0.Add(10*time.Second)),
		auditEntry("ownergc", "delete", "d", api.OutcomeFailed, t0.Add(20*time.Second)),
		auditEntry("ownergc", "delete", "e", api.OutcomeNotFound, t0.Add(25*time.Second)),
		auditEntry("svgc", "delete", "f", api.OutcomeApplied, t0.Add(3*time.Minute+time.Second)),
		auditEntry(api.ControllerKubegcd, api.ActionPause, "", api.OutcomeApplied, t0.Add(4*time.Minute)),
	}
	if err := d.Ledger().InsertAudits(ctx, entries); err != nil {
		t.Fatal(err)
	}
	got, err := d.Decisions().DeletionsPerMinute(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []DeletionMinute{
		{Minute: t0, Applied: 2, DryRun: 1},
		{Minute: t0.Add(3 * time.Minute), Applied: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deletions per minute (-want +got):\n%s", diff)
	}
}

func TestPendingByController(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	for _, p := range []*Pending{
		{Controller: "ownergc", Action: "delete", Rule: "r", Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: "a"}},
		{Controller: "ownergc", Action: "delete", Rule: "r", Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: "b"}},
		{Controller: "podgc", Action: "delete", Rule: "r", Target: api.Target{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "p"}},
	} {
		if _, err := d.Ledger().UpsertPending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	got, err := d.Decisions().PendingByController(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"ownergc": 2, "podgc": 1}, got); diff != "" {
		t.Errorf("pending by controller (-want +got):\n%s", diff)
	}
}
