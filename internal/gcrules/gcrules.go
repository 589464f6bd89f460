// Package gcrules holds the ownership garbage collector's rules (docs/rules.md)
// as pure functions of facts: how one ownerReference is classified from what
// is known of its owner, and what is decided about an object from its
// classified references. ownergc establishes the facts (mirror, live GET,
// absent cache, dry-run overlay) and acts; the diagnosis code establishes
// them from the mirror alone and previews. Both decide here, so a preview
// and the collector cannot disagree.
package gcrules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubegcd/kubegcd/internal/api"
)

// Finalizers with a meaning to the garbage collector.
const (
	FinalizerOrphan     = "orphan"
	FinalizerForeground = "foregroundDeletion"
)

// Rule ids (docs/rules.md) that decisions name. The others shape the facts:
// BR-21-04 (an owner re-created under its name is another owner: UIDs are
// compared) and BR-21-06 (confirmed absences are remembered) are
// Classify's Authoritative lookups.
const (
	RuleCascade      = "BR-21-01" // dependents of a deleted owner go
	RuleOrphan       = "BR-21-02" // dependents of an owner deleted with orphan lose the reference
	RuleForeground   = "BR-21-03" // dependents go before an owner deleted in the foreground
	RuleVirtualOwner = "BR-21-05" // an owner missing from the mirror is only suspected absent
	RuleNamespace    = "BR-21-07" // a cluster-scoped dependent cannot have a namespaced owner
)

// ActionNone is a Decision's Action when there is nothing to do.
const ActionNone api.Action = ""

// Propagation policies, spelled as metav1.DeletionPropagation (this
// package imports nothing from Kubernetes, so that everything can).
const (
	PropagationBackground = "Background"
	PropagationForeground = "Foreground"
	PropagationOrphan     = "Orphan"
)

// State is the classification of one ownerReference.
type State string

const (
	Solid    State = "solid"    // the owner exists (and is not being deleted in the foreground)
	Dangling State = "dangling" // no object with that UID at those coordinates
	Waiting  State = "waiting"  // the owner is being deleted in the foreground
	// Unverified: the mirror does not show the owner at those coordinates;
	// it is only suspected absent until a live GET says so (BR-21-05).
	Unverified State = "unverified"
	// UnknownKind: the API does not serve the owner's kind; retried after
	// discovery, never taken for an absent owner.
	UnknownKind State = "unknown-kind"
	// InvalidNamespace: a cluster-scoped dependent names a namespaced owner
	// kind, which can never resolve (BR-21-07).
	InvalidNamespace State = "invalid-namespace"
)

// Ref is one ownerReference of a dependent.
type Ref struct {
	APIVersion         string
	Kind               string
	Name               string
	UID                string
	BlockOwnerDeletion bool
}

// Kind is what discovery says of a reference's owner kind.
type Kind struct {
	Served     bool
	Namespaced bool
}

// Owner is an object found where a reference points: by UID in the mirror,
// or by name in a live GET.
type Owner struct {
	UID        string
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	Deleting   bool // it has a deletionTimestamp
	Finalizers []string
}

// Lookup says how an owner was looked for.
type Lookup int

const (
	// Mirror: looked up by UID in the mirror, which may lag; not finding
	// it there proves nothing.
	Mirror Lookup = iota
	// Authoritative: a live GET, a cached absence or an earlier decision;
	// not finding it proves it absent.
	Authoritative
)

// OwnerNamespace is the only namespace a reference's owner can be in: the
// dependent's for a namespaced kind, none for a cluster-scoped one (BR-21-07).
func OwnerNamespace(dependentNamespace string, k Kind) string {
	if k.Namespaced {
		return dependentNamespace
	}
	return ""
}

// Mismatch says why an owner found by UID is not the one ref names: "" when
// it is, else other-namespace (a namespaced owner outside the dependent's
// namespace) or name-mismatch (another name, kind or group).
func Mismatch(ref Ref, ownerNamespace string, o *Owner) string {
	switch {
	case o.Namespace != ownerNamespace:
		return "other-namespace"
	case o.UID != ref.UID || o.Name != ref.Name || o.Kind != ref.Kind || Group(o.APIVersion) != Group(ref.APIVersion):
		return "name-mismatch"
	}
	return ""
}

// Classify decides the state of ref, a reference of a dependent in
// dependentNamespace, from its owner kind and the object found where it
// points (nil when none), looked up as lookup says. It is upstream's
// classifyReferences for one reference (isDangling, then
// waitingForDependentsDeletion).
func Classify(dependentNamespace string, ref Ref, k Kind, owner *Owner, lookup Lookup) State {
	switch {
	case !k.Served:
		return UnknownKind
	case dependentNamespace == "" && k.Namespaced:
		return InvalidNamespace
	case owner == nil || Mismatch(ref, OwnerNamespace(dependentNamespace, k), owner) != "":
		if lookup == Authoritative {
			return Dangling
		}
		return Unverified
	case owner.Deleting && slices.Contains(owner.Finalizers, FinalizerForeground):
		return Waiting
	}
	return Solid
}

// Group returns the group of an apiVersion ("" for the core group).
func Group(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// Classified is a reference with its state.
type Classified struct {
	Ref
	State State
}

// Object is what a decision needs of the object decided about.
type Object struct {
	Deleting   bool // it has a deletionTimestamp
	Finalizers []string
	Refs       []Classified
	// HasDependents and CycleDependent matter only when NeedDependents
	// says so. CycleDependent names ("Kind/name") one of its dependents
	// that is itself being deleted in the foreground; "" when none.
	HasDependents  bool
	CycleDependent string
}

// Decision is what the collector does about an object.
type Decision struct {
	Action api.Action // ActionNone: nothing to do
	Rule   string
	// Propagation of a delete.
	Propagation string
	// Refs: the owner UIDs whose references are removed or unblocked.
	Refs   []string
	Reason string
	// Then is decided at once after this one succeeds: the cycle guard
	// unblocks, then deletes in the foreground, in one pass.
	Then *Decision
}

// NeedDependents reports whether deciding about an object with refs needs
// to know its dependents (HasDependents, CycleDependent): only when no
// owner is solid and some wait in the foreground.
func NeedDependents(refs []Classified) bool {
	solid, waiting := false, false
	for _, r := range refs {
		solid = solid || r.State == Solid
		waiting = waiting || r.State == Waiting
	}
	return !solid && waiting
}

// Plan decides about o, as upstream's attemptToDeleteItem and
// processDeletingDependentsItem do. Every reference must be classified as
// solid, dangling or waiting, except that one InvalidNamespace reference
// keeps the object (BR-21-07); an unverified or unknown-kind reference
// cannot be decided on, and Plan says to wait.
func Plan(o Object) Decision {
	if o.Deleting {
		switch {
		case slices.Contains(o.Finalizers, FinalizerOrphan):
			return Decision{Action: api.ActionOrphanDependents, Rule: RuleOrphan}
		case slices.Contains(o.Finalizers, FinalizerForeground):
			return Decision{Action: api.ActionDeleteDependents, Rule: RuleForeground}
		}
		// Deleted by someone else and waiting on other finalizers: never
		// sent a second delete.
		return Decision{}
	}
	if len(o.Refs) == 0 {
		return Decision{}
	}
	var solid, dangling, waiting []string
	for _, r := range o.Refs {
		switch r.State {
		case Solid:
			solid = append(solid, r.UID)
		case Dangling:
			dangling = append(dangling, r.UID)
		case Waiting:
			waiting = append(waiting, r.UID)
		case InvalidNamespace:
			return Decision{Action: api.ActionKeep, Rule: RuleNamespace, Refs: []string{r.UID},
				Reason: fmt.Sprintf("cluster-scoped object names namespaced owner kind %s (%s %s): the reference can never resolve, so the object is kept",
					r.Kind, r.Name, r.UID)}
		case UnknownKind:
			return Decision{Rule: RuleCascade, Refs: []string{r.UID},
				Reason: fmt.Sprintf("the API does not serve owner kind %s in %s: retried after the next discovery", r.Kind, r.APIVersion)}
		default:
			return Decision{Rule: RuleVirtualOwner, Refs: []string{r.UID},
				Reason: fmt.Sprintf("owner %s %s %s is not in the mirror: only suspected absent until a live GET confirms it", r.Kind, r.Name, r.UID)}
		}
	}

	switch {
	case len(solid) > 0:
		if len(dangling)+len(waiting) == 0 {
			return Decision{}
		}
		// Keep the object; drop only the references that would hold it or
		// its owners (a waiting reference left in place would block its
		// owner's foreground deletion forever).
		remove := append(dangling, waiting...)
		exist, gone := "1 owner still exists", "1 reference to an owner that is"
		if len(solid) > 1 {
			exist = fmt.Sprintf("%d owners still exist", len(solid))
		}
		if len(remove) > 1 {
			gone = fmt.Sprintf("%d references to owners that are", len(remove))
		}
		return Decision{Action: api.ActionRemoveOwnerRefs, Rule: RuleCascade, Refs: remove,
			Reason: exist + "; removing " + gone + " gone or being deleted"}

	case len(waiting) > 0 && o.HasDependents:
		del := Decision{Action: api.ActionDelete, Rule: RuleForeground, Propagation: PropagationForeground,
			Reason: "every owner is gone or being deleted in the foreground, and the object has dependents of its own: deleting it in the foreground"}
		if o.CycleDependent == "" {
			return del
		}
		var blocking []string
		for _, r := range o.Refs {
			if r.BlockOwnerDeletion {
				blocking = append(blocking, r.UID)
			}
		}
		if len(blocking) == 0 {
			return del
		}
		return Decision{Action: api.ActionUnblockRefs, Rule: RuleForeground, Refs: blocking, Then: &del,
			Reason: fmt.Sprintf("dependent %s is itself deleting its dependents: making this object's owner references non-blocking to break the cycle",
				o.CycleDependent)}
	}

	// No solid owner: the object is garbage. Its own finalizers choose how
	// its dependents go (BR-21-01, -04).
	policy := PropagationBackground
	switch {
	case slices.Contains(o.Finalizers, FinalizerOrphan):
		policy = PropagationOrphan
	case slices.Contains(o.Finalizers, FinalizerForeground):
		policy = PropagationForeground
	}
	return Decision{Action: api.ActionDelete, Rule: RuleCascade, Propagation: policy, Reason: noOwnerReason(len(dangling), len(waiting), policy)}
}

// noOwnerReasons holds noOwnerReason's answers for the usual counts, made
// once: a cascade preview decides thousands of objects, most of them with
// one owner gone.
var noOwnerReasons = func() map[[2]int]map[string]string {
	m := map[[2]int]map[string]string{}
	for d := range 4 {
		for w := range 4 {
			m[[2]int{d, w}] = map[string]string{}
			for _, p := range []string{PropagationBackground, PropagationForeground, PropagationOrphan} {
				m[[2]int{d, w}][p] = formatNoOwnerReason(d, w, p)
			}
		}
	}
	return m
}()

// noOwnerReason says why an object with dangling owners gone and waiting
// being deleted in the foreground, and no other, is deleted with policy.
func noOwnerReason(dangling, waiting int, policy string) string {
	if r, ok := noOwnerReasons[[2]int{dangling, waiting}][policy]; ok {
		return r
	}
	return formatNoOwnerReason(dangling, waiting, policy)
}

func formatNoOwnerReason(dangling, waiting int, policy string) string {
	return fmt.Sprintf("no owner exists (%d gone, %d being deleted in the foreground): deleting with propagation %s", dangling, waiting, policy)
}
