package api

// Error is the body of every answer that is not 2xx: one line saying what
// went wrong and, where the client can do something, what to do.
type Error struct {
	// What went wrong. Internal causes are logged, never sent.
	Error string `json:"error"`
}

// Target names the object a decision is about, as kubectl would find it.
type Target struct {
	// The object's group/version, or version alone for the core group.
	APIVersion string `json:"apiVersion"`
	// The object's kind.
	Kind string `json:"kind"`
	// The object's namespace; absent for a cluster-scoped object.
	Namespace string `json:"namespace,omitempty"`
	// The object's name.
	Name string `json:"name"`
	// The object's UID.
	UID string `json:"uid"`
}

// String names the target as kubectl would: Kind namespace/name.
func (t Target) String() string {
	if t.Namespace == "" {
		return t.Kind + " " + t.Name
	}
	return t.Kind + " " + t.Namespace + "/" + t.Name
}

// OwnerRef is an ownerReference, field for field as metav1.OwnerReference.
type OwnerRef struct {
	// The owner's apiVersion, as the reference gives it.
	APIVersion string `json:"apiVersion"`
	// The owner's kind, as the reference gives it.
	Kind string `json:"kind"`
	// The owner's name, as the reference gives it.
	Name string `json:"name"`
	// The owner's UID, as the reference gives it.
	UID string `json:"uid"`
	// True when the reference marks the managing controller; absent when unset.
	Controller *bool `json:"controller,omitempty"`
	// True when a foreground deletion of the owner waits for this dependent;
	// absent when unset.
	BlockOwnerDeletion *bool `json:"blockOwnerDeletion,omitempty"`
}
