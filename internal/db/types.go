package db

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// Resource identifies one API resource that kubegcd watches.
type Resource struct {
	ID         int64
	Group      string
	Version    string
	Resource   string
	Kind       string
	Namespaced bool
	// ShortNames are the short names discovery lists (cm, deploy). Lookups
	// by kind accept them, and EnsureResource records them.
	ShortNames []string
	// Extraction and KeptKeys say how ingestion extracts the resource's
	// objects: the typed fields and references it reads, and the labels
	// and annotations it keeps. EnsureResource drops the resume point
	// when either changed, so the resource is listed again.
	Extraction string
	KeptKeys   string
}

// Object is the metadata kubegcd keeps of one cluster object.
type Object struct {
	UID                        string
	APIVersion                 string
	Kind                       string
	Namespace                  string
	Name                       string
	ResourceVersion            string
	CreationTimestamp          *time.Time
	DeletionTimestamp          *time.Time
	DeletionGracePeriodSeconds *int64
	Finalizers                 []string
	OwnerReferences            []api.OwnerRef

	// Typed columns, set for the resources that have them.
	Pod            *Pod
	Node           *Node
	Lease          *Lease
	LeaseCandidate *LeaseCandidate
	StorageVersion *StorageVersion
	// NamespaceStatus is set for a Namespace object.
	NamespaceStatus *NamespaceStatus

	// What the cleanup rules read (mirror_extracted.go): the references
	// the object makes, its kept labels and annotations, sorted by key,
	// and the typed fields of its kind.
	Refs        []Ref
	Labels      []KeyValue
	Annotations []KeyValue
	Job         *Job
	CronJob     *CronJob
	Secret      *Secret
	PVC         *PVC
	Workload    *Workload
}

// IsForegroundDeleting is true for an object being deleted with the
// foregroundDeletion finalizer. It waits for its blocking dependents.
func (o *Object) IsForegroundDeleting() bool { return o.deletingWith("foregroundDeletion") }

// IsOrphaning is true for an object being deleted with the orphan
// finalizer. It waits until no dependent names it.
func (o *Object) IsOrphaning() bool { return o.deletingWith("orphan") }

func (o *Object) deletingWith(finalizer string) bool {
	return o.DeletionTimestamp != nil && slices.Contains(o.Finalizers, finalizer)
}

// DeletionRequested is when deletion was asked for: deletionTimestamp less
// the grace period. A pod's deletionTimestamp is when its grace ends.
func (o *Object) DeletionRequested() time.Time {
	if o.DeletionTimestamp == nil {
		return time.Time{}
	}
	t := *o.DeletionTimestamp
	if o.DeletionGracePeriodSeconds != nil {
		t = t.Add(-time.Duration(*o.DeletionGracePeriodSeconds) * time.Second)
	}
	return t
}

// Pod holds the pod fields the pod garbage collector decides on.
type Pod struct {
	Phase      string
	Reason     string
	NodeName   string
	Generation int64
	// evictedRank is the pod's first key in the deletion order, 0 for an
	// evicted pod, as the query computed it. A page's cursor carries it.
	evictedRank int
}

// Node holds the node fields PodGC and the TTL controller decide on.
type Node struct {
	Ready         string // status of the Ready condition, "" when absent
	Taints        []Taint
	TTLAnnotation *string
}

// Taint is a node taint.
type Taint struct {
	Key, Value, Effect string
}

// MarshalJSON writes t as the nodes table keeps it: with the API's field
// names, and without empty fields. PodGC's queries read it ($.key).
func (t Taint) MarshalJSON() ([]byte, error) {
	return marshalFields("key", t.Key, "value", t.Value, "effect", t.Effect)
}

// UnmarshalJSON reads t as the nodes table keeps it.
func (t *Taint) UnmarshalJSON(b []byte) error {
	f, err := unmarshalFields(b)
	*t = Taint{Key: f["key"], Value: f["value"], Effect: f["effect"]}
	return err
}

// Lease holds a coordination.k8s.io Lease's spec.
type Lease struct {
	HolderIdentity       *string
	LeaseDurationSeconds *int32
	AcquireTime          *time.Time
	RenewTime            *time.Time
	LeaseTransitions     *int32
	IdentityLabel        *string // apiserver.kubernetes.io/identity
	// Strategy and PreferredHolder are set under coordinated leader
	// election: the strategy that picks the holder, and the holder the
	// election controller wants next.
	Strategy        *string
	PreferredHolder *string
}

// LeaseCandidate holds a coordination.k8s.io LeaseCandidate's spec. A
// candidate is one component standing in the coordinated election of the
// Lease LeaseName in its namespace.
type LeaseCandidate struct {
	LeaseName        string
	BinaryVersion    string
	EmulationVersion string
	Strategy         string
	// PingTime is when the election controller last asked the candidate to
	// renew. RenewTime is when the candidate last did.
	PingTime  *time.Time
	RenewTime *time.Time
}

// StorageVersion holds a StorageVersion's status.
type StorageVersion struct {
	CommonEncodingVersion *string
	Entries               []StorageVersionEntry
}

// StorageVersionEntry is one API server's entry in status.storageVersions.
type StorageVersionEntry struct {
	APIServerID       string
	EncodingVersion   string
	DecodableVersions []string
	ServedVersions    []string
}

// TargetOf returns the Target of a mirrored object.
func TargetOf(o *Object) api.Target {
	return api.Target{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}
}

// AuditEntry is one decision in the history.
// The API shows it as api.AuditEntry.
type AuditEntry struct {
	ID         int64
	Time       time.Time
	Instance   string
	Controller api.Controller
	Rule       string
	Action     api.Action
	Target     api.Target
	// Facts are the rule's facts as JSON, stored as they are.
	Facts   json.RawMessage
	Reason  string
	DryRun  bool
	Outcome api.Outcome
	Error   string
	// IntentID is the intent this row settles (see Intent). Writing the row
	// resolves the intent in the same transaction.
	IntentID int64
}

// Settles reports whether e records a decision carried out: applied, or its
// object already gone. What was pending about its target goes with it.
func (e *AuditEntry) Settles() bool {
	return !e.DryRun && (e.Outcome == api.OutcomeApplied || e.Outcome == api.OutcomeNotFound)
}

// Pending is a decision a controller holds and has not (yet) applied.
// The API shows it as api.Pending.
type Pending struct {
	Controller api.Controller
	Rule       string
	Action     api.Action
	Reason     string
	Since      time.Time
	// NotBefore, when set, is the earliest time the decision may be acted
	// on: the end of a quarantine or of a back-off.
	NotBefore       *time.Time
	Target          api.Target
	ResourceVersion string
}

// key returns p's place in the listing.
func (p *Pending) key() PendingKey {
	return PendingKey{Since: p.Since, Controller: p.Controller, UID: p.Target.UID, Action: p.Action}
}

// API is the row as the API shows it: what GET /audit sends, and what the
// audit sinks ship.
func (e *AuditEntry) API() api.AuditEntry {
	return api.AuditEntry{ID: e.ID, Time: e.Time, Instance: e.Instance, Controller: e.Controller, Rule: e.Rule,
		Action: e.Action, Target: e.Target, Facts: e.Facts, Reason: e.Reason, DryRun: e.DryRun, Outcome: e.Outcome,
		Error: e.Error}
}

// Size estimates the memory o holds, in bytes: its strings and the
// structs around them. A list bounds what it holds at once by it.
func (o *Object) Size() int {
	const object, ref, kv, ownerRef = 512, 96, 32, 96
	n := object + len(o.UID) + len(o.APIVersion) + len(o.Kind) + len(o.Namespace) + len(o.Name) +
		len(o.ResourceVersion)
	for _, f := range o.Finalizers {
		n += 16 + len(f)
	}
	for _, r := range o.OwnerReferences {
		n += ownerRef + len(r.APIVersion) + len(r.Kind) + len(r.Name) + len(r.UID)
	}
	for _, r := range o.Refs {
		n += ref + len(r.Group) + len(r.Kind) + len(r.Namespace) + len(r.Name) + len(r.Via)
	}
	for _, l := range [][]KeyValue{o.Labels, o.Annotations} {
		for _, e := range l {
			n += kv + len(e.Key) + len(e.Value)
		}
	}
	return n
}
