package ttl

import (
	"fmt"
	"strconv"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// This file holds the TTL controller's decisions as functions of their
// inputs alone. The controller (ttl.go) reads the mirror, calls them and
// does the writes.

// nextBand moves band by the hysteresis rule (BR-19-06): up while the
// cluster is larger than the band's sizeMax, down while it is smaller than
// its sizeMin.
func nextBand(band, nodes int) int {
	for band < len(sizeBands)-1 && nodes > sizeBands[band].sizeMax {
		band++
	}
	for band > 0 && nodes < sizeBands[band].sizeMin {
		band--
	}
	return band
}

// initialBand recovers the band of a cluster of n nodes after a start,
// from carried, the count of nodes by TTL annotation value. Where two bands
// overlap n, the one whose TTL most nodes already carry wins: it is the band
// an uninterrupted controller would be in. With no such evidence, it is the
// lowest band, where upstream's count from zero would stop.
func initialBand(n int, carried map[string]int) int {
	byTTL := map[int]int{}
	for v, k := range carried {
		if ttl, ok := parseTTL(&v); ok {
			byTTL[ttl] += k
		}
	}
	best, bestCount := -1, 0
	for band, b := range sizeBands {
		if n < b.sizeMin || n > b.sizeMax {
			continue
		}
		if best < 0 || byTTL[b.ttlSeconds] > bestCount {
			best, bestCount = band, byTTL[b.ttlSeconds]
		}
	}
	return best
}

// parseTTL reads the annotation as upstream does (strconv.Atoi).
func parseTTL(v *string) (int, bool) {
	if v == nil {
		return 0, false
	}
	i, err := strconv.Atoi(*v)
	return i, err == nil
}

// plan is what one reconcile decides.
type plan struct {
	// want is the band's TTL as the annotation spells it.
	want string
	// wrong holds the UIDs of the nodes whose annotation does not read as
	// want. Their pending rows stay; every other node's go.
	wrong map[string]bool
	// annotate holds one decision per node to patch, in the candidates'
	// order. A node patched already, whose new version the mirror does not
	// show yet, is left out.
	annotate []annotation
}

// annotation is one node to annotate and the decision that records it.
type annotation struct {
	node     db.NodeTTL
	decision reconcile.Decision
}

// decide chooses the nodes to annotate, given the band the cluster is in,
// its node count, the mirror's nodes whose annotation is not spelled as the
// band's TTL (candidates), and written, which reports a node patched at
// that resourceVersion already. Each decision falls under the band's rule
// (BR-19-01…05). A node whose annotation reads as the TTL, such as "015"
// for 15, gets nothing (BR-19-07). The decisions' DecidedAt is left to the
// worker that applies them.
func decide(band, nodes int, candidates []db.NodeTTL, written func(uid, rv string) bool) plan {
	b := sizeBands[band]
	p := plan{want: strconv.Itoa(b.ttlSeconds), wrong: map[string]bool{}}
	reason := fmt.Sprintf("the cluster's size puts it in band %d (%d–%d nodes, with hysteresis), "+
		"whose TTL is %ss", band, b.sizeMin, b.sizeMax, p.want)
	for _, n := range candidates {
		if v, ok := parseTTL(n.TTL); ok && v == b.ttlSeconds {
			continue
		}
		p.wrong[n.UID] = true
		if written(n.UID, n.ResourceVersion) {
			continue
		}
		has := "no annotation"
		if n.TTL != nil {
			has = strconv.Quote(*n.TTL)
		}
		p.annotate = append(p.annotate, annotation{node: n, decision: reconcile.Decision{
			Controller: api.ControllerTTL, Rule: rule(band), Action: api.ActionAnnotate,
			Target: db.TargetOf(&n.Object), ResourceVersion: n.ResourceVersion,
			Reason: reason + "; the node has " + has,
			Facts:  map[string]any{"nodes": nodes, "band": band, "want": p.want, "has": n.TTL},
		}})
	}
	return p
}
