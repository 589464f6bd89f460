package reconcile

import (
	"sync"
	"time"
)

// AppliedWrites remembers the version of each object a controller last
// wrote to, until the mirror shows a newer one (or a minute passes, in case
// the change never arrives): deciding again on the old version would only
// send a write bound to be redundant or to fail its precondition.
type AppliedWrites struct {
	mu sync.Mutex
	m  map[string]appliedWrite
}

type appliedWrite struct {
	rv string
	at time.Time
}

const appliedMemory = time.Minute

func (a *AppliedWrites) Record(uid, rv string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]appliedWrite{}
	}
	a.m[uid] = appliedWrite{rv: rv, at: time.Now()}
	if len(a.m) > 100000 { // bound it: forget the stale entries
		for k, v := range a.m {
			if time.Since(v.at) > appliedMemory {
				delete(a.m, k)
			}
		}
	}
}

// Done reports whether uid was already written at version rv.
func (a *AppliedWrites) Done(uid, rv string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.m[uid]
	if !ok {
		return false
	}
	if w.rv != rv || time.Since(w.at) > appliedMemory {
		delete(a.m, uid)
		return false
	}
	return true
}
