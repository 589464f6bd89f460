// Package deploy holds what kubegcd ships beside its binary: the systemd
// unit, an example config and example Prometheus alert rules. Its tests keep
// the rules loadable by Prometheus and true to the metrics kubegcd exports,
// and the unit hardened and valid (unit_test.go).
package deploy

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// exported are the metrics the rules may name: kubegcd's own (see
// docs/metrics.md), kubegcd_ownerref_findings from the lint.
var exported = []string{
	"kubegcd_deletions_stuck",
	"kubegcd_deletion_stuck_oldest_seconds",
	"kubegcd_namespaces_terminating",
	"kubegcd_ownerref_findings",
	"kubegcd_reconcile_actions_total",
	"kubegcd_reconcile_paused",
}

func TestAlertRules(t *testing.T) {
	// Legacy name validation is the strictest: the rules load on older
	// Prometheus servers too.
	groups, errs := rulefmt.ParseFile("kubegcd-alerts.yaml", false, model.LegacyValidation, parser.NewParser(parser.Options{}),
		slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("kubegcd-alerts.yaml: %v", errs)
	}
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("%s: %v", r.Alert, err)
				continue
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(exported, vs.Name) {
					t.Errorf("%s names %q, which kubegcd does not export", r.Alert, vs.Name)
				}
				return nil
			})
		}
	}
	want := []string{"KubegcdDeletionStalled", "KubegcdNamespaceTerminatingTooLong", "KubegcdGarbageCollectorIdle",
		"KubegcdEnforcementPaused"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}
