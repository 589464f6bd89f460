// Package refs finds the references one object makes to others by name.
// A pod spec names the ConfigMaps, Secrets, claims and ServiceAccount it
// uses; an Ingress names its TLS Secrets and backend Services; a binding
// names its role and its ServiceAccounts. These are not ownerReferences:
// nothing in Kubernetes collects what they point at, and a target may not
// exist at all.
//
// Extraction is a pure function of the object. Ingestion calls it and then
// drops the object, so kubegcd keeps references, never bodies.
package refs

import (
	"cmp"
	"slices"
)

// Ref is one reference from an object to a target, named by its group,
// kind, namespace and name.
type Ref struct {
	// Group is the target's API group: "" for the core group.
	Group string
	Kind  string
	// Namespace is "" for a cluster-scoped target.
	Namespace string
	Name      string
	// Via is the field the reference came from, with list indexes left
	// out, such as spec.template.spec.volumes[].configMap.
	Via string
	// Optional is set when the referrer works without the target:
	// `optional: true`, or an image pull secret.
	Optional bool
	// Prefix is set when Name is a prefix that an ordinal completes: the
	// claims of a StatefulSet's volumeClaimTemplates.
	Prefix bool
}

// Kinds of the targets the extraction names most.
const (
	KindConfigMap      = "ConfigMap"
	KindSecret         = "Secret"
	KindClaim          = "PersistentVolumeClaim"
	KindVolume         = "PersistentVolume"
	KindServiceAccount = "ServiceAccount"
	KindService        = "Service"
)

// collector gathers the references of one object and drops repeats: two
// containers reading one ConfigMap through the same field make one
// reference. A target named through one field both optionally and not is
// required.
type collector struct {
	refs []Ref
	// at indexes refs by key (a reference with Optional unset), once there
	// are more than linearRefs: below that a scan is cheaper than a map.
	at map[Ref]int
}

// linearRefs is how many references a collector scans for a repeat before
// it indexes them. Most objects make a handful.
const linearRefs = 32

func (c *collector) add(r Ref) {
	if r.Name == "" {
		return
	}
	key := r
	key.Optional = false
	if i, ok := c.find(key); ok {
		c.refs[i].Optional = c.refs[i].Optional && r.Optional
		return
	}
	if c.refs == nil {
		c.refs = make([]Ref, 0, 8) // a pod's handful, in one allocation
	}
	c.refs = append(c.refs, r)
	switch {
	case c.at != nil:
		c.at[key] = len(c.refs) - 1
	case len(c.refs) > linearRefs:
		c.at = make(map[Ref]int, 2*len(c.refs))
		for i, k := range c.refs {
			k.Optional = false
			c.at[k] = i
		}
	}
}

// find returns the index of the reference whose key is key.
func (c *collector) find(key Ref) (int, bool) {
	if c.at != nil {
		i, ok := c.at[key]
		return i, ok
	}
	for i, k := range c.refs {
		k.Optional = false
		if k == key {
			return i, true
		}
	}
	return 0, false
}

// sorted returns the references in a stable order, so that an object whose
// references did not change yields the same list each time.
func (c *collector) sorted() []Ref {
	slices.SortFunc(c.refs, compare)
	return c.refs
}

// compare orders references by kind, group, namespace, name, field and
// prefix: a collector's references differ in one of them at least, so the
// order is total.
func compare(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Group, b.Group),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Via, b.Via),
		cmpBool(a.Prefix, b.Prefix))
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
