package db

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

// writeApplied asks d to write the rows of applied writes in one request,
// as the applier does with those it queued, each settling what was pending
// about its target; done (if set) hears each row's outcome once, by index.
func writeApplied(d *DB, done func(i int, err error), entries ...*AuditEntry) {
	rows := make([]AppliedRow, len(entries))
	for i, e := range entries {
		rows[i] = AppliedRow{Entry: e, ClearPending: true}
	}
	d.Ledger().WriteApplied(func() []AppliedRow { return rows }, func(written []AppliedRow, failed []error, err error) {
		for i := range written {
			if done == nil {
				continue
			}
			if err == nil && failed != nil {
				done(i, failed[i])
			} else {
				done(i, err)
			}
		}
	})
}

func auditEntry(controller api.Controller, action api.Action, uid string, outcome api.Outcome, at time.Time) *AuditEntry {
	return &AuditEntry{Time: at, Instance: "i", Controller: controller, Rule: "r", Action: action, Outcome: outcome,
		Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: uid}}
}

// The blast-radius window a restart starts from: applied writes to the
// cluster since a time, by any instance, read through the time index.
func TestAppliedWriteTimes(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dry := auditEntry("ownergc", "delete", "dry", api.OutcomeApplied, t0.Add(4*time.Second))
	dry.DryRun = true
	entries := []*AuditEntry{
		auditEntry("ownergc", "delete", "old", api.OutcomeApplied, t0.Add(-time.Second)),
		auditEntry("ownergc", "delete", "a", api.OutcomeApplied, t0),
		auditEntry("ttl", "annotate", "b", api.OutcomeApplied, t0.Add(time.Second)),
		auditEntry("ownergc", "delete", "c", api.OutcomeConflict, t0.Add(2*time.Second)),
		auditEntry("ownergc", "delete", "d", api.OutcomeNotFound, t0.Add(3*time.Second)),
		dry,
		auditEntry(api.ControllerKubegcd, api.ActionPause, "", api.OutcomeApplied, t0.Add(5*time.Second)),
		auditEntry(api.ControllerOperator, api.ActionRelease, "", api.OutcomeApplied, t0.Add(6*time.Second)),
	}
	entries[2].Instance = "another"
	if err := d.Ledger().InsertAudits(ctx, entries); err != nil {
		t.Fatal(err)
	}
	got, err := d.Ledger().AppliedWriteTimes(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Time{t0, t0.Add(time.Second)}, got); diff != "" {
		t.Errorf("write times (-want +got):\n%s", diff)
	}
	var plan strings.Builder
	rows, err := d.read.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT time FROM audit WHERE time >= ? AND outcome = ? AND dry_run = 0
		AND controller NOT IN (?, ?) ORDER BY time`, "x", api.OutcomeApplied, api.ControllerKubegcd, api.ControllerOperator)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "audit_by_time") {
		t.Errorf("the window query does not use audit_by_time:\n%s", plan.String())
	}
}

// Rows of applied decisions, queued or written together later, take what
// was pending about their targets with them; the caller hears of each
// commit.
func TestAppliedRowsSettlePending(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	for _, uid := range []string{"queued", "later", "failed"} {
		if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "ownergc", Rule: "r", Action: "delete", Reason: "x",
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: uid, UID: uid}}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	writeApplied(d, func(_ int, err error) { done <- err }, auditEntry("ownergc", "delete", "queued", api.OutcomeApplied, time.Time{}))
	if err := <-done; err != nil {
		t.Fatalf("WriteApplied: %v", err)
	}
	if err := d.Ledger().InsertAudits(ctx, []*AuditEntry{
		auditEntry("ownergc", "delete", "later", api.OutcomeNotFound, time.Time{}),
		auditEntry("ownergc", "delete", "failed", api.OutcomeFailed, time.Time{}),
	}); err != nil {
		t.Fatal(err)
	}
	pending, _, err := d.Decisions().ListPending(ctx, PendingFilter{})
	if err != nil || len(pending) != 1 || pending[0].Target.UID != "failed" {
		t.Fatalf("pending %+v, %v; want only the failed decision", pending, err)
	}
	if rows, _, err := d.Decisions().ListAudit(ctx, AuditFilter{}); err != nil || len(rows) != 3 {
		t.Fatalf("audit %+v, %v", rows, err)
	}
}

// queryPlan returns SQLite's plan of a query, one step a line.
func queryPlan(t *testing.T, d *DB, query string, args ...any) string {
	t.Helper()
	rows, err := d.read.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}

// A controller holds one decision about an object: a decision with
// another action replaces the one before.
func TestNewDecisionReplacesTheOneBefore(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	target := api.Target{APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion", Name: "sv", UID: "sv"}
	for _, action := range []api.Action{api.ActionDelete, api.ActionRemoveEntries} {
		if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "svgc", Rule: "r", Action: action, Reason: "x", Target: target}); err != nil {
			t.Fatal(err)
		}
	}
	// Another controller's decision about the same object stays.
	if _, err := d.Ledger().UpsertPending(ctx, &Pending{Controller: "ownergc", Rule: "r", Action: "delete", Reason: "x", Target: target}); err != nil {
		t.Fatal(err)
	}
	rows, _, err := d.Decisions().ListPending(ctx, PendingFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, string(r.Controller)+" "+string(r.Action))
	}
	slices.Sort(got)
	if want := []string{"ownergc delete", "svgc remove-entries"}; !slices.Equal(got, want) {
		t.Errorf("pending %q, want %q", got, want)
	}
}
