package api

// BlockerType is the kind of thing that holds a deletion.
type BlockerType string

// Blocker types: what holds a deletion.
const (
	// BlockerFinalizer: a finalizer that only its controller removes.
	BlockerFinalizer BlockerType = "finalizer"
	// BlockerDependent: a dependent that a foreground deletion waits for.
	BlockerDependent BlockerType = "dependent"
	// BlockerNamespaceContent: objects left in a namespace being deleted.
	BlockerNamespaceContent BlockerType = "namespace-content"
	// BlockerDiscovery: an API group whose discovery fails, so the
	// namespace controller cannot list what it serves.
	BlockerDiscovery BlockerType = "discovery"
)

// BlockerTypes lists the blocker types.
var BlockerTypes = []BlockerType{BlockerFinalizer, BlockerDependent, BlockerNamespaceContent, BlockerDiscovery}

// Blocker is one thing that holds a deletion.
type Blocker struct {
	// The kind of thing that holds the deletion.
	Type BlockerType `json:"type"`
	// The object that holds the deletion, when one does.
	Target *Target `json:"target,omitempty"`
	// The finalizer that holds the deletion, for a finalizer blocker.
	Finalizer string `json:"finalizer,omitempty"`
	// The API group/version whose discovery fails.
	GroupVersion string `json:"groupVersion,omitempty"`
	// The objects left in a namespace, counted by kind, when there are more
	// than are named.
	Counts map[string]int `json:"counts,omitempty"`
	// Why this holds the deletion and what would release it, in one sentence.
	Reason string `json:"reason"`
	// What holds the target's own deletion in turn: its finalizers and the
	// dependents it waits for. Only a target being deleted has them.
	Blockers []Blocker `json:"blockers,omitempty"`
}
