package lcgc

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
)

// now is the tests' fixed clock.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ago is now less d.
func ago(d time.Duration) *time.Time {
	t := now.Add(-d)
	return &t
}

// TestDecide: the expiry rule of upstream's isLeaseCandidateExpired, on a
// candidate as read live, at a fixed clock.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name     string
		renew    *time.Time
		deleting bool
		want     verdict
		reason   string // a part of the decision's reason
	}{
		{name: "never renewed", renew: nil, want: verdictDelete, reason: "never renewed (spec.renewTime unset)"},
		{name: "renewed 31 minutes ago", renew: ago(31 * time.Minute), want: verdictDelete,
			reason: "last renewal (spec.renewTime 2026-03-01T11:29:00Z) is more than 30m0s old"},
		{name: "renewed a microsecond past the boundary", renew: ago(ValidFor + time.Microsecond), want: verdictDelete},
		{name: "renewed exactly at the boundary", renew: ago(ValidFor), want: verdictRenewed},
		{name: "renewed between the mirror's pass and the live read", renew: ago(time.Second), want: verdictRenewed},
		{name: "renewed in the future (clock skew)", renew: ago(-time.Minute), want: verdictRenewed},
		{name: "expired and deleting already", renew: ago(time.Hour), deleting: true, want: verdictDeleting},
		{name: "never renewed and deleting already", renew: nil, deleting: true, want: verdictDeleting},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := candidate{APIVersion: "coordination.k8s.io/v1beta1", Namespace: "kube-system", Name: "kcm-a", UID: "uid-a",
				ResourceVersion: "42", LeaseName: "kube-controller-manager", RenewTime: tc.renew, Deleting: tc.deleting}
			d, v := decide(c, now)
			if v != tc.want {
				t.Fatalf("verdict %s, want %s", v, tc.want)
			}
			if v != verdictDelete {
				if d.Rule != "" {
					t.Errorf("a kept candidate has a decision: %+v", d)
				}
				return
			}
			want := api.Target{APIVersion: "coordination.k8s.io/v1beta1", Kind: "LeaseCandidate", Namespace: "kube-system", Name: "kcm-a", UID: "uid-a"}
			if diff := cmp.Diff(want, d.Target); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
			if d.Controller != api.ControllerLCGC || d.Rule != "KG-04-01" || d.Action != "delete" || d.ResourceVersion != "42" || !d.DecidedAt.Equal(now) {
				t.Errorf("decision %+v", d)
			}
			if !strings.Contains(d.Reason, tc.reason) || !strings.HasSuffix(d.Reason, "read live") {
				t.Errorf("reason %q, want it to say %q and that it was read live", d.Reason, tc.reason)
			}
			facts := d.Facts.(map[string]any)
			if facts["leaseName"] != "kube-controller-manager" || facts["validFor"] != "30m0s" {
				t.Errorf("facts %v", facts)
			}
			if _, has := facts["renewTime"]; has != (tc.renew != nil) {
				t.Errorf("facts %v: renewTime recorded %v, want %v", facts, has, tc.renew != nil)
			}
		})
	}
}

// TestDecisionIsStable: the same candidate decided at two times makes the
// same reason, so that dry-run audits a standing decision once.
func TestDecisionIsStable(t *testing.T) {
	c := candidate{Namespace: "ns", Name: "x", UID: "u", ResourceVersion: "1", RenewTime: ago(time.Hour)}
	a, _ := decide(c, now)
	b, _ := decide(c, now.Add(time.Hour))
	if a.Reason != b.Reason {
		t.Errorf("reasons differ over time:\n%s\n%s", a.Reason, b.Reason)
	}
}
