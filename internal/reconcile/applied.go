package reconcile

import (
	"sync"
	"time"
)

// AppliedWrites remembers the version of each object a controller last
// wrote to. It keeps it until the mirror shows a newer one, or for a
// minute in case the change never arrives. Deciding again on the old
// version would only send a write that is redundant or fails its
// precondition. The memory holds the last minute's writes. Each Record
// forgets the entries that ran out, oldest first, at a constant cost per
// write.
type AppliedWrites struct {
	mu sync.Mutex
	m  map[string]appliedWrite
	// order lists the writes as recorded, oldest first, from head on. An
	// object written again has several entries here, and only the newest
	// of them removes it from m.
	order []recorded
	head  int
	// now is the clock; nil is time.Now.
	now func() time.Time
}

type appliedWrite struct {
	rv string
	at time.Time
}

type recorded struct {
	uid string
	at  time.Time
}

const appliedMemory = time.Minute

// Record remembers that uid was written at version rv.
func (a *AppliedWrites) Record(uid, rv string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]appliedWrite{}
	}
	now := a.clock()
	a.forgetBefore(now.Add(-appliedMemory))
	a.m[uid] = appliedWrite{rv: rv, at: now}
	a.order = append(a.order, recorded{uid, now})
}

// forgetBefore drops the writes recorded before cutoff.
func (a *AppliedWrites) forgetBefore(cutoff time.Time) {
	for a.head < len(a.order) && a.order[a.head].at.Before(cutoff) {
		r := a.order[a.head]
		if w, ok := a.m[r.uid]; ok && w.at.Equal(r.at) {
			delete(a.m, r.uid)
		}
		a.order[a.head] = recorded{}
		a.head++
	}
	// Reuse the slice once its dropped front outweighs what it holds.
	if a.head > 1024 && a.head > len(a.order)/2 {
		a.order = append(a.order[:0], a.order[a.head:]...)
		a.head = 0
	}
}

func (a *AppliedWrites) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// WrittenAt reports whether uid was already written at version rv, within
// the last minute.
func (a *AppliedWrites) WrittenAt(uid, rv string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.m[uid]
	if !ok {
		return false
	}
	if w.rv != rv || a.clock().Sub(w.at) > appliedMemory {
		delete(a.m, uid)
		return false
	}
	return true
}
