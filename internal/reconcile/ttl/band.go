package ttl

import (
	"sync"

	"github.com/kubegcd/kubegcd/internal/db"
)

// band follows the cluster's size band node event by node event, as
// upstream's controller does: it counts a node in on its add and out on its
// delete, moving the band at each count. Hysteresis makes the band depend
// on the path the count took (from band 1 at 95 nodes, all nodes gone and
// 95 back ends in band 0), so deciding from the count a reconcile happens
// to see would miss a dip between two reconciles.
//
// The set of node UIDs makes the count idempotent: a change the mirror
// already held when the set was loaded counts once, however late it is
// delivered.
type bandTracker struct {
	mu    sync.Mutex
	nodes map[string]struct{}
	band  int
	// loaded: the set was loaded from the mirror and follows the changes.
	loaded bool
	// loading collects the changes delivered while the set is read from
	// the mirror, to be applied after it.
	loading bool
	early   []db.Change
	// stale: the nodes were listed again (or changes were lost); the set
	// must be reloaded from the mirror.
	stale bool
}

// maxEarly bounds the changes kept while the set loads; beyond it the set
// is reloaded instead.
const maxEarly = 100_000

// observe applies node changes in the order they were committed. It never
// blocks on anything but the band's own mutex.
func (b *bandTracker) observe(changes []db.Change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range changes {
		switch {
		case ch.Type == db.ChangeRelisted:
			b.stale = true
		case b.loading:
			if len(b.early) < maxEarly {
				b.early = append(b.early, ch)
			} else {
				b.stale = true
			}
		case b.loaded:
			b.apply(ch)
		}
	}
}

func (b *bandTracker) apply(ch db.Change) {
	_, known := b.nodes[ch.UID]
	switch {
	case ch.Type == db.ChangeUpserted && !known:
		b.nodes[ch.UID] = struct{}{}
	case ch.Type == db.ChangeDeleted && known:
		delete(b.nodes, ch.UID)
	default:
		return // an update, or a change the set already holds
	}
	b.band = nextBand(b.band, len(b.nodes))
}

// needsLoad reports whether the set must be (re)loaded from the mirror, and
// if so starts collecting the changes delivered meanwhile.
func (b *bandTracker) needsLoad() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loaded && !b.stale {
		return false
	}
	b.loading, b.stale, b.early = true, false, nil
	return true
}

// load takes the mirror's nodes, read after needsLoad. The first load
// recovers the band from the TTLs the nodes carry (initialBand); a reload
// after a relist moves it as upstream's informer would deliver the relist:
// the new nodes' adds, then the gone nodes' deletes.
func (b *bandTracker) load(uids []string, carried map[string]int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fresh := make(map[string]struct{}, len(uids))
	for _, uid := range uids {
		fresh[uid] = struct{}{}
	}
	if !b.loaded {
		b.band = initialBand(len(fresh), carried)
	} else {
		added, gone := 0, 0
		for uid := range fresh {
			if _, ok := b.nodes[uid]; !ok {
				added++
			}
		}
		for uid := range b.nodes {
			if _, ok := fresh[uid]; !ok {
				gone++
			}
		}
		b.band = nextBand(b.band, len(b.nodes)+added)
		b.band = nextBand(b.band, len(b.nodes)+added-gone)
	}
	b.nodes, b.loaded, b.loading = fresh, true, false
	for _, ch := range b.early {
		b.apply(ch)
	}
	b.early = nil
}

// abortLoad ends a load that failed; the next reconcile tries again.
func (b *bandTracker) abortLoad() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loading, b.stale, b.early = false, true, nil
}

func (b *bandTracker) isLoaded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.loaded
}

// current returns the band (its index in sizeBands) and the node count.
func (b *bandTracker) current() (band, nodes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.band, len(b.nodes)
}
