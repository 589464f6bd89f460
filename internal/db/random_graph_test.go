package db

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// randomGraphUID names the ith of n objects of a random graph: the names
// do not follow the order in which objects own each other.
func randomGraphUID(i, n int) string { return fmt.Sprintf("u%03d", i*7919%n) }

// randomGraph returns n ConfigMaps, each with fewer than maxRefs owner
// references: mostly to an earlier object (trees), some to any (cycles),
// to one not mirrored (gone-N), or twice to the same owner. With varied,
// references differ in name and blockOwnerDeletion, a tenth of the
// objects are being deleted and a tenth have a finalizer, as a cascade
// preview reads them.
func randomGraph(r *rand.Rand, n, maxRefs int, varied bool) []*Object {
	var objs []*Object
	for i := range n {
		o := &Object{UID: randomGraphUID(i, n), APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("o", i), ResourceVersion: "1"}
		if varied {
			switch r.IntN(10) {
			case 0:
				now := time.Now()
				o.DeletionTimestamp, o.Finalizers = &now, []string{"foregroundDeletion"}
			case 1:
				o.Finalizers = []string{"example.com/keep"}
			}
		}
		o.OwnerReferences = randomRefs(r, i, n, maxRefs, varied)
		objs = append(objs, o)
	}
	return objs
}

// randomRefs returns the references of the ith object of randomGraph.
func randomRefs(r *rand.Rand, i, n, maxRefs int, varied bool) []api.OwnerRef {
	var refs []api.OwnerRef
	for range r.IntN(maxRefs) {
		owner := randomGraphUID(r.IntN(i+1), n)
		switch r.IntN(10) {
		case 0:
			owner = randomGraphUID(r.IntN(n), n)
		case 1:
			owner = fmt.Sprint("gone-", r.IntN(20))
		case 2:
			if len(refs) > 0 {
				owner = refs[0].UID
			}
		}
		ref := api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: owner}
		if varied {
			// Names with the characters the packed rows could trip on.
			ref.Name = []string{"n0", "n1", "n2", "a:b", "3:1:x", "é\x1fz"}[r.IntN(6)]
			if r.IntN(8) == 0 {
				ref.Kind = "Cönfig:Map" // a kind the API does not serve
			}
			if r.IntN(2) == 0 {
				ref.BlockOwnerDeletion = boolp(r.IntN(2) == 0)
			}
		}
		refs = append(refs, ref)
	}
	return refs
}
