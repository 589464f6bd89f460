package api

import "time"

// LeaseRole is what a Lease is for.
type LeaseRole string

// Lease roles in the inventory.
const (
	LeaseRoleLeaderElection    LeaseRole = "leader-election"
	LeaseRoleNodeHeartbeat     LeaseRole = "node-heartbeat"
	LeaseRoleAPIServerIdentity LeaseRole = "apiserver-identity"
)

// LeaseRoles lists the roles, in the order the inventory counts them.
var LeaseRoles = []LeaseRole{LeaseRoleLeaderElection, LeaseRoleNodeHeartbeat, LeaseRoleAPIServerIdentity}

// Lease is a Lease of the inventory: what the cluster holds of it, its role,
// and its expiry as of the answer.
type Lease struct {
	// The Lease's namespace.
	Namespace string `json:"namespace"`
	// The Lease's name.
	Name string `json:"name"`
	// The Lease's UID.
	UID string `json:"uid"`
	// The holder the spec names; null where unset.
	HolderIdentity *string `json:"holderIdentity"`
	// The duration the spec gives; null where unset.
	LeaseDurationSeconds *int32 `json:"leaseDurationSeconds"`
	// The spec's acquireTime; null where unset.
	AcquireTime *time.Time `json:"acquireTime"`
	// The spec's renewTime; null where unset.
	RenewTime *time.Time `json:"renewTime"`
	// The spec's count of holder changes; null where unset.
	LeaseTransitions *int32 `json:"leaseTransitions"`
	// What the Lease is for: node-heartbeat (a Lease in kube-node-lease),
	// apiserver-identity (a kube-apiserver's identity in kube-system) or
	// leader-election (any other).
	Role LeaseRole `json:"role"`
	// How long ago the Lease was renewed; null when never.
	RenewAgeSeconds *float64 `json:"renewAgeSeconds"`
	// True when renewTime plus leaseDurationSeconds is past. A Lease never
	// renewed, or without a duration, counts as expired.
	Expired bool `json:"expired"`
	// The spec's strategy under coordinated leader election: how the API server
	// picks the holder among the Lease's candidates, such as
	// OldestEmulationVersion. Absent where unset.
	Strategy *string `json:"strategy,omitempty"`
	// The spec's preferred holder: the candidate the election chose, to which
	// the holder should hand the Lease. Absent where unset.
	PreferredHolder *string `json:"preferredHolder,omitempty"`
}

// HolderChange is one holder of a Lease: who, since when (acquireTime,
// or the renewal that took the lease back after it ran out), and when
// kubegcd saw it.
type HolderChange struct {
	// The holder's identity; empty when the lease was released.
	Holder string `json:"holder"`
	// When the holder took the lease; null when the Lease gave no acquireTime.
	Since *time.Time `json:"since"`
	// When kubegcd saw the change.
	Seen time.Time `json:"seen"`
}

// LeaseGap is a time when a Lease had no live holder: it ran out before
// anyone renewed or took it, or its holder released it.
type LeaseGap struct {
	// When the last holder's lease ran out or was released.
	From time.Time `json:"from"`
	// When a holder took the lease again; null while the gap lasts.
	To *time.Time `json:"to"`
}

// LeaseItem is a Lease of GET /leases with who held it and when nobody
// did, as far as kubegcd's history knows.
type LeaseItem struct {
	Lease
	// The Lease's holders, oldest first, within --history-retention.
	HolderChanges []HolderChange `json:"holderChanges"`
	// The times without a live holder, oldest first. In a gap the lease ran out
	// before it was renewed or taken over, as a watch saw it, or was released,
	// or is expired now.
	Gaps []LeaseGap `json:"gaps"`
	// The LeaseCandidates that stand for the Lease, by name. Absent when none
	// does.
	Candidates []LeaseCandidate `json:"candidates,omitempty"`
}

// LeaseCandidate is a LeaseCandidate (coordination.k8s.io): one component
// that stands in the coordinated election of a Lease of its namespace.
type LeaseCandidate struct {
	// The candidate's namespace, which is also the namespace of its Lease.
	Namespace string `json:"namespace"`
	// The candidate's name. It is the candidate's identity: the Lease's
	// holderIdentity once the candidate is elected.
	Name string `json:"name"`
	// The candidate's UID.
	UID string `json:"uid"`
	// The spec's leaseName: the Lease the candidate stands for.
	LeaseName string `json:"leaseName"`
	// The spec's binary version of the component.
	BinaryVersion string `json:"binaryVersion"`
	// The spec's emulation version; empty where unset.
	EmulationVersion string `json:"emulationVersion"`
	// The spec's strategy, the one the candidate asks for.
	Strategy string `json:"strategy"`
	// When the election last asked the candidate to renew; null where unset.
	PingTime *time.Time `json:"pingTime"`
	// When the candidate last renewed; null where unset.
	RenewTime *time.Time `json:"renewTime"`
	// How long ago the candidate renewed; null when never.
	RenewAgeSeconds *float64 `json:"renewAgeSeconds"`
	// True when the candidate never renewed, or renewed more than 30 minutes
	// ago. The election passes it over, and the API server's LeaseCandidate
	// garbage collector deletes it.
	Expired bool `json:"expired"`
}

// LeaseFindingKind is what a LeaseFinding is about.
type LeaseFindingKind string

// Kinds of LeaseFinding.
const (
	// LeaseFindingHolderNotPreferred: the Lease's holder has not been its
	// preferred holder for longer than two lease durations.
	LeaseFindingHolderNotPreferred LeaseFindingKind = "holder-not-preferred"
	// LeaseFindingCandidateExpired: a candidate has not renewed for more
	// than 30 minutes.
	LeaseFindingCandidateExpired LeaseFindingKind = "candidate-expired"
	// LeaseFindingNoLiveCandidate: a coordinated Lease (strategy set) has
	// no candidate that is not expired.
	LeaseFindingNoLiveCandidate LeaseFindingKind = "no-live-candidate"
	// LeaseFindingCandidateWithoutLease: a candidate names a Lease its
	// namespace does not hold.
	LeaseFindingCandidateWithoutLease LeaseFindingKind = "candidate-without-lease"
)

// LeaseFindingKinds lists the kinds of LeaseFinding.
var LeaseFindingKinds = []LeaseFindingKind{LeaseFindingHolderNotPreferred, LeaseFindingCandidateExpired,
	LeaseFindingNoLiveCandidate, LeaseFindingCandidateWithoutLease}

// LeaseFinding is something about a Lease or its candidates that an
// operator should look at.
type LeaseFinding struct {
	// What was found, as a stable identifier.
	Kind LeaseFindingKind `json:"kind"`
	// The namespace of the Lease and of the candidate.
	Namespace string `json:"namespace"`
	// The name of the Lease the finding is about, or of the one the candidate
	// names.
	Lease string `json:"lease"`
	// The LeaseCandidate's name in a finding about one; absent otherwise.
	Candidate string `json:"candidate,omitempty"`
	// What was found, in words.
	Message string `json:"message"`
}

// LeaseList is the answer of GET /leases, by namespace and name.
type LeaseList struct {
	// The Leases that ?namespace= and ?expired= kept.
	Items []LeaseItem `json:"items"`
	// The LeaseCandidates of ?namespace= that name a Lease their namespace does
	// not hold, by namespace, Lease and name. Absent when none does, or when
	// ?expired= is given.
	CandidatesWithoutLease []LeaseCandidate `json:"candidatesWithoutLease,omitempty"`
	// What an operator should look at in items and candidatesWithoutLease, by
	// namespace, Lease, kind and candidate. Absent when there is nothing.
	Findings []LeaseFinding `json:"findings,omitempty"`
}
