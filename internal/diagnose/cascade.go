package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// CascadePropagations are the propagations a preview accepts, as kubectl spells them.
var CascadePropagations = map[string]string{
	"background": gcrules.PropagationBackground,
	"foreground": gcrules.PropagationForeground,
	"orphan":     gcrules.PropagationOrphan,
}

// cascadeFate is what the preview has the collector do to an object so far.
type cascadeFate int

const (
	fateExists     cascadeFate = iota // untouched, or kept
	fateGone                          // deleted in the background (or orphaning, once done)
	fateForeground                    // being deleted in the foreground: its dependents go first
	fateOrphaning                     // being deleted with orphan: its dependents lose the reference
)

// PreviewCascade says what the garbage collector would do if f's root were
// deleted now with propagation (a gcrules.Propagation*): every reference
// is classified and every object decided by gcrules, as ownergc does,
// from the facts as the mirror shows them (the mirror is taken at its word:
// an owner it lacks counts as gone, where ownergc would first confirm with
// a live GET).
func PreviewCascade(f *db.CascadeFacts, propagation string) *api.Cascade {
	n := len(f.Objects)
	p := &cascadePreview{facts: f, index: make(map[string]int, n), dependents: make([][]int, n), fates: make([]cascadeFate, n),
		items: make([]api.CascadeItem, n), depth: make([]int, n)}
	for i, o := range f.Objects {
		p.index[o.UID] = i
	}
	for j, o := range f.Objects {
		for _, r := range o.Refs {
			if i, ok := p.index[r.UID]; ok {
				if deps := p.dependents[i]; len(deps) == 0 || deps[len(deps)-1] != j {
					p.dependents[i] = append(deps, j)
				}
			}
		}
	}
	switch propagation {
	case gcrules.PropagationForeground:
		p.fates[0] = fateForeground
	case gcrules.PropagationOrphan:
		p.fates[0] = fateOrphaning
	default:
		p.fates[0] = fateGone
	}
	p.run()
	return p.result()
}

// cascadePreview holds the objects by their position in facts.Objects (the root
// is 0).
type cascadePreview struct {
	facts      *db.CascadeFacts
	index      map[string]int
	dependents [][]int // the dependents of each object
	fates      []cascadeFate
	items      []api.CascadeItem    // Action "": untouched
	refs       []gcrules.Classified // decide's scratch: Plan keeps none of it
	depth      []int                // 0: not reached (or the root)
}

// fateOf returns the fate of the owner uid, which may be outside the walk.
func (p *cascadePreview) fateOf(uid string) (cascadeFate, *db.CascadeObject) {
	if i, ok := p.index[uid]; ok {
		return p.fates[i], p.facts.Objects[i]
	}
	return fateExists, nil
}

// run decides, breadth first from the root, about every object whose owner
// the preview has deleted; an object is decided again when another of its
// owners goes (its decision can only move from kept to deleted).
func (p *cascadePreview) run() {
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, dep := range p.dependents[i] {
			if dep == 0 {
				continue
			}
			if p.depth[dep] == 0 {
				p.depth[dep] = p.depth[i] + 1
			}
			before := p.fates[dep]
			p.decide(dep)
			if p.fates[dep] != before {
				queue = append(queue, dep)
			}
		}
	}
}

// decide records what the collector does to o given its owners' fates.
func (p *cascadePreview) decide(i int) {
	o := p.facts.Objects[i]
	item := &p.items[i]
	*item = api.CascadeItem{Target: o.Target, Depth: p.depth[i]}
	if o.Deleting {
		// Already being deleted: the collector sends no second delete,
		// and its own finalizers decide when it goes.
		item.Action = api.CascadeKeep
		item.Reason = "already being deleted: not deleted again; it goes when its finalizers (" + strings.Join(o.Finalizers, ", ") + ") are removed"
		return
	}
	in := gcrules.Object{Finalizers: o.Finalizers, HasDependents: o.HasDependents, CycleDependent: p.cycleDependent(i), Refs: p.refs[:0]}
	var orphanedBy *db.CascadeObject
	for _, r := range o.Refs {
		ref := gcrules.Ref{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID,
			BlockOwnerDeletion: r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion}
		var state gcrules.State
		switch f, owner := p.fateOf(r.UID); f {
		case fateOrphaning:
			// The orphaning owner removes its reference (BR-21-02); the
			// others decide.
			orphanedBy = owner
			continue
		case fateGone:
			state = gcrules.Classify(o.Namespace, ref, p.kind(r.OwnerRef), nil, gcrules.Authoritative)
		case fateForeground:
			state = gcrules.Classify(o.Namespace, ref, p.kind(r.OwnerRef), &gcrules.Owner{UID: owner.UID, APIVersion: owner.APIVersion,
				Kind: owner.Kind, Namespace: owner.Namespace, Name: owner.Name, Deleting: true,
				Finalizers: append(slices.Clip(owner.Finalizers), gcrules.FinalizerForeground)}, gcrules.Authoritative)
		default:
			var owner *gcrules.Owner
			if r.Owner != nil {
				owner = &gcrules.Owner{UID: r.UID, APIVersion: r.Owner.APIVersion, Kind: r.Owner.Kind, Namespace: r.Owner.Namespace,
					Name: r.Owner.Name, Deleting: r.Owner.Deleting, Finalizers: r.Owner.Finalizers}
			}
			state = gcrules.Classify(o.Namespace, ref, p.kind(r.OwnerRef), owner, gcrules.Authoritative)
		}
		in.Refs = append(in.Refs, gcrules.Classified{Ref: ref, State: state})
	}
	p.refs = in.Refs
	plan := gcrules.Plan(in)
	item.Reason = plan.Reason
	if plan.Then != nil {
		// The cycle guard unblocks its references, then deletes it.
		plan = *plan.Then
		item.Reason += "; then " + plan.Reason
	}
	item.Rule = plan.Rule
	switch plan.Action {
	case api.ActionDelete:
		item.Action = api.CascadeDelete
		item.Propagation = plan.Propagation
		switch item.Propagation {
		case gcrules.PropagationForeground:
			p.fates[i] = fateForeground
		case gcrules.PropagationOrphan:
			p.fates[i] = fateOrphaning
		default:
			p.fates[i] = fateGone
		}
	case api.ActionRemoveOwnerRefs:
		item.Action = api.CascadeRemoveOwnerRef
	case gcrules.ActionNone:
		if orphanedBy == nil {
			if plan.Rule == "" {
				*item = api.CascadeItem{} // all its owners stay: untouched
				return
			}
			item.Action = api.CascadeKeep // it cannot be decided on (an unserved kind)
			break
		}
		item.Action, item.Rule = api.CascadeRemoveOwnerRef, gcrules.RuleOrphan
		item.Reason = fmt.Sprintf("owner %s/%s is deleted with the orphan policy: removing the reference to it", orphanedBy.Kind, orphanedBy.Name)
	default:
		item.Action = api.CascadeKeep
	}
}

// kind says whether the API serves a reference's owner kind, and its scope.
func (p *cascadePreview) kind(r api.OwnerRef) gcrules.Kind {
	ns, ok := p.facts.Kinds[db.CascadeKind{Group: gcrules.Group(r.APIVersion), Kind: r.Kind}]
	return gcrules.Kind{Served: ok, Namespaced: ns}
}

// cycleDependent names one of the dependents of object i that is being
// deleted in the foreground now, as ownergc's cycle guard looks for.
func (p *cascadePreview) cycleDependent(i int) string {
	for _, j := range p.dependents[i] {
		d := p.facts.Objects[j]
		if d.Deleting && slices.Contains(d.Finalizers, gcrules.FinalizerForeground) {
			return d.Kind + "/" + d.Name
		}
	}
	return ""
}

func (p *cascadePreview) result() *api.Cascade {
	out := &api.Cascade{ByKind: map[string]map[api.CascadeAction]int{}, Truncated: p.facts.Truncated}
	// The items are sorted by their place in p.items: an item is some
	// 150 bytes to move, a place four.
	var order []int32
	kindKeys := map[api.Target]string{} // by apiVersion and kind only
	for i, it := range p.items {
		if it.Action == "" {
			continue
		}
		order = append(order, int32(i))
		gk := api.Target{APIVersion: it.Target.APIVersion, Kind: it.Target.Kind}
		k, ok := kindKeys[gk]
		if !ok {
			k = it.Target.Kind
			if g := gcrules.Group(it.Target.APIVersion); g != "" {
				k += "." + g
			}
			kindKeys[gk] = k
		}
		if out.ByKind[k] == nil {
			out.ByKind[k] = map[api.CascadeAction]int{}
		}
		out.ByKind[k][it.Action]++
	}
	slices.SortFunc(order, func(i, j int32) int {
		a, b := &p.items[i], &p.items[j]
		if c := cmp.Compare(a.Depth, b.Depth); c != 0 {
			return c
		}
		return compareCascadeTargets(a.Target, b.Target)
	})
	out.Items = make([]api.CascadeItem, len(order))
	for k, i := range order {
		out.Items[k] = p.items[i]
	}
	out.Total = len(out.Items)
	out.BlockedBy = p.blockers()
	return out
}

// blockers lists, for every object the preview deletes in the foreground
// (the root included), the dependents that keep blockOwnerDeletion on their
// reference to it: it waits until they are gone, and they wait for their
// own finalizers, or, deleted in the foreground themselves, for their own
// blockers (listed too).
func (p *cascadePreview) blockers() []api.CascadeBlocker {
	out := []api.CascadeBlocker{}
	for i, owner := range p.facts.Objects {
		if p.fates[i] != fateForeground {
			continue
		}
		for _, j := range p.dependents[i] {
			dep, it := p.facts.Objects[j], p.items[j]
			if it.Action == api.CascadeRemoveOwnerRef || !blocksOwner(dep, owner.UID) {
				continue
			}
			held := []string{}
			for _, f := range dep.Finalizers {
				if f != gcrules.FinalizerForeground && f != gcrules.FinalizerOrphan {
					held = append(held, f)
				}
			}
			why := fmt.Sprintf("%s/%s has blockOwnerDeletion on its reference to %s/%s, which is deleted only once it is gone",
				dep.Kind, dep.Name, owner.Kind, owner.Name)
			switch {
			case len(held) > 1:
				why += "; finalizers " + strings.Join(held, ", ") + " hold it until their controllers remove them"
			case len(held) == 1:
				why += "; finalizer " + held[0] + " holds it until its controller removes it"
			case p.fates[j] == fateForeground:
				why += "; it is deleted in the foreground, so it waits for its own blocking dependents"
			case it.Action == api.CascadeKeep:
				why += "; the collector keeps it: " + it.Reason
			}
			out = append(out, api.CascadeBlocker{Target: dep.Target, Owner: owner.Target, Finalizers: held, Reason: why})
		}
	}
	slices.SortFunc(out, func(a, b api.CascadeBlocker) int {
		return cmp.Or(compareCascadeTargets(a.Owner, b.Owner), compareCascadeTargets(a.Target, b.Target))
	})
	return out
}

// blocksOwner reports whether dep has blockOwnerDeletion on a reference to owner.
func blocksOwner(dep *db.CascadeObject, owner string) bool {
	for _, r := range dep.Refs {
		if r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			return true
		}
	}
	return false
}

// compareCascadeTargets orders by namespace, kind, name and UID. It
// compares a field only when those before it are equal (cmp.Or would
// compare all four): a preview sorts thousands of items.
func compareCascadeTargets(a, b api.Target) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	if c := strings.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.UID, b.UID)
}
