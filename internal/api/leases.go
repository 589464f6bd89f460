package api

import "time"

// Lease roles in the inventory.
const (
	LeaseRoleLeaderElection    = "leader-election"
	LeaseRoleNodeHeartbeat     = "node-heartbeat"
	LeaseRoleAPIServerIdentity = "apiserver-identity"
)

// LeaseRoles lists the roles, in the order the inventory counts them.
var LeaseRoles = []string{LeaseRoleLeaderElection, LeaseRoleNodeHeartbeat, LeaseRoleAPIServerIdentity}

// Lease is a Lease of the inventory: what the cluster holds of it, its role,
// and its expiry as of the answer.
type Lease struct {
	// Namespace is the Lease's namespace.
	Namespace string `json:"namespace"`
	// Name is the Lease's name.
	Name string `json:"name"`
	// UID is the Lease's UID.
	UID string `json:"uid"`
	// HolderIdentity is the spec's holder; null where unset.
	HolderIdentity *string `json:"holderIdentity"`
	// LeaseDurationSeconds is the spec's duration; null where unset.
	LeaseDurationSeconds *int32 `json:"leaseDurationSeconds"`
	// AcquireTime is the spec's; null where unset.
	AcquireTime *time.Time `json:"acquireTime"`
	// RenewTime is the spec's; null where unset.
	RenewTime *time.Time `json:"renewTime"`
	// LeaseTransitions is the spec's count of holder changes; null where
	// unset.
	LeaseTransitions *int32 `json:"leaseTransitions"`
	// Role says what the Lease is for: node-heartbeat (a Lease in
	// kube-node-lease), apiserver-identity (a kube-apiserver's identity in
	// kube-system) or leader-election (any other).
	Role string `json:"role"`
	// RenewAgeSeconds is how long ago the Lease was renewed; null when
	// never.
	RenewAgeSeconds *float64 `json:"renewAgeSeconds"`
	// Expired: renewTime + leaseDurationSeconds is past. A Lease never
	// renewed, or without a duration, counts as expired.
	Expired bool `json:"expired"`
}

// HolderChange is one holder of a Lease: who, since when (acquireTime,
// or the renewal that took the lease back after it ran out), and when
// kubegcd saw it.
type HolderChange struct {
	// Holder is the holder's identity; empty when the lease was released.
	Holder string `json:"holder"`
	// Since is when the holder took the lease; null when the Lease gave
	// no acquireTime.
	Since *time.Time `json:"since"`
	// Seen is when kubegcd saw the change.
	Seen time.Time `json:"seen"`
}

// LeaseGap is a time when a Lease had no live holder: it ran out before
// anyone renewed or took it, or its holder released it.
type LeaseGap struct {
	// From is when the last holder's lease ran out or was released.
	From time.Time `json:"from"`
	// To is null while the gap lasts.
	To *time.Time `json:"to"`
}

// LeaseItem is a Lease of GET /leases with who held it and when nobody
// did, as far as kubegcd's history knows.
type LeaseItem struct {
	Lease
	// HolderChanges are its holders, oldest first, within
	// --history-retention.
	HolderChanges []HolderChange `json:"holderChanges"`
	// Gaps are the times without a live holder, oldest first. In a gap
	// the lease ran out before it was renewed or taken over, as a watch
	// saw it, or was released, or is expired now.
	Gaps []LeaseGap `json:"gaps"`
}

// LeaseList is the answer of GET /leases, by namespace and name.
type LeaseList struct {
	// Items are the Leases that ?namespace= and ?expired= kept.
	Items []LeaseItem `json:"items"`
}
