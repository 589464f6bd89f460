package api

// Blocker types: what holds a deletion.
const (
	// BlockerFinalizer: a finalizer that only its controller removes.
	BlockerFinalizer = "finalizer"
	// BlockerDependent: a dependent that a foreground deletion waits for.
	BlockerDependent = "dependent"
	// BlockerNamespaceContent: objects left in a namespace being deleted.
	BlockerNamespaceContent = "namespace-content"
	// BlockerDiscovery: an API group whose discovery fails, so the
	// namespace controller cannot list what it serves.
	BlockerDiscovery = "discovery"
)

// Blocker is one thing that holds a deletion.
type Blocker struct {
	// Type is one of the Blocker types.
	Type string `json:"type"`
	// Target is the object that holds the deletion, when one does.
	Target *Target `json:"target,omitempty"`
	// Finalizer is the finalizer that holds it, for a finalizer blocker.
	Finalizer string `json:"finalizer,omitempty"`
	// GroupVersion is the API group/version whose discovery fails.
	GroupVersion string `json:"groupVersion,omitempty"`
	// Counts are the objects left in a namespace by kind, when there are
	// more than are named.
	Counts map[string]int `json:"counts,omitempty"`
	// Reason says, in one sentence, why it holds the deletion and what
	// would release it.
	Reason string `json:"reason"`
	// Blockers hold Target in turn: a dependent's own finalizers and
	// dependents, a namespace's remaining object's.
	Blockers []Blocker `json:"blockers,omitempty"`
}
