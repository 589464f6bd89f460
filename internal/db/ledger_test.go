package db

import (
	"context"
	"fmt"
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

func auditEntry(controller, action, uid, outcome string, at time.Time) *AuditEntry {
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

// A manual hold outlives the audit retention: pruning keeps the newest
// pause or release.
func TestPruneAuditKeepsTheLastHold(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := d.Ledger().InsertAudits(ctx, []*AuditEntry{
		auditEntry(api.ControllerKubegcd, api.ActionPause, "", api.OutcomeApplied, t0),
		auditEntry(api.ControllerOperator, api.ActionRelease, "", api.OutcomeApplied, t0.Add(time.Hour)),
		auditEntry(api.ControllerKubegcd, api.ActionPause, "", api.OutcomeApplied, t0.Add(2*time.Hour)),
		auditEntry("ownergc", "delete", "a", api.OutcomeApplied, t0.Add(3*time.Hour)),
		auditEntry("ownergc", "delete", "b", api.OutcomeApplied, t0.Add(48*time.Hour)),
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Decisions().PruneAudit(ctx, t0.Add(24*time.Hour)); err != nil || n != 3 {
		t.Fatalf("pruned %d, %v; want 3", n, err)
	}
	action, at, err := d.Ledger().LastHold(ctx)
	if err != nil || action != api.ActionPause || !at.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("last hold after pruning: %q at %s, %v", action, at, err)
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

// The audit's kind filter takes a kind in any case or a resource's plural,
// its rule filter a rule id in any case; both page by the cursor and read
// their index in id order, without sorting.
func TestListAuditKindAndRule(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	for _, r := range []Resource{
		{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true},
		{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true},
	} {
		if _, err := d.Mirror().EnsureResource(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	entry := func(kind, rule, uid string, outcome ...string) *AuditEntry {
		e := auditEntry("ownergc", "delete", uid, append(outcome, api.OutcomeDryRun)[0], t0)
		e.Target.Kind, e.Rule = kind, rule
		return e
	}
	if err := d.Ledger().InsertAudits(ctx, []*AuditEntry{
		entry("ConfigMap", "BR-21-01", "cm1"),
		entry("Deployment", "BR-21-03", "dep1"),
		entry("ConfigMap", "BR-21-03", "cm2"),
		entry("Widget", "BR-21-01", "w1", api.OutcomeFailed), // no resource serves it any longer
		entry("ConfigMap", "BR-21-01", "cm3", api.OutcomeApplied),
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    AuditFilter
		want []string // uids, newest first
	}{
		{"kind", AuditFilter{Kind: "ConfigMap"}, []string{"cm3", "cm2", "cm1"}},
		{"kind in lower case", AuditFilter{Kind: "configmap"}, []string{"cm3", "cm2", "cm1"}},
		{"plural", AuditFilter{Kind: "deployments"}, []string{"dep1"}},
		{"plural in another case", AuditFilter{Kind: "Deployments"}, []string{"dep1"}},
		{"kind no resource serves", AuditFilter{Kind: "widget"}, []string{"w1"}},
		{"unknown kind", AuditFilter{Kind: "Secret"}, []string{}},
		{"rule", AuditFilter{Rule: "BR-21-03"}, []string{"cm2", "dep1"}},
		{"rule in lower case", AuditFilter{Rule: "br-21-01"}, []string{"cm3", "w1", "cm1"}},
		{"kind and rule", AuditFilter{Kind: "configmaps", Rule: "BR-21-01"}, []string{"cm3", "cm1"}},
		{"unknown rule", AuditFilter{Rule: "BR-99-01"}, []string{}},
		{"a common outcome", AuditFilter{Outcome: api.OutcomeDryRun}, []string{"cm2", "dep1", "cm1"}},
		{"another common outcome", AuditFilter{Outcome: api.OutcomeApplied}, []string{"cm3"}},
		{"a rare outcome (audit_rare_outcomes)", AuditFilter{Outcome: api.OutcomeFailed}, []string{"w1"}},
		{"a rare outcome without rows", AuditFilter{Outcome: api.OutcomeConflict}, []string{}},
		{"rule and a rare outcome", AuditFilter{Rule: "BR-21-01", Outcome: api.OutcomeFailed}, []string{"w1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One row a page: the cursor carries the filter through.
			got := []string{}
			f := tt.f
			f.Limit = 1
			for range 10 {
				items, next, err := d.Decisions().ListAudit(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range items {
					got = append(got, e.Target.UID)
				}
				if next == 0 {
					break
				}
				f.Before = next
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("uids (-want +got):\n%s", diff)
			}
		})
	}

	for _, tt := range []struct{ cond, index string }{
		{"kind = ? COLLATE NOCASE", "audit_by_kind"},
		{"rule = ? COLLATE NOCASE", "audit_by_rule"},
	} {
		plan := queryPlan(t, d, `SELECT id FROM audit WHERE `+tt.cond+` AND id < ? ORDER BY id DESC LIMIT 10`, "x", 100)
		if !strings.Contains(plan, tt.index) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s does not read %s in order:\n%s", tt.cond, tt.index, plan)
		}
	}
}

// Pending decisions page by a key either way: oldest first by default,
// newest first on request; decisions of one since keep one order; the
// filters hold across pages; every page is a range of pending_by_since.
func TestListPendingPages(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	if _, err := d.Mirror().EnsureResource(ctx, Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(controller, kind, uid string, since time.Time) {
		t.Helper()
		p := &Pending{Controller: controller, Rule: "r", Action: "delete", Reason: "why", Since: since,
			Target: api.Target{APIVersion: "v1", Kind: kind, Namespace: "ns", Name: uid, UID: uid}}
		if _, err := d.Ledger().UpsertPending(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	add("ownergc", "ConfigMap", "c", t0.Add(2*time.Second))
	add("ownergc", "ConfigMap", "a", t0)
	add("podgc", "Pod", "p", t0.Add(time.Second))
	add("ownergc", "ConfigMap", "b", t0) // same since as a: the key orders them
	add("ttl", "ConfigMap", "b", t0)     // and another controller about b
	add("ownergc", "ConfigMap", "d", t0.Add(3*time.Second))

	tests := []struct {
		name string
		f    PendingFilter
		want []string // controller/uid, in order
	}{
		{"oldest first", PendingFilter{}, []string{"ownergc/a", "ownergc/b", "ttl/b", "podgc/p", "ownergc/c", "ownergc/d"}},
		{"newest first", PendingFilter{Newest: true}, []string{"ownergc/d", "ownergc/c", "podgc/p", "ttl/b", "ownergc/b", "ownergc/a"}},
		{"kind by plural", PendingFilter{Kind: "configmaps", Newest: true}, []string{"ownergc/d", "ownergc/c", "ttl/b", "ownergc/b", "ownergc/a"}},
		{"kind in lower case", PendingFilter{Kind: "pod"}, []string{"podgc/p"}},
		{"controller", PendingFilter{Controller: "ownergc"}, []string{"ownergc/a", "ownergc/b", "ownergc/c", "ownergc/d"}},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 4, 100} {
			t.Run(fmt.Sprintf("%s by %d", tt.name, size), func(t *testing.T) {
				got := []string{}
				f := tt.f
				f.Limit = size
				for range 10 {
					items, next, err := d.Decisions().ListPending(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range items {
						got = append(got, p.Controller+"/"+p.Target.UID)
					}
					if next == nil {
						break
					}
					if len(items) != size {
						t.Errorf("a page of %d before the end, want %d", len(items), size)
					}
					f.After = next
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("decisions (-want +got):\n%s", diff)
				}
			})
		}
	}

	for _, q := range []string{
		`SELECT uid FROM pending WHERE (since, controller, uid, action) > (?, ?, ?, ?) ORDER BY since ASC, controller ASC, uid ASC, action ASC LIMIT 10`,
		`SELECT uid FROM pending WHERE (since, controller, uid, action) < (?, ?, ?, ?) ORDER BY since DESC, controller DESC, uid DESC, action DESC LIMIT 10`,
	} {
		plan := queryPlan(t, d, q, "x", "c", "u", "a")
		if !strings.Contains(plan, "pending_by_since (") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("a page is not a range of pending_by_since read in order:\n%s", plan)
		}
	}
}

// A controller holds one decision about an object: a decision with
// another action replaces the one before.
func TestNewDecisionReplacesTheOneBefore(t *testing.T) {
	ctx := context.Background()
	d := openTemp(t)
	target := api.Target{APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion", Name: "sv", UID: "sv"}
	for _, action := range []string{"delete", "remove-entries"} {
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
		got = append(got, r.Controller+" "+r.Action)
	}
	slices.Sort(got)
	if want := []string{"ownergc delete", "svgc remove-entries"}; !slices.Equal(got, want) {
		t.Errorf("pending %q, want %q", got, want)
	}
}
