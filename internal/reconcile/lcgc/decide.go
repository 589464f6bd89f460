package lcgc

import (
	"time"

	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"

	"github.com/kubegcd/kubegcd/internal/db"
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
	c := candidate{APIVersion: coordinationv1beta1.SchemeGroupVersion.String(), Namespace: lc.Namespace, Name: lc.Name,
		UID: string(lc.UID), ResourceVersion: lc.ResourceVersion, LeaseName: lc.Spec.LeaseName, Deleting: lc.DeletionTimestamp != nil}
	if lc.Spec.RenewTime != nil {
		t := lc.Spec.RenewTime.Time
		c.RenewTime = &t
	}
	return c
}

func fromV1alpha2(lc *coordinationv1alpha2.LeaseCandidate) candidate {
	c := candidate{APIVersion: coordinationv1alpha2.SchemeGroupVersion.String(), Namespace: lc.Namespace, Name: lc.Name,
		UID: string(lc.UID), ResourceVersion: lc.ResourceVersion, LeaseName: lc.Spec.LeaseName, Deleting: lc.DeletionTimestamp != nil}
	if lc.Spec.RenewTime != nil {
		t := lc.Spec.RenewTime.Time
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
		reason = "the LeaseCandidate's last renewal (spec.renewTime " + c.RenewTime.UTC().Format(time.RFC3339Nano) +
			") is more than " + ValidFor.String() + " old, read live"
		facts["renewTime"] = c.RenewTime.UTC()
	}
	return reconcile.Decision{Controller: Name, Rule: ruleExpired, Action: actionDelete,
		Target:          db.Target{APIVersion: c.APIVersion, Kind: kind, Namespace: c.Namespace, Name: c.Name, UID: c.UID},
		ResourceVersion: c.ResourceVersion, Reason: reason, Facts: facts, DecidedAt: now}, verdictDelete
}
