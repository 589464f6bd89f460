package ownergc

import (
	"context"
	"errors"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// This file handles an owner being deleted, in the foreground or with the
// orphan policy, as upstream's processDeletingDependentsItem and
// orphanDependents do.

// deleteDependents handles an owner being deleted in the foreground
// (BR-21-03). Its dependents go first. Once no dependent with
// blockOwnerDeletion remains, the foregroundDeletion finalizer is removed.
func (c *Controller) deleteDependents(ctx context.Context, owner *db.Object) error {
	deps, err := c.opts.DB.DependentsOf(ctx, owner.UID)
	if err != nil {
		return err
	}
	t := tallyForeground(owner.UID, deps, c.overlay)
	for _, uid := range t.wake {
		c.queue.Add(item{uid: uid})
	}
	if t.blocking > 0 {
		return c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, owner.UID)
	}
	// Dry-run only simulates the blocking dependents away: the reason says
	// how many it deleted, and how many it detached or unblocked.
	d := reconcile.Decision{Controller: api.ControllerOwnerGC, Rule: gcrules.RuleForeground,
		Action: api.ActionRemoveFinalizer, Target: db.TargetOf(owner), ResourceVersion: owner.ResourceVersion,
		DecidedAt: time.Now(), Reason: foregroundReason(t.deleted, t.released)}
	return c.apply(ctx, d, func(ctx context.Context) error {
		return c.removeFinalizer(ctx, owner, gcrules.FinalizerForeground)
	}, func() {
		c.overlay.removeFinalizer(owner, gcrules.FinalizerForeground)
	})
}

// orphanDependents handles an owner deleted with the orphan policy
// (BR-21-02). Every dependent loses its reference to it, then the orphan
// finalizer is removed.
func (c *Controller) orphanDependents(ctx context.Context, owner *db.Object) error {
	deps, err := c.opts.DB.DependentsOf(ctx, owner.UID)
	if err != nil {
		return err
	}
	var errs []error
	for _, dep := range deps {
		if c.overlay.isDeleted(dep.UID) || c.overlay.refRemoved(dep.UID, owner.UID) {
			continue
		}
		if err := c.orphan(ctx, owner, dep.UID); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	d := reconcile.Decision{Controller: api.ControllerOwnerGC, Rule: gcrules.RuleOrphan,
		Action: api.ActionRemoveFinalizer, Target: db.TargetOf(owner), ResourceVersion: owner.ResourceVersion,
		DecidedAt: time.Now(), Reason: orphanReason(len(deps), c.overlay != nil)}
	return c.apply(ctx, d, func(ctx context.Context) error {
		return c.removeFinalizer(ctx, owner, gcrules.FinalizerOrphan)
	}, func() {
		c.overlay.removeFinalizer(owner, gcrules.FinalizerOrphan)
	})
}

// orphan removes the dependent's reference to owner.
func (c *Controller) orphan(ctx context.Context, owner *db.Object, uid string) error {
	dep, err := c.object(ctx, uid)
	if err != nil || dep == nil {
		return err
	}
	d := reconcile.Decision{Controller: api.ControllerOwnerGC, Rule: gcrules.RuleOrphan,
		Action: api.ActionRemoveOwnerRefs, Target: db.TargetOf(dep), ResourceVersion: dep.ResourceVersion,
		DecidedAt: time.Now(), Reason: orphanRefReason(owner)}
	return c.apply(ctx, d, func(ctx context.Context) error {
		return c.removeOwnerRefs(ctx, dep, []string{owner.UID})
	}, func() {
		c.overlay.removeRefs(uid, []string{owner.UID})
	})
}
