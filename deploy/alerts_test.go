// Package deploy holds what kubegcd ships beside its binary: the systemd
// unit and its template for one instance per cluster, an example config,
// the RBAC objects kubegcd needs, a FlowSchema for its Leases, example
// Prometheus alert rules and a Grafana dashboard. Its tests keep the
// rules loadable by Prometheus, the rules and the dashboard's queries true to
// the metrics and labels kubegcd exports (docs/metrics.md's generated table,
// exported_test.go), and the units hardened, valid and alike (unit_test.go).
// test/e2e and test/e2elease apply the RBAC objects and the FlowSchema to a
// real kube-apiserver.
package deploy

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

func TestAlertRules(t *testing.T) {
	exported := exportedSeries(t)
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
			problems, _ := checkExpr(r.Expr, exported)
			for _, p := range problems {
				t.Errorf("%s: %s", r.Alert, p)
			}
		}
	}
	want := []string{"KubegcdDeletionStalled", "KubegcdNamespaceTerminatingTooLong", "KubegcdGarbageCollectorIdle",
		"KubegcdEnforcementPaused", "KubegcdCleanupRuleRefused", "KubegcdCleanupRuleFailing", "KubegcdCleanupRuleCapped",
		"KubegcdDeletedCopiesNearBound", "KubegcdLeaseCandidateExpired", "KubegcdAuditSinkDropping"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}
