package api

// Graph is the ownership graph /graph answers: the objects that have owners
// or dependents, and their ownerReferences. With ?uid= it holds the
// objects connected to those UIDs; with ?at= it is drawn from history as
// it stood then. With ?namespace= and ?isolated=true it also holds the
// namespace's objects that have neither owners nor dependents.
//
// The whole graph (no ?uid= nor ?namespace=) streams: its fields come in
// the order truncated, nodes, edges, one element a line, and nodes and
// edges are never null. A filtered graph comes in the order below; nodes
// and edges are empty lists when nothing matched.
type Graph struct {
	// The objects, sorted by UID.
	Nodes []GraphNode `json:"nodes"`
	// The ownerReferences between the objects, sorted by dependent, then owner.
	Edges []GraphEdge `json:"edges"`
	// True when more objects matched than ?limit= allowed. The graph then holds
	// the first ones by UID and the edges among them.
	Truncated bool `json:"truncated"`
}

// GraphNode is one object of the graph.
type GraphNode struct {
	// The object's UID, or the UID that ownerReferences name.
	UID string `json:"uid"`
	// The object's apiVersion; for a missing object, that of its first
	// reference.
	APIVersion string `json:"apiVersion"`
	// The object's kind; for a missing object, that of its first reference.
	Kind string `json:"kind"`
	// The object's namespace; empty for a cluster-scoped object. An owner that
	// is not mirrored takes its first dependent's namespace when its kind is
	// namespaced, as it could only be there; else none.
	Namespace string `json:"namespace"`
	// The object's name; for a missing object, that of its first reference.
	Name string `json:"name"`
	// True when the mirror does not hold the object, which only ownerReferences
	// name. Its kind and name then come from the first reference.
	Missing bool `json:"missing"`
	// True when the object has a deletionTimestamp.
	BeingDeleted bool `json:"beingDeleted"`
	// True when the object is being deleted in the foreground: it holds the
	// foregroundDeletion finalizer, so its blocking dependents go first.
	DeletingDependents bool `json:"deletingDependents"`
	// True for an object known only from an ownerReference, not observed, as
	// upstream's garbage collector calls it. For kubegcd it is the same as
	// missing.
	Virtual bool `json:"virtual"`
}

// GraphEdge is one ownerReference, from the dependent to its owner.
type GraphEdge struct {
	// The UID of the object that holds the reference.
	Dependent string `json:"dependent"`
	// The UID the reference names.
	Owner string `json:"owner"`
	// True when the reference marks the owner as the dependent's managing
	// controller.
	Controller bool `json:"controller"`
	// True when a foreground deletion of the owner waits for the dependent to
	// go.
	BlockOwnerDeletion bool `json:"blockOwnerDeletion"`
}
