package api

import "time"

// Object is an object's metadata as kubegcd mirrors it: /objects lists
// them, and /objects/{uid} shows one.
type Object struct {
	// The object's UID, the key of /objects/{uid}.
	UID string `json:"uid"`
	// The object's group/version, or version alone for the core group.
	APIVersion string `json:"apiVersion"`
	// The object's kind, such as Deployment.
	Kind string `json:"kind"`
	// The object's namespace; empty for a cluster-scoped object.
	Namespace string `json:"namespace"`
	// The object's name.
	Name string `json:"name"`
	// The object's resourceVersion as kubegcd last saw it.
	ResourceVersion string `json:"resourceVersion"`
	// When the object was created; null when the object did not say.
	CreationTimestamp *time.Time `json:"creationTimestamp"`
	// When the object's deletion was asked for; null while it is not being
	// deleted.
	DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	// The object's finalizers, in its order; an empty list when it has none.
	Finalizers []string `json:"finalizers"`
	// The object's ownerReferences, in its order; an empty list when it has
	// none.
	OwnerReferences []ObjectOwnerRef `json:"ownerReferences"`
}

// Target names the object as a decision would.
func (o *Object) Target() Target {
	return Target{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}
}

// ObjectOwnerRef is an ownerReference as an object's own answers show it
// (/objects, /objects/{uid} and its history): unlike OwnerRef, a field the
// reference leaves unset is null rather than absent.
type ObjectOwnerRef struct {
	// The owner's apiVersion, as the reference gives it.
	APIVersion string `json:"apiVersion"`
	// The owner's kind, as the reference gives it.
	Kind string `json:"kind"`
	// The owner's name, as the reference gives it.
	Name string `json:"name"`
	// The owner's UID, as the reference gives it.
	UID string `json:"uid"`
	// True when the reference marks the managing controller; null when unset.
	Controller *bool `json:"controller"`
	// True when a foreground deletion of the owner waits for this dependent;
	// null when unset.
	BlockOwnerDeletion *bool `json:"blockOwnerDeletion"`
}

// Lookup is the answer of /objects: the objects of a kind, and of a
// namespace and name when asked, sorted by namespace, name, API group and
// UID.
type Lookup struct {
	// The objects found, each as /objects/{uid} shows it. There are several
	// when several API groups serve the kind. An unknown kind or name gives an
	// empty list.
	Items []Object `json:"items"`
	// True when more objects matched than ?limit= allowed; absent when not.
	Truncated bool `json:"truncated,omitempty"`
}

// OwnerState is how the mirror shows an object's owner.
type OwnerState string

// How the mirror shows an object's owner (OwnerStatus.State). Only
// present and being-deleted hold the dependent (ownergc calls them solid);
// the others make the reference dangling or waiting.
const (
	OwnerPresent OwnerState = "present"
	// OwnerMissing: the mirror holds no object of that UID. It is only
	// suspected absent: ownergc confirms with a live GET before it acts.
	OwnerMissing      OwnerState = "missing"
	OwnerBeingDeleted OwnerState = "being-deleted"
	// OwnerDeletingDependents: being deleted in the foreground.
	OwnerDeletingDependents OwnerState = "deleting-dependents"
	// OwnerOtherNamespace: the UID is mirrored in another namespace.
	OwnerOtherNamespace OwnerState = "other-namespace"
	// OwnerNameMismatch: the UID is mirrored under another kind or name.
	OwnerNameMismatch OwnerState = "name-mismatch"
)

// OwnerStates lists how the mirror may show an owner.
var OwnerStates = []OwnerState{OwnerPresent, OwnerMissing, OwnerBeingDeleted, OwnerDeletingDependents,
	OwnerOtherNamespace, OwnerNameMismatch}

// OwnerStatus is one of an object's ownerReferences with what the mirror
// shows of that owner.
type OwnerStatus struct {
	// The owner's UID, as the reference gives it.
	UID string `json:"uid"`
	// The owner's apiVersion, as the reference gives it.
	APIVersion string `json:"apiVersion"`
	// The owner's kind, as the reference gives it.
	Kind string `json:"kind"`
	// Where the owner is or, when missing, where it would have to be (empty for
	// a cluster-scoped kind).
	Namespace string `json:"namespace"`
	// The owner's name, as the reference gives it.
	Name string `json:"name"`
	// What the mirror shows of the owner.
	State OwnerState `json:"state"`
}

// Owner is an owner as /objects/{uid} shows it.
type Owner struct {
	// OwnerStatus is the reference and its owner's state; its fields are
	// Owner's own in JSON.
	OwnerStatus
	// True for a missing owner that neither history nor audit knows: a
	// reference dangling from the start, whose own /objects/{uid}/history is a
	// 404. Absent when false.
	NeverSeen bool `json:"neverSeen,omitempty"`
}

// Dependent is an object whose ownerReferences name a given owner.
type Dependent struct {
	// The dependent's UID.
	UID string `json:"uid"`
	// The dependent's apiVersion.
	APIVersion string `json:"apiVersion"`
	// The dependent's kind.
	Kind string `json:"kind"`
	// The dependent's namespace; empty for a cluster-scoped one.
	Namespace string `json:"namespace"`
	// The dependent's name.
	Name string `json:"name"`
	// True when one of its references to the owner blocks the owner's
	// foreground deletion.
	BlockOwnerDeletion bool `json:"blockOwnerDeletion"`
}

// RecentHistory is the latest of an object's history.
type RecentHistory struct {
	// The latest changes kubegcd saw, oldest first.
	Items []HistoryItem `json:"items"`
	// True when there are older changes, which links.history lists.
	Truncated bool `json:"truncated"`
}

// ObjectLinks are the endpoints that say more about an object: paths of
// this API, escaped.
type ObjectLinks struct {
	// The object's /objects/{uid}/history.
	History string `json:"history"`
	// The object's /objects/{uid}/cascade.
	Cascade string `json:"cascade"`
	// The path of /graph?uid= for the object.
	Graph string `json:"graph"`
}

// ObjectDetail is the answer of /objects/{uid}: what kubegcd knows around
// one object, and why it is, or is not, pending.
type ObjectDetail struct {
	// The object as the mirror holds it.
	Object Object `json:"object"`
	// The owners its ownerReferences name, as the mirror shows them, in its
	// order.
	Owners []Owner `json:"owners"`
	// The objects whose ownerReferences name it, by namespace, kind, name and
	// UID; at most 1,000.
	Dependents []Dependent `json:"dependents"`
	// True when there are more dependents than listed; /graph lists them all.
	// Absent when not.
	DependentsTruncated bool `json:"dependentsTruncated,omitempty"`
	// The decisions pending about it, oldest first, as /pending shows them
	// (without timeLeft).
	Pending []Pending `json:"pending"`
	// The latest audit rows about it, newest first, at most 20; /audit?uid=
	// pages through all of them.
	RecentAudit []AuditEntry `json:"recentAudit"`
	// An explanation in words of why the object is, or is not, pending or
	// gone. In dry-run it says what ownergc decided, also where that left
	// nothing pending. It says what holds its deletion, when anything does.
	// Unless a decision is pending, it says what is wrong with its
	// ownerReferences.
	Why string `json:"why"`
	// Its deletion as /stuck shows it; null when it is not being deleted.
	Stuck *StuckItem `json:"stuck"`
	// The /lint findings about its own ownerReferences.
	Lint []LintFinding `json:"lint"`
	// What it references by name (volumes, env, bindings, backends, declared
	// paths), by field, kind and name; at most 1,000.
	References []ObjectReference `json:"references"`
	// True when it references more than listed. Absent when not.
	ReferencesTruncated bool `json:"referencesTruncated,omitempty"`
	// The objects that reference it by name, by namespace, kind and name; at
	// most 1,000.
	ReferencedBy []ObjectReferrer `json:"referencedBy"`
	// True when more objects reference it than listed. Absent when not.
	ReferencedByTruncated bool `json:"referencedByTruncated,omitempty"`
	// When a reference to it last appeared or went, as kubegcd saw it; absent
	// when none did while kubegcd watched. While referencedBy is not empty, it
	// is referenced now.
	LastReferenced *time.Time `json:"lastReferenced,omitempty"`
	// The cleanup rules that match it now, by rule id.
	Rules []ObjectRuleMatch `json:"rules"`
	// The latest of its history: its last 20 /objects/{uid}/history items,
	// oldest first.
	History RecentHistory `json:"history"`
	// The deleted object it was restored from (kubegcd restore); absent when a
	// restore did not make it.
	RestoredFrom *Restoration `json:"restoredFrom,omitempty"`
	// The cleanup rules that leave it alone because it was restored from the
	// copy of an object they deleted, by rule id; absent when none.
	SparedBy []SparedBy `json:"sparedBy,omitempty"`
	// The URLs of the endpoints that say more about it.
	Links ObjectLinks `json:"links"`
}
