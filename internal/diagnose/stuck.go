package diagnose

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func targetOf(o *db.Object) api.Target { return db.TargetOf(o) }

// conditionsOf gives a namespace's mirrored conditions as the API shows them.
func conditionsOf(cs []db.Condition) []api.Condition {
	if cs == nil {
		return nil
	}
	out := make([]api.Condition, len(cs))
	for i, c := range cs {
		out[i] = api.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
	}
	return out
}

// Collector says which garbage collector removes the foregroundDeletion
// and orphan finalizers.
type Collector int

const (
	// UpstreamGC: kubegcd's ownergc does not run, so kube-controller-
	// manager's garbage collector (if it runs) does it.
	UpstreamGC Collector = iota
	// KubegcdDryRun: ownergc runs in dry-run and only records.
	KubegcdDryRun
	// Kubegcd: ownergc runs and enforces.
	Kubegcd
)

func (c Collector) String() string {
	switch c {
	case Kubegcd:
		return "the garbage collector (kubegcd's ownergc)"
	case KubegcdDryRun:
		return "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc is in dry-run and only records what it would do)"
	}
	return "the garbage collector (kube-controller-manager's, if it runs: kubegcd's ownergc does not)"
}

// StuckOptions are what the diagnosis needs beside the mirror.
type StuckOptions struct {
	Now time.Time
	GC  Collector
	// DiscoveryFailures maps each API group/version whose discovery failed
	// to the error.
	DiscoveryFailures map[string]string
}

// WhoRemoves says who is expected to remove a finalizer, and when.
func WhoRemoves(finalizer string, gc Collector) string {
	switch finalizer {
	case "foregroundDeletion":
		return gc.String() + ", once no dependent with blockOwnerDeletion: true is left"
	case "orphan":
		return gc.String() + ", once it has removed the ownerReference to this object from every dependent"
	case "kubernetes":
		return "the namespace controller (kube-controller-manager), once it has deleted everything in the namespace"
	case "kubernetes.io/pvc-protection":
		return "the PVC protection controller (kube-controller-manager), once no pod uses the claim"
	case "kubernetes.io/pv-protection":
		return "the PV protection controller (kube-controller-manager), once no claim is bound to the volume"
	case "batch.kubernetes.io/job-tracking":
		return "the Job controller (kube-controller-manager), once it has counted the pod"
	case "service.kubernetes.io/load-balancer-cleanup":
		return "the service controller (cloud-controller-manager), once the load balancer is deleted"
	}
	if domain, _, ok := strings.Cut(finalizer, "/"); ok && strings.Contains(domain, ".") {
		return "the controller of " + domain
	}
	return "whoever added it (its name names no controller)"
}

// Stuck explains each deletion in data, in its order.
func Stuck(data *db.StuckData, opts StuckOptions) []api.StuckItem {
	items := make([]api.StuckItem, 0, len(data.Objects))
	for _, o := range data.Objects {
		requested := o.DeletionRequested()
		it := api.StuckItem{
			Target:            targetOf(o),
			DeletionRequested: requested.UTC(),
			Age:               max(opts.Now.Sub(requested), 0).Round(time.Second).Seconds(),
			State:             stateOf(o),
		}
		visiting := map[string]bool{o.UID: true}
		it.Blockers = blockersOf(o, data, opts, visiting)
		if it.State == api.StateNamespaceTerminating {
			it.Blockers = append(it.Blockers, namespaceBlockers(o, data, opts)...)
			if o.NamespaceStatus != nil {
				it.Conditions = conditionsOf(o.NamespaceStatus.Conditions)
			}
		}
		if it.Blockers == nil {
			it.Blockers = []api.Blocker{}
		}
		it.Explanation = explain(o, it, opts)
		items = append(items, it)
	}
	return items
}

func isNamespace(o *db.Object) bool { return o.APIVersion == "v1" && o.Kind == "Namespace" }

func stateOf(o *db.Object) api.StuckState {
	switch {
	case isNamespace(o):
		return api.StateNamespaceTerminating
	case slices.Contains(o.Finalizers, "foregroundDeletion"):
		return api.StateDeletingDependents
	case slices.Contains(o.Finalizers, "orphan"):
		return api.StateOrphaningDependents
	case len(o.Finalizers) > 0:
		return api.StateFinalizing
	}
	return api.StateDeleting
}

// blockersOf is what holds o by itself: its finalizers; orphaning, the
// dependents that still name it; deleting in the foreground, its blocking
// dependents and what holds each of them.
// visiting holds the chain above o, so a cycle stops.
func blockersOf(o *db.Object, data *db.StuckData, opts StuckOptions, visiting map[string]bool) []api.Blocker {
	var out []api.Blocker
	for _, f := range o.Finalizers {
		b := api.Blocker{Type: api.BlockerFinalizer, Finalizer: f, Reason: WhoRemoves(f, opts.GC)}
		if f == "foregroundDeletion" {
			if deps, read := data.Blocking[o.UID]; read && len(deps) == 0 && data.MoreBlocking[o.UID] == 0 {
				b.Reason += "; none is left, so it is due now"
			}
		}
		out = append(out, b)
	}
	for _, dep := range data.Orphaning[o.UID] {
		t := targetOf(dep)
		out = append(out, api.Blocker{Type: api.BlockerDependent, Target: &t,
			Reason: "still names it as an owner: the garbage collector removes that reference before it removes orphan"})
	}
	if n := data.MoreOrphaning[o.UID]; n > 0 {
		out = append(out, api.Blocker{Type: api.BlockerDependent, Reason: plural(n, "1 more dependent that still names it as an owner",
			"%d more dependents that still name it as an owner")})
	}
	if !o.IsForegroundDeleting() {
		return out
	}
	for _, dep := range data.Blocking[o.UID] {
		t := targetOf(dep)
		b := api.Blocker{Type: api.BlockerDependent, Target: &t}
		switch {
		case visiting[dep.UID]:
			b.Reason = "has blockOwnerDeletion: true and is itself waiting, further up this chain: a cycle"
		case dep.DeletionTimestamp == nil:
			b.Reason = "has blockOwnerDeletion: true and is not being deleted yet: the garbage collector deletes it first"
		default:
			b.Reason = fmt.Sprintf("has blockOwnerDeletion: true and was asked to be deleted %s ago", deletionAge(opts.Now, dep))
			visiting[dep.UID] = true
			b.Blockers = blockersOf(dep, data, opts, visiting)
			delete(visiting, dep.UID)
		}
		out = append(out, b)
	}
	if n := data.MoreBlocking[o.UID]; n > 0 {
		out = append(out, api.Blocker{Type: api.BlockerDependent, Reason: plural(n, "1 more dependent with blockOwnerDeletion: true",
			"%d more dependents with blockOwnerDeletion: true")})
	}
	return out
}

// namespaceBlockers is what holds a namespace besides its own metadata:
// its spec finalizers, what is left in it, and API groups that cannot be
// listed.
func namespaceBlockers(ns *db.Object, data *db.StuckData, opts StuckOptions) []api.Blocker {
	var out []api.Blocker
	if st := ns.NamespaceStatus; st != nil {
		for _, f := range st.SpecFinalizers {
			out = append(out, api.Blocker{Type: api.BlockerFinalizer, Finalizer: f, Reason: WhoRemoves(f, opts.GC) + " (spec.finalizers)"})
		}
	} else {
		// Mirrored before its spec was read: every namespace being
		// deleted keeps kubernetes until the namespace controller is done.
		out = append(out, api.Blocker{Type: api.BlockerFinalizer, Finalizer: "kubernetes", Reason: WhoRemoves("kubernetes", opts.GC) +
			" (spec.finalizers, not mirrored yet: a namespace being deleted keeps it until then)"})
	}
	c := data.Content[ns.Name]
	if c != nil {
		for _, o := range c.Objects {
			t := targetOf(o)
			b := api.Blocker{Type: api.BlockerNamespaceContent, Target: &t}
			if o.DeletionTimestamp == nil {
				b.Reason = "still in the namespace, not being deleted yet: the namespace controller deletes it"
			} else {
				b.Reason = fmt.Sprintf("still in the namespace, asked to be deleted %s ago", deletionAge(opts.Now, o))
				b.Blockers = blockersOf(o, data, opts, map[string]bool{ns.UID: true, o.UID: true})
			}
			out = append(out, b)
		}
		if c.Total > len(c.Objects) {
			out = append(out, api.Blocker{Type: api.BlockerNamespaceContent, Counts: maps.Clone(c.ByKind),
				Reason: fmt.Sprintf("%d objects left in the namespace in all, %d of them named above", c.Total, len(c.Objects))})
		}
	}
	for _, gv := range slices.Sorted(maps.Keys(opts.DiscoveryFailures)) {
		out = append(out, api.Blocker{Type: api.BlockerDiscovery, GroupVersion: gv, Reason: fmt.Sprintf(
			"discovery of %s fails (%s): the namespace controller cannot list its resources, so it cannot finish emptying the namespace",
			gv, opts.DiscoveryFailures[gv])})
	}
	return out
}

func deletionAge(now time.Time, o *db.Object) time.Duration {
	return max(now.Sub(o.DeletionRequested()), 0).Round(time.Second)
}

// explain says in one paragraph what Stuck found.
func explain(o *db.Object, it api.StuckItem, opts StuckOptions) string {
	var b strings.Builder
	since := time.Duration(it.Age) * time.Second
	if it.State == api.StateNamespaceTerminating {
		fmt.Fprintf(&b, "Namespace %s has been Terminating for %s. ", o.Name, since)
	} else {
		fmt.Fprintf(&b, "%s was asked to be deleted %s ago and still exists. ", it.Target, since)
	}
	var content, discovery []api.Blocker
	var more *api.Blocker
	for i, bl := range it.Blockers {
		switch bl.Type {
		case api.BlockerFinalizer:
			if bl.Finalizer == "kubernetes" && it.State == api.StateNamespaceTerminating {
				continue
			}
			fmt.Fprintf(&b, "It is held by its finalizer %s, to be removed by %s. ", bl.Finalizer, bl.Reason)
		case api.BlockerDependent:
			fmt.Fprintf(&b, "It waits for %s. ", dependentWords(bl))
		case api.BlockerNamespaceContent:
			if bl.Target == nil {
				more = &it.Blockers[i]
				continue
			}
			content = append(content, bl)
		case api.BlockerDiscovery:
			discovery = append(discovery, bl)
		}
	}
	if it.State == api.StateNamespaceTerminating {
		switch {
		case len(content) == 0 && o.NamespaceStatus != nil && !slices.Contains(o.NamespaceStatus.SpecFinalizers, "kubernetes"):
			b.WriteString("Nothing is left in it and the namespace controller is done with it. ")
		case len(content) == 0:
			b.WriteString("Nothing is left in it, so the namespace controller (kube-controller-manager) should remove its spec finalizer kubernetes now; if the namespace stays, that controller is not running. ")
		default:
			words := make([]string, len(content))
			for i, c := range content {
				words[i] = contentWords(c)
			}
			fmt.Fprintf(&b, "The namespace controller removes it once everything in it is gone; still in it: %s. ", strings.Join(words, "; "))
			if more != nil {
				fmt.Fprintf(&b, "In all %s. ", more.Reason)
			}
		}
		for _, c := range it.Conditions {
			if c.Status == "True" {
				fmt.Fprintf(&b, "The namespace controller reports %s: %s. ", c.Type, strings.TrimSuffix(c.Message, "."))
			}
		}
		for _, d := range discovery {
			fmt.Fprintf(&b, "Also, %s. ", d.Reason)
		}
	}
	if it.State == api.StateDeleting {
		switch {
		case o.Pod != nil && o.Pod.NodeName != "":
			fmt.Fprintf(&b, "No finalizer holds it: a pod bound to a node goes once the kubelet of %s has stopped it, or PodGC deletes it once that node is gone or out of service. ", o.Pod.NodeName)
		case o.Pod != nil:
			b.WriteString("No finalizer holds it and it is bound to no node: PodGC deletes it. ")
		default:
			b.WriteString("No finalizer holds it any more: it should go at once, unless the mirror has not caught up yet. ")
		}
	}
	return strings.TrimSpace(b.String())
}

// dependentWords describes a dependent and, recursively, what holds it:
// the chain owner ← dependent ← finalizer in words.
func dependentWords(bl api.Blocker) string {
	if bl.Target == nil {
		return bl.Reason
	}
	s := "its dependent " + bl.Target.String() + ", which " + bl.Reason
	if holds := holdWords(bl.Blockers); holds != "" {
		s += ", " + holds
	}
	return s
}

func contentWords(bl api.Blocker) string {
	s := bl.Target.String()
	if holds := holdWords(bl.Blockers); holds != "" {
		return s + ", " + holds
	}
	if strings.Contains(bl.Reason, "not being deleted") {
		return s + ", not deleted yet"
	}
	return s
}

// holdWords says what holds an object in a chain.
func holdWords(bs []api.Blocker) string {
	var parts []string
	for _, b := range bs {
		switch b.Type {
		case api.BlockerFinalizer:
			parts = append(parts, fmt.Sprintf("held by its finalizer %s (%s)", b.Finalizer, b.Reason))
		case api.BlockerDependent:
			parts = append(parts, "waiting for "+dependentWords(b))
		}
	}
	return strings.Join(parts, " and ")
}
