package reconcile

import (
	"context"
	"errors"
	"sync"

	"github.com/kubegcd/kubegcd/internal/api"
)

// pendingSet is the set of (controller, uid) with pending rows, kept in
// memory so that the common "nothing pending" case costs no query and no
// write. It may name a key without a row (a harmless extra write), never
// the other way round: a key is added before its row is written and
// removed only after its row is gone.
type pendingSet struct {
	mu sync.Mutex
	m  map[pendingKey]struct{}
}

type pendingKey struct {
	controller api.Controller
	uid        string
}

func (k *pendingSet) has(controller api.Controller, uid string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[pendingKey{controller, uid}]
	return ok
}

func (k *pendingSet) add(controller api.Controller, uid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[pendingKey]struct{}{}
	}
	k.m[pendingKey{controller, uid}] = struct{}{}
}

func (k *pendingSet) remove(controller api.Controller, uid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, pendingKey{controller, uid})
}

// of returns the uids controller has pending rows about.
func (k *pendingSet) of(controller api.Controller) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var uids []string
	for key := range k.m {
		if key.controller == controller {
			uids = append(uids, key.uid)
		}
	}
	return uids
}

// Resolve forgets what controller held pending about uid: the object is
// gone, or needs nothing done any more. Most calls find nothing to forget
// and cost no write.
func (a *Applier) Resolve(ctx context.Context, controller api.Controller, uid string) error {
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
func (a *Applier) HasPending(controller api.Controller, uid string) bool {
	return a.pending.has(controller, uid)
}

// EndPass ends a full pass of controller over the mirror. It forgets what
// the controller held pending about each object that keep rejects: one the
// pass no longer chose. A pass that could not look at every object it may
// hold decisions about must not call it. keep runs outside the set's lock,
// so it may look at what is pending.
func (a *Applier) EndPass(ctx context.Context, controller api.Controller, keep func(uid string) bool) error {
	var errs []error
	for _, uid := range a.pending.of(controller) {
		if !keep(uid) {
			errs = append(errs, a.Resolve(ctx, controller, uid))
		}
	}
	return errors.Join(errs...)
}
