package podgc

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegcd/kubegcd/internal/db"
)

// This file holds PodGC's decisions as functions of their inputs alone:
// pods, what is known of their nodes, the configuration and the time. The
// controller (podgc.go) reads the mirror, checks nodes live, calls them and
// hands the pods they choose to its workers.

// job is one pod a collection chose, and why.
type job struct {
	pod   *db.Object
	rule  string
	label string // the reason label of the force-delete metrics
	why   string
	facts map[string]any
	// orphaned pods get the DisruptionTarget condition (BR-24-04).
	condition bool
}

// terminated reports whether a pod has terminated: its phase is neither
// Pending, Running nor Unknown. An empty phase counts, as upstream has it.
func terminated(p *db.Pod) bool {
	switch corev1.PodPhase(p.Phase) {
	case corev1.PodPending, corev1.PodRunning, corev1.PodUnknown:
		return false
	}
	return true
}

// evicted reports whether the kubelet evicted the pod (upstream's
// eviction.PodIsEvicted): such pods go first among the terminated pods.
func evicted(p *db.Pod) bool { return p.Phase == "Failed" && p.Reason == "Evicted" }

// created returns a pod's creationTimestamp to the microsecond, as the
// mirror keeps it; ok is false when the pod has none.
func created(o *db.Object) (t time.Time, ok bool) {
	if o.CreationTimestamp == nil || o.CreationTimestamp.IsZero() {
		return time.Time{}, false
	}
	return o.CreationTimestamp.Truncate(time.Microsecond), true
}

// deletionOrder compares two pods in the order they go: Evicted first, then
// the oldest creationTimestamp (a pod without one first), then by name, and
// the UID breaks the last ties. It is the store's order, so a page of
// db.TerminatedPods is already sorted by it.
func deletionOrder(a, b *db.Object) int {
	if ea, eb := evicted(a.Pod), evicted(b.Pod); ea != eb {
		if ea {
			return -1
		}
		return 1
	}
	ta, oka := created(a)
	tb, okb := created(b)
	switch {
	case oka != okb:
		if oka {
			return 1
		}
		return -1
	case oka:
		if c := ta.Compare(tb); c != 0 {
			return c
		}
	}
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.UID, b.UID))
}

// selects reports whether f selects the pod, as the store's query does: a
// terminated pod, of f's namespace when set, created before f's cutoff when
// set. A pod without a creationTimestamp has no age, so no cutoff selects it.
func selects(f db.TerminatedFilter, pod *db.Object) bool {
	if !terminated(pod.Pod) || (f.Namespace != "" && pod.Namespace != f.Namespace) {
		return false
	}
	if f.CreatedBefore == nil {
		return true
	}
	t, ok := created(pod)
	return ok && !f.CreatedBefore.IsZero() && t.Before(f.CreatedBefore.Truncate(time.Microsecond))
}

// A sweep is one of gcTerminated's collections. Of the terminated pods its
// filter selects, the first n in deletion order go, all under one rule and
// one reason.
type sweep struct {
	rule   string
	filter db.TerminatedFilter
	// n is how many go; none when it is 0 or less.
	n     int
	why   string
	facts map[string]any // added to the facts of each pod
}

// overThreshold is BR-24-01: of total terminated pods in the cluster, those
// beyond the threshold go. A threshold of 0 turns the rule off.
func overThreshold(total, threshold int) sweep {
	if threshold <= 0 {
		return sweep{}
	}
	return sweep{rule: ruleTerminated, n: total - threshold,
		why: fmt.Sprintf("the cluster holds more terminated pods than --terminated-pod-gc-threshold=%d; "+
			"this one is among the excess (Evicted first, then the oldest)", threshold),
		facts: map[string]any{"terminatedPods": total, "threshold": threshold}}
}

// pastMaxAge is KG-24-02: every terminated pod created more than maxAge
// before now goes. A maxAge of 0 turns the rule off.
func pastMaxAge(maxAge time.Duration, now time.Time) sweep {
	if maxAge <= 0 {
		return sweep{}
	}
	cutoff := now.Add(-maxAge)
	return sweep{rule: ruleMaxAge, filter: db.TerminatedFilter{CreatedBefore: &cutoff}, n: math.MaxInt,
		why:   fmt.Sprintf("terminated, and created more than --terminated-pod-max-age=%s ago", maxAge),
		facts: map[string]any{"maxAge": maxAge.String()}}
}

// overNamespaceThreshold is KG-24-03: of total terminated pods in namespace
// ns, those beyond its threshold go. Here a threshold of 0 keeps none.
func overNamespaceThreshold(ns string, total, threshold int) sweep {
	return sweep{rule: ruleNamespaceThreshold, filter: db.TerminatedFilter{Namespace: ns}, n: total - threshold,
		why: fmt.Sprintf("namespace %s holds more terminated pods than its threshold of %d "+
			"(--terminated-pod-gc-threshold-namespace); "+
			"this one is among the excess (Evicted first, then the oldest)", ns, threshold),
		facts: map[string]any{"terminatedPodsInNamespace": total, "threshold": threshold}}
}

// namespaces returns the namespaces given thresholds, in the order a pass
// sweeps them.
func namespaces(thresholds map[string]int) []string { return slices.Sorted(maps.Keys(thresholds)) }

// take returns the jobs of the first n of pods, in deletion order, that the
// sweep's filter selects.
func (s sweep) take(pods []*db.Object, n int) []job {
	var jobs []job
	for _, pod := range slices.SortedStableFunc(slices.Values(pods), deletionOrder) {
		if len(jobs) >= n {
			break
		}
		if selects(s.filter, pod) {
			jobs = append(jobs, job{pod: pod, rule: s.rule, label: reasonTerminated, why: s.why,
				facts: podFacts(pod, s.facts)})
		}
	}
	return jobs
}

// outOfService reports whether a node is out of service (BR-24-02): its
// Ready condition is not True, and it has a taint with the key
// node.kubernetes.io/out-of-service, whatever the effect. The store's
// TerminatingPodsOnOutOfServiceNodes lists the pods on such nodes.
func outOfService(n *db.Node) bool {
	return n.Ready != string(corev1.ConditionTrue) &&
		slices.ContainsFunc(n.Taints, func(t db.Taint) bool { return t.Key == corev1.TaintNodeOutOfService })
}

// terminatingOutOfService is BR-24-02: of pods bound to out-of-service
// nodes, those being deleted go, in the order given.
func terminatingOutOfService(pods []*db.Object) []job {
	var jobs []job
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil || pod.Pod.NodeName == "" {
			continue
		}
		why := fmt.Sprintf("terminating on node %s, which is not Ready and is tainted %s",
			pod.Pod.NodeName, corev1.TaintNodeOutOfService)
		facts := map[string]any{"nodeReady": false, "taint": corev1.TaintNodeOutOfService}
		jobs = append(jobs, job{pod: pod, rule: ruleOutOfService, label: reasonOutOfService, why: why,
			facts: podFacts(pod, facts)})
	}
	return jobs
}

// nodeCheck is what a live GET of a node missing from the mirror found. Its
// value is the result label of the node-check metric.
type nodeCheck string

const (
	unchecked   nodeCheck = ""
	nodePresent nodeCheck = "present"
	nodeAbsent  nodeCheck = "absent"
	checkFailed nodeCheck = "error"
)

// checkOf reads the error of a live GET of a node.
func checkOf(err error) nodeCheck {
	switch {
	case err == nil:
		return nodePresent
	case apierrors.IsNotFound(err):
		return nodeAbsent
	}
	return checkFailed
}

// orphanStep is what a pass does about a node missing from the mirror.
type orphanStep int

const (
	// inQuarantine: the node's pods stay pending until the quarantine ends.
	inQuarantine orphanStep = iota
	// checkLive: the quarantine is over; the node is looked up live.
	checkLive
	// orphanPods: the node is gone; its pods go (BR-24-03).
	orphanPods
	// keepPods: the live check failed; the pods keep their pending rows,
	// and a later pass checks again.
	keepPods
)

// missing is the decision about one node missing from the mirror.
type missing struct {
	step orphanStep
	// since is when the node went missing, as the controller remembers it
	// from this pass on.
	since time.Time
	// until is, in quarantine, when the quarantine ends.
	until time.Time
}

// missingNode decides about a node missing from the mirror (BR-24-03).
// since is when a pass first found it missing, zero if this pass is the
// first. check is what the live GET found, unchecked before it is made. A
// node the GET finds starts a new quarantine: the mirror lags.
func missingNode(since, now time.Time, quarantine time.Duration, check nodeCheck) missing {
	if since.IsZero() {
		since = now
	}
	switch check {
	case unchecked:
		if end := since.Add(quarantine); now.Before(end) {
			return missing{step: inQuarantine, since: since, until: end}
		}
		return missing{step: checkLive, since: since}
	case nodePresent:
		return missing{step: inQuarantine, since: now, until: now.Add(quarantine)}
	case nodeAbsent:
		return missing{step: orphanPods, since: since}
	}
	return missing{step: keepPods, since: since}
}

// quarantined returns the pending decisions about the pods bound to a node
// in quarantine. When the quarantine ends is the pending row's notBefore,
// not its reason.
func quarantined(node string, pods []*db.Object, quarantine time.Duration) []job {
	why := fmt.Sprintf("bound to node %s, which is missing from the mirror: "+
		"in quarantine (--podgc-quarantine=%s), then the node is looked up live", node, quarantine)
	var jobs []job
	for _, pod := range pods {
		if pod.Pod.NodeName == node {
			jobs = append(jobs, job{pod: pod, rule: ruleOrphaned, label: reasonOrphaned, why: why})
		}
	}
	return jobs
}

// orphans is BR-24-03 and BR-24-04: the pods bound to a node that is gone
// go, each marked with the DisruptionTarget condition. The reason has no
// age: it would change every pass and make the same decision a new one
// (another audit row, a new since). When the node went missing is in the
// facts.
func orphans(node string, pods []*db.Object, since time.Time, quarantine time.Duration) []job {
	why := fmt.Sprintf("bound to node %s, which is gone: missing from the mirror past its quarantine "+
		"(--podgc-quarantine=%s) and not found by a live GET", node, quarantine)
	var jobs []job
	for _, pod := range pods {
		if pod.Pod.NodeName == node {
			facts := map[string]any{"nodeMissingSince": since.UTC(), "nodeCheck": "not found"}
			jobs = append(jobs, job{pod: pod, rule: ruleOrphaned, label: reasonOrphaned, why: why,
				condition: true, facts: podFacts(pod, facts)})
		}
	}
	return jobs
}

// unscheduledTerminating is KG-24-01: pods being deleted that are bound to
// no node go, whatever their phase: no kubelet will ever finish them.
func unscheduledTerminating(pods []*db.Object) []job {
	var jobs []job
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil && pod.Pod.NodeName == "" {
			jobs = append(jobs, job{pod: pod, rule: ruleUnscheduled, label: reasonUnscheduled,
				why:   "terminating, and bound to no node: no kubelet will ever finish it",
				facts: podFacts(pod, nil)})
		}
	}
	return jobs
}

// heldWhy is the reason recorded for a pod that a finalizer still holds
// after sent deletes, while its back-off delays the next delete. The
// pending row's notBefore says when that delete goes.
func heldWhy(pod *db.Object, sent int, why string) string {
	return fmt.Sprintf("held by finalizers %v after %d delete(s); the next waits out a back-off: %s",
		pod.Finalizers, sent, why)
}

// podFacts is what every podgc decision records about the pod, plus extra.
func podFacts(pod *db.Object, extra map[string]any) map[string]any {
	f := map[string]any{"phase": pod.Pod.Phase, "node": pod.Pod.NodeName, "evicted": evicted(pod.Pod),
		"terminating": pod.DeletionTimestamp != nil}
	if pod.CreationTimestamp != nil {
		f["created"] = pod.CreationTimestamp.UTC()
	}
	maps.Copy(f, extra)
	return f
}
