package db

import (
	"context"
	"fmt"
	"strings"
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
	if diff := cmp.Diff(map[api.Controller]int{"ownergc": 2, "podgc": 1}, got); diff != "" {
		t.Errorf("pending by controller (-want +got):\n%s", diff)
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
	entry := func(kind, rule, uid string, outcome ...api.Outcome) *AuditEntry {
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
	add := func(controller api.Controller, kind, uid string, since time.Time) {
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
						got = append(got, string(p.Controller)+"/"+p.Target.UID)
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
