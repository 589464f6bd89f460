package diagnose

import (
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Lease roles in the inventory.
const (
	LeaseRoleLeaderElection    = "leader-election"
	LeaseRoleNodeHeartbeat     = "node-heartbeat"
	LeaseRoleAPIServerIdentity = "apiserver-identity"
)

// LeaseRoles lists the roles, in the order the inventory counts them.
var LeaseRoles = []string{LeaseRoleLeaderElection, LeaseRoleNodeHeartbeat, LeaseRoleAPIServerIdentity}

// ClassifyLeases sets each Lease's role, from where it lives and its
// labels (a node's heartbeat in kube-node-lease; a kube-apiserver's
// identity in kube-system; any other a leader election), and its expiry as
// of now: renewTime + leaseDurationSeconds past, or never renewed, or
// without a duration.
func ClassifyLeases(leases []db.LeaseInfo, now time.Time) {
	for i := range leases {
		l := &leases[i]
		switch {
		case l.Namespace == "kube-node-lease":
			l.Role = LeaseRoleNodeHeartbeat
		case l.Namespace == "kube-system" && l.IdentityLabel == "kube-apiserver":
			l.Role = LeaseRoleAPIServerIdentity
		default:
			l.Role = LeaseRoleLeaderElection
		}
		l.Expired, l.RenewAgeSeconds = true, nil
		if l.RenewTime != nil {
			age := now.Sub(*l.RenewTime).Seconds()
			l.RenewAgeSeconds = &age
			if l.LeaseDurationSeconds != nil {
				l.Expired = l.RenewTime.Add(time.Duration(*l.LeaseDurationSeconds) * time.Second).Before(now)
			}
		}
	}
}
