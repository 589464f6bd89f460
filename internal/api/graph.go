package api

// Graph is the ownership graph /graph answers: the objects that have owners
// or dependents, and their ownerReferences. With ?uid= it holds the
// objects connected to those UIDs; with ?at= it is drawn from history as
// it stood then.
//
// The whole graph (no ?uid= nor ?namespace=) streams: its fields come in
// the order truncated, nodes, edges, one element a line, and nodes and
// edges are never null. A filtered graph comes in the order below; nodes
// and edges are empty lists when nothing matched.
type Graph struct {
	// Nodes are the objects, sorted by UID.
	Nodes []GraphNode `json:"nodes"`
	// Edges are the ownerReferences between them, sorted by dependent,
	// then owner.
	Edges []GraphEdge `json:"edges"`
	// Truncated: more objects matched than ?limit= allowed; the graph
	// holds the first ones by UID and the edges among them.
	Truncated bool `json:"truncated"`
}

// GraphNode is one object of the graph.
type GraphNode struct {
	// UID is the object's, or the UID ownerReferences name.
	UID string `json:"uid"`
	// APIVersion is the object's, or, when it is missing, its first
	// reference's.
	APIVersion string `json:"apiVersion"`
	// Kind is the object's, or, when it is missing, its first
	// reference's.
	Kind string `json:"kind"`
	// Namespace is empty for a cluster-scoped object. An owner that is
	// not mirrored takes its first dependent's when its kind is
	// namespaced, as it could only be there; else none.
	Namespace string `json:"namespace"`
	// Name is the object's, or, when it is missing, its first
	// reference's.
	Name string `json:"name"`
	// Missing: the mirror does not hold the object, which only
	// ownerReferences name (their kind and name are the first
	// reference's).
	Missing bool `json:"missing"`
	// BeingDeleted: the object has a deletionTimestamp.
	BeingDeleted bool `json:"beingDeleted"`
	// DeletingDependents: it is being deleted in the foreground (it holds
	// the foregroundDeletion finalizer), so its blocking dependents go
	// first.
	DeletingDependents bool `json:"deletingDependents"`
	// Virtual, in upstream's garbage collector's sense: known only from
	// an ownerReference, not observed. For kubegcd it is the same as
	// Missing.
	Virtual bool `json:"virtual"`
}

// GraphEdge is one ownerReference, from the dependent to its owner.
type GraphEdge struct {
	// Dependent is the UID of the object that holds the reference.
	Dependent string `json:"dependent"`
	// Owner is the UID the reference names.
	Owner string `json:"owner"`
	// Controller: the reference marks the owner as the dependent's
	// managing controller.
	Controller bool `json:"controller"`
	// BlockOwnerDeletion: a foreground deletion of the owner waits for
	// the dependent to go.
	BlockOwnerDeletion bool `json:"blockOwnerDeletion"`
}
