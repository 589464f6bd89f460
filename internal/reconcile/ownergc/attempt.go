package ownergc

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// attemptToDelete decides about a dependent that is not being deleted, as
// upstream's attemptToDeleteItem does: it establishes the facts,
// gcrules.Plan decides, and the decision is applied.
func (c *Controller) attemptToDelete(ctx context.Context, obj *db.Object) error {
	decided := time.Now()
	refs := c.refs(obj)
	facts := make([]refFact, 0, len(refs))
	in := gcrules.Object{Finalizers: c.finalizers(obj)}
	var invalid *api.OwnerRef
	for _, ref := range refs {
		fact, err := c.classify(ctx, obj, ref)
		switch {
		case errors.Is(err, errInvalidNamespace):
			invalid = &ref
			facts = []refFact{fact.with("invalid", "mirror")}
			in.Refs = append(in.Refs,
				gcrules.Classified{Ref: ruleRef(ref), State: gcrules.InvalidNamespace})
		case err != nil:
			return err
		default:
			facts = append(facts, fact)
			in.Refs = append(in.Refs,
				gcrules.Classified{Ref: ruleRef(ref), State: gcrules.State(fact.State)})
		}
		if invalid != nil {
			break // kept whatever its other references say (BR-21-07)
		}
	}
	if gcrules.NeedDependents(in.Refs) {
		deps, err := c.dependents(ctx, obj.UID)
		if err != nil {
			return err
		}
		in.HasDependents = len(deps) > 0
		in.CycleDependent = c.cycleDependent(deps)
	}
	simulated := restsOnDryRun(facts)
	for plan := gcrules.Plan(in); ; plan = *plan.Then {
		if simulated && plan.Reason != "" {
			plan.Reason = assumingDryRun(plan.Reason)
		}
		if err := c.carryOut(ctx, obj, facts, decided, invalid, plan); err != nil || plan.Then == nil {
			return err
		}
	}
}

// carryOut applies one decision of gcrules.Plan about obj.
func (c *Controller) carryOut(ctx context.Context, obj *db.Object, facts []refFact, decided time.Time,
	invalid *api.OwnerRef, plan gcrules.Decision) error {
	d := reconcile.Decision{Controller: api.ControllerOwnerGC, Target: db.TargetOf(obj),
		ResourceVersion: obj.ResourceVersion, Facts: facts, DecidedAt: decided,
		Rule: plan.Rule, Action: plan.Action, Reason: plan.Reason}
	switch plan.Action {
	case api.ActionKeep:
		return c.keepInvalidNamespace(ctx, obj, *invalid, d)
	case api.ActionRemoveOwnerRefs:
		return c.apply(ctx, d, func(ctx context.Context) error {
			return c.removeOwnerRefs(ctx, obj, plan.Refs)
		}, func() {
			c.overlay.removeRefs(obj.UID, plan.Refs)
		})
	case api.ActionUnblockRefs:
		return c.apply(ctx, d, func(ctx context.Context) error {
			return c.unblockOwnerRefs(ctx, obj)
		}, func() {
			c.overlay.unblockRefs(obj.UID, plan.Refs)
		})
	case api.ActionDelete:
		policy := metav1.DeletionPropagation(plan.Propagation)
		return c.apply(ctx, d, func(ctx context.Context) error {
			return c.deleteObject(ctx, obj, policy)
		}, func() {
			if policy == metav1.DeletePropagationForeground {
				c.overlay.deleteForeground(obj.UID)
			} else {
				c.overlay.delete(obj.UID)
			}
		})
	}
	return c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, obj.UID)
}

// apply hands d to the applier. In dry-run, dryRun records what enforce
// would have changed, and what the change affects is looked at again.
func (c *Controller) apply(ctx context.Context, d reconcile.Decision, do func(context.Context) error,
	dryRun func()) error {
	if c.applied.WrittenAt(d.Target.UID, d.ResourceVersion) {
		// Already written, and the mirror has not caught up yet: it wakes
		// the object again when it does. Deciding again now would only
		// send a write bound to fail on its precondition.
		return nil
	}
	outcome, err := c.opts.Applier.Apply(ctx, d, do)
	if outcome == api.OutcomeApplied {
		c.applied.Record(d.Target.UID, d.ResourceVersion)
	}
	if outcome == api.OutcomeDryRun {
		dryRun()
		c.requeueRelated(ctx, d.Target.UID)
		return nil
	}
	if outcome == api.OutcomeConflict {
		// The cluster is past this version. The next attempt decides on a
		// newer copy: the mirror's if it has caught up, else one read live.
		c.stale.add(d.Target.UID, d.ResourceVersion)
		return fmt.Errorf("%s %s/%s at resourceVersion %s: %w",
			d.Target.Kind, d.Target.Namespace, d.Target.Name, d.ResourceVersion, errConflict)
	}
	return err
}

// requeueRelated wakes what a dry-run change affects: the object's
// dependents and owners.
func (c *Controller) requeueRelated(ctx context.Context, uid string) {
	c.queue.Add(item{uid: uid})
	if deps, err := c.opts.DB.DependentsOf(ctx, uid); err == nil {
		for _, d := range deps {
			c.queue.Add(item{uid: d.UID})
		}
	}
	if obj, err := c.opts.DB.GetObject(ctx, uid); err == nil {
		for _, r := range obj.OwnerReferences {
			c.queue.Add(item{uid: r.UID})
		}
	}
}

// dependents lists the objects that name uid as an owner, less those
// dry-run has already deleted or detached.
func (c *Controller) dependents(ctx context.Context, uid string) ([]db.Dependent, error) {
	deps, err := c.opts.DB.DependentsOf(ctx, uid)
	if err != nil {
		return nil, err
	}
	out := deps[:0]
	for _, d := range deps {
		if !c.overlay.isDeleted(d.UID) && !c.overlay.refRemoved(d.UID, uid) {
			out = append(out, d)
		}
	}
	return out, nil
}

// cycleDependent names one of deps that is itself deleting its dependents
// in the foreground, as "Kind/name", or returns "". An object that waits
// for such a dependent while it blocks its own owner could deadlock, so
// gcrules.Plan then unblocks its references.
func (c *Controller) cycleDependent(deps []db.Dependent) string {
	for _, dep := range deps {
		depMeta := &db.Object{UID: dep.UID, Finalizers: dep.Finalizers}
		deleting := dep.Deleting || c.overlay.isForeground(dep.UID)
		if deleting && c.hasFinalizer(depMeta, gcrules.FinalizerForeground) {
			return dep.Kind + "/" + dep.Name
		}
	}
	return ""
}

// keepInvalidNamespace records that a cluster-scoped object naming a
// namespaced owner kind is kept, and warns on it, once per version.
func (c *Controller) keepInvalidNamespace(ctx context.Context, obj *db.Object, ref api.OwnerRef,
	d reconcile.Decision) error {
	isNew, err := c.opts.Applier.Record(ctx, d)
	if err != nil {
		return err
	}
	if isNew {
		c.warnInvalidNamespace(obj, clusterScopedMessage(ref))
	}
	return nil
}

// warnInvalidNamespace emits the Warning Event OwnerRefInvalidNamespace on
// obj, as upstream does. Dry-run sends nothing to the cluster, Events
// included.
func (c *Controller) warnInvalidNamespace(obj *db.Object, msg string) {
	if c.opts.Applier.DryRun() || c.opts.Recorder == nil {
		return
	}
	c.opts.Recorder.Event(involved(obj), corev1.EventTypeWarning, "OwnerRefInvalidNamespace", msg)
}

// involved is the Event's involvedObject.
func involved(o *db.Object) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		UID: types.UID(o.UID), ResourceVersion: o.ResourceVersion}
}
