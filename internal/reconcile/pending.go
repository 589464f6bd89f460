package reconcile

import (
	"context"
	"errors"
	"sync"
)

// pendingSet is the set of (controller, uid) with pending rows, kept in
// memory so that the common "nothing pending" case costs no query and no
// write. It may name a key without a row (a harmless extra write), never
// the other way round: a key is added before its row is written and
// removed only after its row is gone.
type pendingSet struct {
	mu sync.Mutex
	m  map[[2]string]struct{}
}

func (k *pendingSet) has(controller, uid string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[[2]string{controller, uid}]
	return ok
}

func (k *pendingSet) add(controller, uid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[[2]string]struct{}{}
	}
	k.m[[2]string{controller, uid}] = struct{}{}
}

func (k *pendingSet) remove(controller, uid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, [2]string{controller, uid})
}

// of returns the uids controller has pending rows about.
func (k *pendingSet) of(controller string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var uids []string
	for key := range k.m {
		if key[0] == controller {
			uids = append(uids, key[1])
		}
	}
	return uids
}

// Resolve forgets what controller held pending about uid: the object is
// gone, or needs nothing done any more. Most calls find nothing to forget
// and cost no write.
func (a *Applier) Resolve(ctx context.Context, controller, uid string) error {
	if !a.pending.has(controller, uid) {
		return nil
	}
	if err := a.opts.DB.ClearPending(ctx, controller, uid); err != nil {
		return err
	}
	a.pending.remove(controller, uid)
	return nil
}

// HasPending reports, from memory, whether controller holds a decision
// pending about uid.
func (a *Applier) HasPending(controller, uid string) bool {
	return a.pending.has(controller, uid)
}

// EndPass ends a full pass of controller over the mirror. It forgets what
// the controller held pending about each object that keep rejects: one the
// pass no longer chose. A pass that could not look at every object it may
// hold decisions about must not call it. keep runs outside the set's lock,
// so it may look at what is pending.
func (a *Applier) EndPass(ctx context.Context, controller string, keep func(uid string) bool) error {
	var errs []error
	for _, uid := range a.pending.of(controller) {
		if !keep(uid) {
			errs = append(errs, a.Resolve(ctx, controller, uid))
		}
	}
	return errors.Join(errs...)
}
