package ownergc

import (
	"container/list"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
	"github.com/kubegcd/kubegcd/internal/promutil"
)

// absentKey identifies an owner confirmed absent: the coordinates it was
// looked up by, and the UID that was not found there.
type absentKey struct {
	group, kind, namespace, name, uid string
}

func (k absentKey) String() string {
	return k.group + "\x00" + k.kind + "\x00" + k.namespace + "\x00" + k.name + "\x00" + k.uid
}

// absentCache remembers owners confirmed absent (BR-21-06), so that many
// dependents of one deleted owner cost one GET, not one each. It is a
// bounded LRU: a UID never comes back, so entries never go stale.
type absentCache struct {
	mu    sync.Mutex
	max   int
	order *list.List
	items map[absentKey]*list.Element
}

func newAbsentCache(max int) *absentCache {
	return &absentCache{max: max, order: list.New(), items: map[absentKey]*list.Element{}}
}

func (a *absentCache) has(k absentKey) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.items[k]
	if ok {
		a.order.MoveToFront(e)
	}
	return ok
}

func (a *absentCache) add(k absentKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.items[k]; ok {
		a.order.MoveToFront(e)
		return
	}
	a.items[k] = a.order.PushFront(k)
	if a.order.Len() > a.max {
		last := a.order.Back()
		a.order.Remove(last)
		delete(a.items, last.Value.(absentKey))
	}
}

// overlay is dry-run's memory of what enforce would already have done:
// objects deleted, deletions begun in the foreground, references removed or
// made non-blocking, finalizers removed. Classification reads through it, so
// a dry-run cascade reaches the same decisions, level after level, as an
// enforced one. A nil overlay (enforce) answers false to everything.
type overlay struct {
	mu                sync.Mutex
	deleted           map[string]bool
	foreground        map[string]bool
	removedRefs       map[[2]string]bool // dependent, owner
	unblockedRefs     map[[2]string]bool
	removedFinalizers map[[2]string]bool // object, finalizer
	// altered holds the objects whose deletion or finalizers are dry-run's.
	altered map[string]bool
}

func newOverlay() *overlay {
	return &overlay{deleted: map[string]bool{}, foreground: map[string]bool{}, altered: map[string]bool{},
		removedRefs: map[[2]string]bool{}, unblockedRefs: map[[2]string]bool{},
		removedFinalizers: map[[2]string]bool{}}
}

func (o *overlay) isDeleted(uid string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.deleted[uid]
}

func (o *overlay) isForeground(uid string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.foreground[uid] && !o.removedFinalizers[[2]string{uid, gcrules.FinalizerForeground}]
}

func (o *overlay) refRemoved(dependent, owner string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.removedRefs[[2]string{dependent, owner}]
}

func (o *overlay) refUnblocked(dependent, owner string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unblockedRefs[[2]string{dependent, owner}]
}

// alters reports whether dry-run changed what is known of uid: began its
// deletion in the foreground, or removed one of its finalizers.
func (o *overlay) alters(uid string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.altered[uid]
}

// finalizers returns an object's finalizers less those removed, plus
// foregroundDeletion while its foreground deletion is under way.
func (o *overlay) finalizers(uid string, finalizers []string) []string {
	if o == nil {
		return finalizers
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, f := range finalizers {
		if !o.removedFinalizers[[2]string{uid, f}] {
			out = append(out, f)
		}
	}
	fg := [2]string{uid, gcrules.FinalizerForeground}
	if o.foreground[uid] && !o.removedFinalizers[fg] && !slices.Contains(out, gcrules.FinalizerForeground) {
		out = append(out, gcrules.FinalizerForeground)
	}
	return out
}

func (o *overlay) delete(uid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deleted[uid] = true
}

func (o *overlay) deleteForeground(uid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.foreground[uid] = true
	o.altered[uid] = true
}

func (o *overlay) removeRefs(dependent string, owners []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ow := range owners {
		o.removedRefs[[2]string{dependent, ow}] = true
	}
}

func (o *overlay) unblockRefs(dependent string, owners []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ow := range owners {
		o.unblockedRefs[[2]string{dependent, ow}] = true
	}
}

// removeFinalizer records a removed finalizer; an object being deleted
// whose last finalizer goes is gone.
func (o *overlay) removeFinalizer(obj *db.Object, finalizer string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.removedFinalizers[[2]string{obj.UID, finalizer}] = true
	o.altered[obj.UID] = true
	left := 0
	for _, f := range obj.Finalizers {
		if !o.removedFinalizers[[2]string{obj.UID, f}] {
			left++
		}
	}
	if o.foreground[obj.UID] || obj.DeletionTimestamp != nil {
		if left == 0 {
			o.deleted[obj.UID] = true
		}
	}
}

type metrics struct {
	verifications *prometheus.CounterVec
	rereads       *prometheus.CounterVec
	errors        prometheus.Counter
	queue         workqueue.MetricsProvider
	candidates    prometheus.Gauge
}

func newMetrics(f promutil.Factory) *metrics {
	return &metrics{
		verifications: f.CounterVec("owner_verifications_total",
			"Owners missing from the mirror, by result: absent and present (a live GET), "+
				"unserved (a 404 for the resource path, not the object), "+
				"cache-hit (known absent), error.",
			"result"),
		rereads: f.CounterVec("live_rereads_total",
			"Objects read live because the mirror still showed a version a write had been refused at, "+
				"by result: found, gone, error.",
			"result"),
		errors: f.Counter("sync_errors_total",
			"Items that failed and were queued again with backoff."),
		queue: f.QueueDepth("Objects waiting to be looked at.", false),
		candidates: f.Gauge("candidates",
			"Objects the last full pass found with an owner missing or being deleted."),
	}
}
