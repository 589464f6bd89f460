package diagnose

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

func TestExplainObject(t *testing.T) {
	dangling := api.LintFinding{Rule: api.LintDanglingOwner.ID, Name: api.LintDanglingOwner.Name, Severity: api.SeverityWarning,
		OwnerReference: api.OwnerRef{Kind: "Deployment", Name: "web"}, Message: "no object with uid u1 is in the mirror."}
	stuck := &api.StuckItem{Explanation: "ConfigMap a/x was asked to be deleted 2h0m0s ago and still exists. It is held by its finalizer example.com/hold, to be removed by the controller of example.com."}
	tests := []struct {
		name     string
		pending  bool
		stuck    *api.StuckItem
		findings []api.LintFinding
		want     string
	}{
		{name: "nothing more", want: "Why."},
		{name: "being deleted", stuck: stuck, want: "Why. " + stuck.Explanation},
		{name: "finding", findings: []api.LintFinding{dangling},
			want: "Why. Its ownerReference to Deployment web: no object with uid u1 is in the mirror (KG-LINT-01 dangling-owner, warning)."},
		{name: "a pending decision is the answer", pending: true, findings: []api.LintFinding{dangling}, want: "Why."},
		{name: "pending and being deleted", pending: true, stuck: stuck, findings: []api.LintFinding{dangling}, want: "Why. " + stuck.Explanation},
		{name: "stuck without words", stuck: &api.StuckItem{}, want: "Why."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ExplainObject("Why.", tc.pending, tc.stuck, tc.findings)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ExplainObject (-want +got):\n%s", diff)
			}
		})
	}
}
