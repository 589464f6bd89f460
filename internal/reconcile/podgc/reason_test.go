package podgc

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// TestDryRunDecisionIsRecordedOnce: in dry-run nothing changes between
// passes, so every pass reaches the same decision about a pod. It must be
// audited once and keep its pending row's since: its reason may not carry a
// clock (an age, a time) that changes from one pass to the next.
func TestDryRunDecisionIsRecordedOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	created := t0.Add(-24 * time.Hour)
	deleting := t0.Add(-time.Hour)
	pod := func(name, node, phase string, deletion *time.Time) *db.Object {
		return &db.Object{UID: "uid-" + name, APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: name, ResourceVersion: "7",
			CreationTimestamp: &created, DeletionTimestamp: deletion, Pod: &db.Pod{Phase: phase, NodeName: node}}
	}
	oos := &db.Object{UID: "uid-oos", APIVersion: "v1", Kind: "Node", Name: "oos", ResourceVersion: "1",
		Node: &db.Node{Ready: "False", Taints: []db.Taint{{Key: "node.kubernetes.io/out-of-service", Effect: "NoExecute"}}}}
	tests := []struct {
		name string
		opts Options
		objs []*db.Object
		// passes are the times of the passes, seconds after t0.
		passes []int
		rule   string
	}{
		{name: "orphaned: node gone after its quarantine", opts: Options{Quarantine: 40 * time.Second},
			objs: []*db.Object{pod("orphan", "gone", "Running", nil)}, passes: []int{0, 41, 61, 300}, rule: ruleOrphaned},
		{name: "terminated beyond the threshold", opts: Options{TerminatedThreshold: 1},
			objs:   []*db.Object{pod("done-1", "", "Succeeded", nil), pod("done-2", "", "Succeeded", nil)},
			passes: []int{0, 20, 3600}, rule: ruleTerminated},
		{name: "terminated past the maximum age", opts: Options{MaxAge: time.Hour},
			objs: []*db.Object{pod("old", "", "Failed", nil)}, passes: []int{0, 20, 3600}, rule: ruleMaxAge},
		{name: "beyond a namespace's threshold", opts: Options{NamespaceThresholds: map[string]int{"ns": 0}},
			objs: []*db.Object{pod("done", "", "Succeeded", nil)}, passes: []int{0, 20, 3600}, rule: ruleNamespaceThreshold},
		{name: "terminating on an out-of-service node",
			objs:   []*db.Object{oos, pod("stuck", "oos", "Running", &deleting)},
			passes: []int{0, 20, 3600}, rule: ruleOutOfService},
		{name: "terminating and unscheduled",
			objs:   []*db.Object{pod("unbound", "", "Pending", &deleting)},
			passes: []int{0, 20, 3600}, rule: ruleUnscheduled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			now := t0
			clock := func() time.Time { return now }
			store := dbtest.Open(t)
			store.Now = clock
			pods, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "nodes", Kind: "Node"})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tt.objs {
				rid := pods
				if o.Kind == "Node" {
					rid = nodes
				}
				if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Object: o}}); err != nil {
					t.Fatal(err)
				}
			}
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), DryRun: true, Instance: "test", Logger: log,
				Now: clock, Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			passes := reconcile.NewPasses(prometheus.NewRegistry())
			opts := tt.opts
			opts.DB, opts.Applier, opts.Client, opts.Logger, opts.Passes = store.PodGC(), applier, fake.NewClientset(), log, passes
			opts.ResourceSynced = func(string, string) bool { return true }
			opts.Registerer, opts.Now = prometheus.NewRegistry(), clock
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}

			var first *db.Pending
			for _, s := range tt.passes {
				now = t0.Add(time.Duration(s) * time.Second)
				if err := c.Pass(ctx); err != nil {
					t.Fatalf("pass at +%ds: %v", s, err)
				}
				rows, _, err := store.Decisions().ListPending(ctx, db.PendingFilter{Controller: api.ControllerPodGC})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range rows {
					if p.Rule != tt.rule || p.NotBefore != nil {
						continue
					}
					switch {
					case first == nil:
						first = &p
					case p.Reason != first.Reason || !p.Since.Equal(first.Since):
						t.Errorf("pass at +%ds: pending %q since %s, was %q since %s", s, p.Reason, p.Since.Format(time.RFC3339),
							first.Reason, first.Since.Format(time.RFC3339))
					}
				}
			}
			if first == nil {
				t.Fatalf("no pending %s decision after the passes", tt.rule)
			}
			rows, _, err := store.Decisions().ListAudit(ctx, db.AuditFilter{UID: first.Target.UID, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 {
				var reasons []string
				for _, r := range rows {
					reasons = append(reasons, r.Reason)
				}
				t.Errorf("%d audit rows about %s, want 1: %q", len(rows), first.Target.Name, reasons)
			}
		})
	}
}
