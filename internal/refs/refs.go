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
	"sort"
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
	at   map[Ref]int // a reference with Optional unset → its index in refs
}

func (c *collector) add(r Ref) {
	if r.Name == "" {
		return
	}
	if c.at == nil {
		c.at = map[Ref]int{}
	}
	key := r
	key.Optional = false
	if i, ok := c.at[key]; ok {
		c.refs[i].Optional = c.refs[i].Optional && r.Optional
		return
	}
	c.at[key] = len(c.refs)
	c.refs = append(c.refs, r)
}

// sorted returns the references in a stable order, so that an object whose
// references did not change yields the same list each time.
func (c *collector) sorted() []Ref {
	sort.Slice(c.refs, func(i, j int) bool { return less(c.refs[i], c.refs[j]) })
	return c.refs
}

func less(a, b Ref) bool {
	for _, p := range [][2]string{
		{a.Kind, b.Kind}, {a.Group, b.Group}, {a.Namespace, b.Namespace}, {a.Name, b.Name}, {a.Via, b.Via},
	} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return !a.Optional && b.Optional
}
