package ownergc

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// errKnownAbsent says that a shared lookup of an owner found it in the
// absent cache and sent no GET.
var errKnownAbsent = errors.New("owner known absent")

// errInvalidNamespace says that a cluster-scoped dependent names a
// namespaced owner kind, which can never resolve (BR-21-07).
var errInvalidNamespace = errors.New("cluster-scoped object names a namespaced owner kind")

// refLookup is one ownerReference of obj and where its owner is looked for.
type refLookup struct {
	obj  *db.Object
	ref  api.OwnerRef
	rule gcrules.Ref
	kind gcrules.Kind
	gvr  schema.GroupVersionResource
	// namespace is where the owner is looked for: the dependent's own for
	// a namespaced owner kind, "" for a cluster-scoped one.
	namespace string
	key       absentKey
}

func newRefLookup(obj *db.Object, ref api.OwnerRef, gvr schema.GroupVersionResource, namespaced bool) refLookup {
	kind := gcrules.Kind{Served: true, Namespaced: namespaced}
	ns := gcrules.OwnerNamespace(obj.Namespace, kind)
	return refLookup{obj: obj, ref: ref, rule: ruleRef(ref), kind: kind, gvr: gvr, namespace: ns,
		key: absentKey{group: gvr.Group, kind: ref.Kind, namespace: ns, name: ref.Name, uid: ref.UID}}
}

// state classifies the reference by what is known of its owner.
func (l refLookup) state(owner *gcrules.Owner, lookup gcrules.Lookup) string {
	return string(gcrules.Classify(l.obj.Namespace, l.rule, l.kind, owner, lookup))
}

// classify establishes the facts about one of obj's ownerReferences, and
// gcrules classifies it. The facts come from the mirror when it shows the
// owner. An owner missing from the mirror is only suspected absent: a live
// GET decides, and a confirmed absence is remembered.
func (c *Controller) classify(ctx context.Context, obj *db.Object, ref api.OwnerRef) (refFact, error) {
	fact := factOf(ref)
	gvr, namespaced, err := c.gvrFor(ctx, ref.APIVersion, ref.Kind)
	if err != nil {
		return fact, err
	}
	l := newRefLookup(obj, ref, gvr, namespaced)
	switch {
	case l.state(nil, gcrules.Mirror) == string(gcrules.InvalidNamespace):
		return fact, errInvalidNamespace
	case c.overlay.isDeleted(ref.UID):
		return fact.with(l.state(nil, gcrules.Authoritative), viaDryRun), nil
	case c.absent.has(l.key):
		// A UID confirmed absent at these coordinates can never come back.
		// Asking the mirror again would only cost a query per dependent.
		c.metrics.verifications.WithLabelValues("cache-hit").Inc()
		return fact.with(l.state(nil, gcrules.Authoritative), "absent-cache"), nil
	}
	if f, found, err := c.classifyInMirror(ctx, l, fact); found || err != nil {
		return f, err
	}
	return c.classifyLive(ctx, l, fact)
}

// classifyInMirror classifies the reference by the mirror's copy of its
// owner. It reports false when the mirror does not show that owner where
// the reference names it.
func (c *Controller) classifyInMirror(ctx context.Context, l refLookup, fact refFact) (refFact, bool, error) {
	owner, err := c.opts.DB.ObjectMeta(ctx, l.ref.UID)
	if errors.Is(err, db.ErrNotFound) {
		return fact, false, nil
	}
	if err != nil {
		return fact, false, err
	}
	o := c.ownerFacts(gcrules.Owner{UID: owner.UID, APIVersion: owner.APIVersion, Kind: owner.Kind,
		Namespace: owner.Namespace, Name: owner.Name, Deleting: owner.DeletionTimestamp != nil,
		Finalizers: owner.Finalizers})
	switch gcrules.Mismatch(l.rule, l.namespace, o) {
	case "":
		fact = fact.with(l.state(o, gcrules.Mirror), "mirror")
		if c.overlay.alters(owner.UID) {
			// Its deletion or finalizers are dry-run's, not the cluster's.
			fact.Via = viaDryRun
		}
		return fact, true, nil
	case "other-namespace":
		if l.kind.Namespaced {
			// The UID exists, but in another namespace. Upstream reports
			// such a cross-namespace reference as invalid too.
			c.warnInvalidNamespace(l.obj, otherNamespaceMessage(l.ref, l.obj.Namespace))
		}
	}
	return fact, false, nil
}

// classifyLive classifies the reference by a live GET of an owner the
// mirror does not show, as upstream's isDangling does. A 404 for the
// object proves the owner absent, and the absent cache remembers it.
func (c *Controller) classifyLive(ctx context.Context, l refLookup, fact refFact) (refFact, error) {
	live, err := c.getOwner(ctx, l)
	switch {
	case errors.Is(err, errKnownAbsent):
		c.metrics.verifications.WithLabelValues("cache-hit").Inc()
		return fact.with(l.state(nil, gcrules.Authoritative), "absent-cache"), nil
	case isUnknownKind(err): // the path, not the owner, is missing
		c.metrics.verifications.WithLabelValues("unserved").Inc()
		return fact, err
	case apierrors.IsNotFound(err):
		c.metrics.verifications.WithLabelValues("absent").Inc()
		c.absent.add(l.key)
		return fact.with(l.state(nil, gcrules.Authoritative), "live"), nil
	case err != nil:
		c.metrics.verifications.WithLabelValues("error").Inc()
		return fact, fmt.Errorf("verifying owner %s %s/%s: %w", l.ref.Kind, l.namespace, l.ref.Name, err)
	}
	// The GET found an object where the reference points; only its UID can
	// differ. The mirror lags, so the live object decides.
	o := c.ownerFacts(gcrules.Owner{UID: string(live.UID), APIVersion: l.ref.APIVersion, Kind: l.ref.Kind,
		Namespace: l.namespace, Name: l.ref.Name, Deleting: live.DeletionTimestamp != nil,
		Finalizers: live.Finalizers})
	fact = fact.with(l.state(o, gcrules.Authoritative), "live")
	if c.overlay.alters(string(live.UID)) {
		fact.Via = viaDryRun
	}
	if fact.State == string(gcrules.Dangling) {
		c.metrics.verifications.WithLabelValues("absent").Inc()
		c.absent.add(l.key)
	} else {
		c.metrics.verifications.WithLabelValues("present").Inc()
	}
	return fact, nil
}

// ownerFacts describes an owner as enforce would have left it: dry-run's
// foreground deletions and removed finalizers count.
func (c *Controller) ownerFacts(o gcrules.Owner) *gcrules.Owner {
	o.Deleting = o.Deleting || c.overlay.isForeground(o.UID)
	o.Finalizers = c.overlay.finalizers(o.UID, o.Finalizers)
	return &o
}
