package diagnose

import (
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// Lease roles in the inventory.
const (
	LeaseRoleLeaderElection    = api.LeaseRoleLeaderElection
	LeaseRoleNodeHeartbeat     = api.LeaseRoleNodeHeartbeat
	LeaseRoleAPIServerIdentity = api.LeaseRoleAPIServerIdentity
)

// LeaseRoles lists the roles, in the order the inventory counts them.
var LeaseRoles = api.LeaseRoles

// Lease is a Lease of the inventory: the mirror's row, its role, and its
// expiry as of when it was classified.
type Lease = api.Lease

// ClassifyLeases gives each Lease its role, from where it lives and its
// labels (a node's heartbeat in kube-node-lease; a kube-apiserver's
// identity in kube-system; any other a leader election), and its expiry as
// of now: renewTime + leaseDurationSeconds past, or never renewed, or
// without a duration.
func ClassifyLeases(rows []db.LeaseRow, now time.Time) []Lease {
	leases := make([]Lease, len(rows))
	for i, row := range rows {
		l := &leases[i]
		*l = Lease{Namespace: row.Namespace, Name: row.Name, UID: row.UID, HolderIdentity: row.HolderIdentity,
			LeaseDurationSeconds: row.LeaseDurationSeconds, AcquireTime: row.AcquireTime, RenewTime: row.RenewTime,
			LeaseTransitions: row.LeaseTransitions}
		switch {
		case l.Namespace == "kube-node-lease":
			l.Role = LeaseRoleNodeHeartbeat
		case l.Namespace == "kube-system" && row.IdentityLabel == "kube-apiserver":
			l.Role = LeaseRoleAPIServerIdentity
		default:
			l.Role = LeaseRoleLeaderElection
		}
		l.Expired = true
		if l.RenewTime != nil {
			age := now.Sub(*l.RenewTime).Seconds()
			l.RenewAgeSeconds = &age
			if l.LeaseDurationSeconds != nil {
				l.Expired = l.RenewTime.Add(time.Duration(*l.LeaseDurationSeconds) * time.Second).Before(now)
			}
		}
	}
	return leases
}
