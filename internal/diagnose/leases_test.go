package diagnose

import (
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

func TestClassifyLeases(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ago := func(s int) *time.Time { v := now.Add(-time.Duration(s) * time.Second); return &v }
	secs := func(s int32) *int32 { return &s }
	for _, tc := range []struct {
		name    string
		lease   db.LeaseRow
		role    string
		expired bool
		age     float64 // -1: none
	}{
		{"a node's heartbeat, renewed 10s ago for 40s", db.LeaseRow{Namespace: "kube-node-lease", Name: "n1", RenewTime: ago(10),
			LeaseDurationSeconds: secs(40)}, LeaseRoleNodeHeartbeat, false, 10},
		{"a node's heartbeat, run out", db.LeaseRow{Namespace: "kube-node-lease", Name: "n1", RenewTime: ago(41),
			LeaseDurationSeconds: secs(40)}, LeaseRoleNodeHeartbeat, true, 41},
		{"a kube-apiserver's identity", db.LeaseRow{Namespace: "kube-system", Name: "apiserver-x", IdentityLabel: "kube-apiserver",
			RenewTime: ago(5), LeaseDurationSeconds: secs(3600)}, LeaseRoleAPIServerIdentity, false, 5},
		{"another identity label in kube-system is a leader election", db.LeaseRow{Namespace: "kube-system", Name: "x",
			IdentityLabel: "sample-controller", RenewTime: ago(5), LeaseDurationSeconds: secs(15)}, LeaseRoleLeaderElection, false, 5},
		{"a leader election elsewhere", db.LeaseRow{Namespace: "apps", Name: "kubegcd", RenewTime: ago(20),
			LeaseDurationSeconds: secs(15)}, LeaseRoleLeaderElection, true, 20},
		{"never renewed: expired", db.LeaseRow{Namespace: "apps", Name: "new", LeaseDurationSeconds: secs(15)},
			LeaseRoleLeaderElection, true, -1},
		{"no duration: expired", db.LeaseRow{Namespace: "apps", Name: "odd", RenewTime: ago(1)}, LeaseRoleLeaderElection, true, 1},
		{"renewed exactly a duration ago: not yet", db.LeaseRow{Namespace: "apps", Name: "edge", RenewTime: ago(15),
			LeaseDurationSeconds: secs(15)}, LeaseRoleLeaderElection, false, 15},
	} {
		l := ClassifyLeases([]db.LeaseRow{tc.lease}, now)[0]
		row := tc.lease
		if l.Namespace != row.Namespace || l.Name != row.Name || l.UID != row.UID || l.HolderIdentity != row.HolderIdentity ||
			l.LeaseDurationSeconds != row.LeaseDurationSeconds || l.AcquireTime != row.AcquireTime || l.RenewTime != row.RenewTime ||
			l.LeaseTransitions != row.LeaseTransitions {
			t.Errorf("%s: the row became %+v", tc.name, l)
		}
		if l.Role != tc.role || l.Expired != tc.expired {
			t.Errorf("%s: role %q expired %v, want %q %v", tc.name, l.Role, l.Expired, tc.role, tc.expired)
		}
		switch {
		case tc.age < 0 && l.RenewAgeSeconds != nil:
			t.Errorf("%s: renewed %vs ago, want never", tc.name, *l.RenewAgeSeconds)
		case tc.age >= 0 && (l.RenewAgeSeconds == nil || *l.RenewAgeSeconds != tc.age):
			t.Errorf("%s: renew age %v, want %vs", tc.name, l.RenewAgeSeconds, tc.age)
		}
	}
}
