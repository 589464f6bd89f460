package lcgc

import (
	"time"

	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// This file holds lcgc's decision as a function of its inputs alone. The
// controller (lcgc.go) finds the candidates, reads each live, calls it and
// deletes.

// ValidFor is how long a LeaseCandidate stays valid after its last
// renewal: upstream's leaseCandidateValidDuration.
const ValidFor = 30 * time.Minute

// expired reports whether a candidate last renewed at renew (nil: never)
// has expired at now, as upstream's isLeaseCandidateExpired: a renewal
// exactly ValidFor ago is still valid.
func expired(renew *time.Time, now time.Time) bool {
	return renew == nil || renew.Add(ValidFor).Before(now)
}

// candidate is what lcgc reads of one LeaseCandidate, of whichever version
// the API serves.
type candidate struct {
	APIVersion      string
	Namespace, Name string
	UID             string
	ResourceVersion string
	LeaseName       string
	// RenewTime is spec.renewTime; nil when unset.
	RenewTime *time.Time
	// Deleting: its deletion was requested already.
	Deleting bool
}

func fromV1beta1(lc *coordinationv1beta1.LeaseCandidate) candidate {
	return fromLive(coordinationv1beta1.SchemeGroupVersion.String(), lc, lc.Spec.LeaseName, lc.Spec.RenewTime)
}

func fromV1alpha2(lc *coordinationv1alpha2.LeaseCandidate) candidate {
	return fromLive(coordinationv1alpha2.SchemeGroupVersion.String(), lc, lc.Spec.LeaseName, lc.Spec.RenewTime)
}

// fromLive is a LeaseCandidate of either version as the API served it.
func fromLive(apiVersion string, m metav1.Object, leaseName string, renew *metav1.MicroTime) candidate {
	c := candidate{APIVersion: apiVersion, Namespace: m.GetNamespace(), Name: m.GetName(),
		UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion(), LeaseName: leaseName,
		Deleting: m.GetDeletionTimestamp() != nil}
	if renew != nil {
		t := renew.Time
		c.RenewTime = &t
	}
	return c
}

// verdict is what decide made of a candidate.
type verdict string

const (
	// verdictDelete: expired, it is deleted (KG-04-01).
	verdictDelete verdict = "delete"
	// verdictRenewed: renewed within ValidFor, it is kept (KG-04-02).
	verdictRenewed verdict = "renewed"
	// verdictDeleting: its deletion was requested already; a delete
	// would add nothing.
	verdictDeleting verdict = "deleting"
)

// decide decides about c, as read live at now. The mirror only chose it:
// a candidate renewed since is kept. An expired one is deleted, on the
// UID and resourceVersion read; the decision is returned with
// verdictDelete.
func decide(c candidate, now time.Time) (reconcile.Decision, verdict) {
	switch {
	case c.Deleting:
		return reconcile.Decision{}, verdictDeleting
	case !expired(c.RenewTime, now):
		return reconcile.Decision{}, verdictRenewed
	}
	reason := "the LeaseCandidate was never renewed (spec.renewTime unset), read live"
	facts := map[string]any{"leaseName": c.LeaseName, "validFor": ValidFor.String()}
	if c.RenewTime != nil {
		reason = "the LeaseCandidate's last renewal (spec.renewTime " +
			c.RenewTime.UTC().Format(time.RFC3339Nano) + ") is more than " + ValidFor.String() +
			" old, read live"
		facts["renewTime"] = c.RenewTime.UTC()
	}
	target := api.Target{APIVersion: c.APIVersion, Kind: kind, Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	return reconcile.Decision{Controller: api.ControllerLCGC, Rule: ruleExpired, Action: api.ActionDelete,
		Target: target, ResourceVersion: c.ResourceVersion, Reason: reason, Facts: facts,
		DecidedAt: now}, verdictDelete
}
