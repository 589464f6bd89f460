package ownergc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// refFact is what a decision records about each ownerReference.
type refFact struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	State      string `json:"state"`
	// Via says how the state was established: mirror, live (a GET),
	// absent-cache, or dry-run (an earlier dry-run decision).
	Via string `json:"via"`
}

// viaDryRun: the state of a reference rests on an earlier dry-run decision.
const viaDryRun = "dry-run"

// errKnownAbsent: a shared lookup of an owner found it in the absent cache
// and sent no GET.
var errKnownAbsent = errors.New("owner known absent")

// errInvalidNamespace: a cluster-scoped dependent names a namespaced owner
// kind, which can never resolve (BR-21-07).
var errInvalidNamespace = errors.New("cluster-scoped object names a namespaced owner kind")

func ruleRef(ref api.OwnerRef) gcrules.Ref {
	return gcrules.Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID,
		BlockOwnerDeletion: ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion}
}

// classify establishes the facts about one of obj's ownerReferences — from
// the mirror when it shows the owner, else by a live GET (an owner missing
// from the mirror is only suspected absent), remembering confirmed
// absences — and lets gcrules classify it.
func (c *Controller) classify(ctx context.Context, obj *db.Object, ref api.OwnerRef) (refFact, error) {
	fact := refFact{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
	gvr, namespaced, err := c.gvrFor(ctx, ref.APIVersion, ref.Kind)
	if err != nil {
		return fact, err
	}
	kind := gcrules.Kind{Served: true, Namespaced: namespaced}
	rref := ruleRef(ref)
	state := func(owner *gcrules.Owner, lookup gcrules.Lookup) string {
		return string(gcrules.Classify(obj.Namespace, rref, kind, owner, lookup))
	}
	if state(nil, gcrules.Mirror) == string(gcrules.InvalidNamespace) {
		return fact, errInvalidNamespace
	}
	ns := gcrules.OwnerNamespace(obj.Namespace, kind)
	if c.overlay.isDeleted(ref.UID) {
		fact.State, fact.Via = state(nil, gcrules.Authoritative), viaDryRun
		return fact, nil
	}
	// A UID confirmed absent at these coordinates can never come back:
	// asking the mirror again would only cost a query per dependent.
	key := absentKey{group: gvr.Group, kind: ref.Kind, namespace: ns, name: ref.Name, uid: ref.UID}
	if c.absent.has(key) {
		c.metrics.verifications.WithLabelValues("cache-hit").Inc()
		fact.State, fact.Via = state(nil, gcrules.Authoritative), "absent-cache"
		return fact, nil
	}
	owner, err := c.opts.DB.ObjectMeta(ctx, ref.UID)
	switch {
	case err == nil:
		o := c.ownerFacts(owner.UID, owner.APIVersion, owner.Kind, owner.Namespace, owner.Name, owner.DeletionTimestamp != nil, owner.Finalizers)
		switch gcrules.Mismatch(rref, ns, o) {
		case "":
			fact.State, fact.Via = state(o, gcrules.Mirror), "mirror"
			if c.overlay.alters(owner.UID) {
				// Its deletion or finalizers are dry-run's, not the cluster's.
				fact.Via = viaDryRun
			}
			return fact, nil
		case "other-namespace":
			if namespaced {
				// The UID exists, but in another namespace: an invalid
				// cross-namespace reference, which upstream reports too.
				c.warnInvalidNamespace(obj, ref, fmt.Sprintf("ownerRef %s/%s %s does not exist in namespace %q", ref.Kind, ref.Name, ref.UID, obj.Namespace))
			}
		}
	case !errors.Is(err, db.ErrNotFound):
		return fact, err
	}

	// The dependents of one owner are decided at once, by every worker:
	// they share one GET rather than each send its own before the first
	// answer fills the absent cache. Sharing an answer is sound: absent
	// holds forever (a UID never comes back), present only keeps. The
	// cache is filled inside the flight and read again at the start of
	// the next, so a worker that missed it an instant before a flight
	// ended sends no GET of its own.
	v, err, _ := c.ownerGets.Do(key.String(), func() (any, error) {
		if c.absent.has(key) {
			return nil, errKnownAbsent
		}
		live, err := c.opts.Client.Resource(gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err = unservedPath(err, gvr, ref.Name); apierrors.IsNotFound(err) && !isUnknownKind(err) {
			c.absent.add(key)
		}
		return live, err
	})
	if errors.Is(err, errKnownAbsent) {
		c.metrics.verifications.WithLabelValues("cache-hit").Inc()
		fact.State, fact.Via = state(nil, gcrules.Authoritative), "absent-cache"
		return fact, nil
	}
	live, _ := v.(*metav1.PartialObjectMetadata)
	switch {
	case isUnknownKind(err): // the path, not the owner, is missing
		c.metrics.verifications.WithLabelValues("unserved").Inc()
		return fact, err
	case apierrors.IsNotFound(err):
		c.metrics.verifications.WithLabelValues("absent").Inc()
		c.absent.add(key)
		fact.State, fact.Via = state(nil, gcrules.Authoritative), "live"
		return fact, nil
	case err != nil:
		c.metrics.verifications.WithLabelValues("error").Inc()
		return fact, fmt.Errorf("verifying owner %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	// Found at the coordinates the reference names; only its UID can
	// differ. The mirror lags; the live object decides.
	o := c.ownerFacts(string(live.UID), ref.APIVersion, ref.Kind, ns, ref.Name, live.DeletionTimestamp != nil, live.Finalizers)
	fact.State, fact.Via = state(o, gcrules.Authoritative), "live"
	if c.overlay.alters(string(live.UID)) {
		fact.Via = viaDryRun
	}
	if fact.State == string(gcrules.Dangling) {
		c.metrics.verifications.WithLabelValues("absent").Inc()
		c.absent.add(key)
	} else {
		c.metrics.verifications.WithLabelValues("present").Inc()
	}
	return fact, nil
}

// ownerFacts describes an owner as enforce would have left it: dry-run's
// foreground deletions and removed finalizers count.
func (c *Controller) ownerFacts(uid, apiVersion, kind, namespace, name string, deleting bool, finalizers []string) *gcrules.Owner {
	return &gcrules.Owner{UID: uid, APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name,
		Deleting: deleting || c.overlay.isForeground(uid), Finalizers: c.overlay.finalizers(uid, finalizers)}
}

func (c *Controller) warnInvalidNamespace(obj *db.Object, ref api.OwnerRef, msg string) {
	if c.opts.Applier.DryRun() || c.opts.Recorder == nil {
		return
	}
	c.opts.Recorder.Event(involved(obj), corev1.EventTypeWarning, "OwnerRefInvalidNamespace", msg)
}

// attemptToDelete decides about a dependent that is not being deleted: it
// establishes the facts, gcrules.Plan decides, and the decision is applied.
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
			fact.State, fact.Via = "invalid", "mirror"
			facts = []refFact{fact}
			in.Refs = append(in.Refs, gcrules.Classified{Ref: ruleRef(ref), State: gcrules.InvalidNamespace})
		case err != nil:
			return err
		default:
			facts = append(facts, fact)
			in.Refs = append(in.Refs, gcrules.Classified{Ref: ruleRef(ref), State: gcrules.State(fact.State)})
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
	simulated := slices.ContainsFunc(facts, func(f refFact) bool { return f.Via == viaDryRun })
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
func (c *Controller) carryOut(ctx context.Context, obj *db.Object, facts []refFact, decided time.Time, invalid *api.OwnerRef, plan gcrules.Decision) error {
	d := reconcile.Decision{Controller: api.ControllerOwnerGC, Target: db.TargetOf(obj), ResourceVersion: obj.ResourceVersion, Facts: facts, DecidedAt: decided,
		Rule: plan.Rule, Action: plan.Action, Reason: plan.Reason}
	switch plan.Action {
	case api.ActionKeep:
		return c.keepInvalidNamespace(ctx, obj, *invalid, d)
	case api.ActionRemoveOwnerRefs:
		return c.apply(ctx, d, func(ctx context.Context) error { return c.removeOwnerRefs(ctx, obj, plan.Refs) }, func() {
			c.overlay.removeRefs(obj.UID, plan.Refs)
		})
	case api.ActionUnblockRefs:
		return c.apply(ctx, d, func(ctx context.Context) error { return c.unblockOwnerRefs(ctx, obj) }, func() {
			c.overlay.unblockRefs(obj.UID, plan.Refs)
		})
	case api.ActionDelete:
		policy := metav1.DeletionPropagation(plan.Propagation)
		return c.apply(ctx, d, func(ctx context.Context) error { return c.deleteObject(ctx, obj, policy) }, func() {
			if policy == metav1.DeletePropagationForeground {
				c.overlay.deleteForeground(obj.UID)
			} else {
				c.overlay.delete(obj.UID)
			}
		})
	}
	return c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, obj.UID)
}

// apply hands d to the applier; in dry-run, dryRun records what enforce
// would have changed, and what it affects is looked at again.
func (c *Controller) apply(ctx context.Context, d reconcile.Decision, do func(context.Context) error, dryRun func()) error {
	if c.applied.WrittenAt(d.Target.UID, d.ResourceVersion) {
		// Already written; the mirror has not caught up yet and will wake
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
		// The cluster is past this version: the next attempt decides on a
		// newer copy, from the mirror if it has caught up, else read live.
		c.stale.add(d.Target.UID, d.ResourceVersion)
		return fmt.Errorf("%s %s/%s at resourceVersion %s: %w", d.Target.Kind, d.Target.Namespace, d.Target.Name,
			d.ResourceVersion, errConflict)
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
// in the foreground ("Kind/name"), or "": an object waiting for such a
// dependent while blocking its own owner could deadlock (gcrules.Plan then
// unblocks its references).
func (c *Controller) cycleDependent(deps []db.Dependent) string {
	for _, dep := range deps {
		depMeta := &db.Object{UID: dep.UID, Finalizers: dep.Finalizers}
		if (dep.Deleting || c.overlay.isForeground(dep.UID)) && c.hasFinalizer(depMeta, gcrules.FinalizerForeground) {
			return dep.Kind + "/" + dep.Name
		}
	}
	return ""
}

// keepInvalidNamespace records that a cluster-scoped object naming a
// namespaced owner kind is kept, and warns on it, once per version.
func (c *Controller) keepInvalidNamespace(ctx context.Context, obj *db.Object, ref api.OwnerRef, d reconcile.Decision) error {
	isNew, err := c.opts.Applier.Record(ctx, d)
	if err != nil {
		return err
	}
	if isNew {
		c.warnInvalidNamespace(obj, ref, fmt.Sprintf("ownerRef %s/%s %s is namespaced, but this object is cluster-scoped", ref.Kind, ref.Name, ref.UID))
	}
	return nil
}

// deleteDependents handles an owner being deleted in the foreground
// (BR-21-03): its dependents go first; once no dependent with
// blockOwnerDeletion remains, the foregroundDeletion finalizer is removed.
func (c *Controller) deleteDependents(ctx context.Context, owner *db.Object) error {
	deps, err := c.opts.DB.DependentsOf(ctx, owner.UID)
	if err != nil {
		return err
	}
	// Dry-run only simulates the blocking dependents away: how many it
	// deleted, and how many it detached or unblocked, the reason says.
	blocking, deleted, released := 0, 0, 0
	for _, dep := range deps {
		switch {
		case c.overlay.isDeleted(dep.UID):
			if dep.BlockOwnerDeletion {
				deleted++
			}
			continue
		case c.overlay.refRemoved(dep.UID, owner.UID):
			if dep.BlockOwnerDeletion {
				released++
			}
			continue
		}
		switch {
		case dep.BlockOwnerDeletion && c.overlay.refUnblocked(dep.UID, owner.UID):
			released++
		case dep.BlockOwnerDeletion:
			blocking++
		}
		if !dep.Deleting {
			c.queue.Add(item{uid: dep.UID})
		}
	}
	if blocking > 0 {
		return c.opts.Applier.Resolve(ctx, api.ControllerOwnerGC, owner.UID)
	}
	d := reconcile.Decision{Controller: api.ControllerOwnerGC, Rule: gcrules.RuleForeground, Action: api.ActionRemoveFinalizer, Target: db.TargetOf(owner),
		ResourceVersion: owner.ResourceVersion, DecidedAt: time.Now(), Reason: foregroundReason(deleted, released)}
	return c.apply(ctx, d, func(ctx context.Context) error { return c.removeFinalizer(ctx, owner, gcrules.FinalizerForeground) }, func() {
		c.overlay.removeFinalizer(owner, gcrules.FinalizerForeground)
	})
}

// orphanDependents handles an owner deleted with the orphan policy
// (BR-21-02): every dependent loses its reference to it, then the orphan
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
		depObj, err := c.object(ctx, dep.UID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if depObj == nil {
			continue
		}
		d := reconcile.Decision{Controller: api.ControllerOwnerGC, Rule: gcrules.RuleOrphan, Action: api.ActionRemoveOwnerRefs, Target: db.TargetOf(depObj),
			ResourceVersion: depObj.ResourceVersion, DecidedAt: time.Now(),
			Reason: fmt.Sprintf("owner %s/%s is deleted with the orphan policy: removing the reference to it", owner.Kind, owner.Name)}
		if err := c.apply(ctx, d, func(ctx context.Context) error {
			return c.removeOwnerRefs(ctx, depObj, []string{owner.UID})
		}, func() { c.overlay.removeRefs(dep.UID, []string{owner.UID}) }); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	d := reconcile.Decision{Controller: api.ControllerOwnerGC, Rule: gcrules.RuleOrphan, Action: api.ActionRemoveFinalizer, Target: db.TargetOf(owner),
		ResourceVersion: owner.ResourceVersion, DecidedAt: time.Now(), Reason: orphanReason(len(deps), c.overlay != nil)}
	return c.apply(ctx, d, func(ctx context.Context) error { return c.removeFinalizer(ctx, owner, gcrules.FinalizerOrphan) }, func() {
		c.overlay.removeFinalizer(owner, gcrules.FinalizerOrphan)
	})
}

// foregroundReason says why an owner deleted in the foreground loses its
// foregroundDeletion finalizer. deleted and released count the dependents
// with blockOwnerDeletion that dry-run only simulated away (deleted, or
// their reference removed or made non-blocking): the cluster still has
// them, so the reason says what enforce would do, and that it was not done.
func foregroundReason(deleted, released int) string {
	if deleted+released == 0 {
		return "no dependent with blockOwnerDeletion remains: removing the foregroundDeletion finalizer"
	}
	var what string
	switch {
	case released == 0:
		what = fmt.Sprintf("once its %s with blockOwnerDeletion %s deleted (dry-run: %s not)",
			dependents(deleted), isAre(deleted), theyAre(deleted))
	case deleted == 0:
		what = fmt.Sprintf("once its %s with blockOwnerDeletion no longer %s it (dry-run: %s still)",
			dependents(released), blockS(released), theyDo(released))
	default:
		what = fmt.Sprintf("once %d of its dependents with blockOwnerDeletion %s deleted and %d no longer %s it (dry-run: none of this is done)",
			deleted, isAre(deleted), released, blockS(released))
	}
	return what + ", the foregroundDeletion finalizer would be removed"
}

// orphanReason says why an owner deleted with the orphan policy loses its
// orphan finalizer; in dry-run its dependents still name it.
func orphanReason(n int, dryRun bool) string {
	if !dryRun {
		return fmt.Sprintf("%d dependent(s) orphaned: removing the orphan finalizer", n)
	}
	return fmt.Sprintf("once its %s no longer %s it (dry-run: %s still), the orphan finalizer would be removed",
		dependents(n), nameS(n), theyDo(n))
}

// assumingDryRun marks a reason that rests on earlier dry-run decisions
// about the object's owners (an owner dry-run deleted, or began deleting):
// in the cluster they were not carried out.
func assumingDryRun(reason string) string {
	return "dry-run, as if the decisions already recorded about its owners had been carried out (they are not): " + reason
}

func dependents(n int) string {
	if n == 1 {
		return "1 dependent"
	}
	return fmt.Sprintf("%d dependents", n)
}

func isAre(n int) string   { return plural(n, "is", "are") }
func theyAre(n int) string { return plural(n, "it is", "they are") }
func theyDo(n int) string  { return plural(n, "it does", "they do") }
func blockS(n int) string  { return plural(n, "blocks", "block") }
func nameS(n int) string   { return plural(n, "names", "name") }
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// --- writes: every one carries the UID and resourceVersion it was decided on.

func (c *Controller) client(ctx context.Context, o *db.Object) (metadata.ResourceInterface, schema.GroupVersionResource, error) {
	gvr, namespaced, err := c.gvrFor(ctx, o.APIVersion, o.Kind)
	if err != nil {
		return nil, gvr, err
	}
	if namespaced {
		return c.opts.Client.Resource(gvr).Namespace(o.Namespace), gvr, nil
	}
	return c.opts.Client.Resource(gvr), gvr, nil
}

func (c *Controller) deleteObject(ctx context.Context, o *db.Object, policy metav1.DeletionPropagation) error {
	rc, gvr, err := c.client(ctx, o)
	if err != nil {
		return err
	}
	uid := types.UID(o.UID)
	rv := o.ResourceVersion
	// A 404 for an unserved path must not pass for a deleted object.
	return unservedPath(rc.Delete(ctx, o.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		PropagationPolicy: &policy,
	}), gvr, o.Name)
}

// patchMeta sends a JSON merge patch of metadata that also names the
// object's UID and resourceVersion, so it applies only to the version the
// decision was made on (409 otherwise).
func (c *Controller) patchMeta(ctx context.Context, o *db.Object, fields map[string]any) error {
	rc, gvr, err := c.client(ctx, o)
	if err != nil {
		return err
	}
	fields["uid"] = o.UID
	fields["resourceVersion"] = o.ResourceVersion
	body, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = rc.Patch(ctx, o.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return unservedPath(err, gvr, o.Name)
}

func ownerRefsJSON(refs []api.OwnerRef) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs))
	for _, r := range refs {
		out = append(out, metav1.OwnerReference{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: types.UID(r.UID),
			Controller: r.Controller, BlockOwnerDeletion: r.BlockOwnerDeletion})
	}
	return out
}

func (c *Controller) removeOwnerRefs(ctx context.Context, o *db.Object, owners []string) error {
	var keep []api.OwnerRef
	for _, r := range o.OwnerReferences {
		if !slices.Contains(owners, r.UID) {
			keep = append(keep, r)
		}
	}
	var refs any = ownerRefsJSON(keep)
	if len(keep) == 0 {
		refs = nil
	}
	return c.patchMeta(ctx, o, map[string]any{"ownerReferences": refs})
}

func (c *Controller) unblockOwnerRefs(ctx context.Context, o *db.Object) error {
	refs := make([]api.OwnerRef, len(o.OwnerReferences))
	copy(refs, o.OwnerReferences)
	for i := range refs {
		if refs[i].BlockOwnerDeletion != nil && *refs[i].BlockOwnerDeletion {
			refs[i].BlockOwnerDeletion = new(false)
		}
	}
	return c.patchMeta(ctx, o, map[string]any{"ownerReferences": ownerRefsJSON(refs)})
}

func (c *Controller) removeFinalizer(ctx context.Context, o *db.Object, finalizer string) error {
	var keep []string
	for _, f := range o.Finalizers {
		if f != finalizer {
			keep = append(keep, f)
		}
	}
	var fin any = keep
	if len(keep) == 0 {
		fin = nil
	}
	return c.patchMeta(ctx, o, map[string]any{"finalizers": fin})
}

// involved is the Event's involvedObject.
func involved(o *db.Object) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		UID: types.UID(o.UID), ResourceVersion: o.ResourceVersion}
}
