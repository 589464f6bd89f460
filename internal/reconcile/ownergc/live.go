package ownergc

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// errUnservedPath says that a live GET or write found the resource path
// not served. Like an unknown kind, it is retried after discovery, and
// never taken for an absent object.
type errUnservedPath struct {
	gvr  schema.GroupVersionResource
	name string
	err  error
}

func (e errUnservedPath) Error() string {
	return fmt.Sprintf("the API server does not serve %s/%s (its 404 for %q names no object): %v",
		e.gvr.GroupVersion(), e.gvr.Resource, e.name, e.err)
}

// unservedPath turns a 404 for the path into errUnservedPath, which the
// applier does not read as a missing object; every other error is kept.
func unservedPath(err error, gvr schema.GroupVersionResource, name string) error {
	if reconcile.PathNotServed(err, name) {
		return errUnservedPath{gvr: gvr, name: name, err: err}
	}
	return err
}

// current returns obj as a decision must see it. That is the mirror's
// copy, unless a write at exactly that version was already refused with a
// conflict. Then the mirror is behind the cluster, since a watch missed an
// update, and the object is read live instead. So a stale mirror cannot
// keep the collector failing. current returns nil when the live object is
// gone.
func (c *Controller) current(ctx context.Context, obj *db.Object) (*db.Object, error) {
	if !c.stale.has(obj.UID, obj.ResourceVersion) {
		return obj, nil
	}
	rc, gvr, err := c.client(ctx, obj)
	if err != nil {
		return nil, err
	}
	live, err := rc.Get(ctx, obj.Name, metav1.GetOptions{})
	err = unservedPath(err, gvr, obj.Name)
	switch {
	case apierrors.IsNotFound(err):
		c.metrics.rereads.WithLabelValues("gone").Inc()
		return nil, nil
	case err != nil:
		c.metrics.rereads.WithLabelValues("error").Inc()
		return nil, fmt.Errorf("reading %s %s/%s live: %w", obj.Kind, obj.Namespace, obj.Name, err)
	case string(live.UID) != obj.UID:
		// Re-created under the same name: the object decided on is gone.
		c.metrics.rereads.WithLabelValues("gone").Inc()
		return nil, nil
	}
	c.metrics.rereads.WithLabelValues("found").Inc()
	return ingest.ObjectFromMeta(live, obj.APIVersion, obj.Kind), nil
}

// object reads uid from the mirror, or live when the mirror is known to be
// behind (see current); nil when it is gone.
func (c *Controller) object(ctx context.Context, uid string) (*db.Object, error) {
	obj, err := c.opts.DB.GetObject(ctx, uid)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.current(ctx, obj)
}

// staleVersions remembers, per object, the versions a write was refused at
// (409): the cluster has moved past them. While the mirror still shows one
// of them, the object is read live (see current). An entry is dropped when
// the mirror shows another version (it caught up) or the object leaves the
// mirror.
type staleVersions struct {
	mu sync.Mutex
	m  map[string][]string // uid → refused resourceVersions
}

// maxStale bounds the memory; past it everything is forgotten, which costs
// at most one more refused write per object.
const maxStale = 10000

func (s *staleVersions) add(uid, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxStale {
		s.m = map[string][]string{}
	}
	for _, v := range s.m[uid] {
		if v == rv {
			return
		}
	}
	s.m[uid] = append(s.m[uid], rv)
}

// has reports whether a write at rv was refused; a version it does not
// know means the mirror has moved on, and uid's entry goes.
func (s *staleVersions) has(uid, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, ok := s.m[uid]
	if !ok {
		return false
	}
	for _, v := range vs {
		if v == rv {
			return true
		}
	}
	delete(s.m, uid)
	return false
}

func (s *staleVersions) forget(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, uid)
}
