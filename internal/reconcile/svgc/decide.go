package svgc

import (
	"fmt"
	"time"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// This file holds svgc's decisions as functions of their inputs alone. The
// controller (svgc.go) looks the Leases up, calls them and does the writes.

// leaseGone reads the lease path's live lookup of a server's identity
// Lease. NotFound means the Lease is gone, so the server's entries must go.
// Found means it was re-created meanwhile and its entries stay. Any other
// error is returned, to be retried: a failed lookup is not proof of absence.
func leaseGone(server string, err error) (bool, error) {
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err):
		return true, nil
	default:
		return false, fmt.Errorf("looking up lease %s: %w", server, err)
	}
}

// isIdentityLease reports whether lease, as looked up live in kube-system
// (nil when not found), is a kube-apiserver's identity Lease. Its holder
// and its expiry do not count: like upstream, svgc waits for an expired
// Lease to be deleted (kube-apiserver's own lease GC does it) and acts on
// the deletion.
func isIdentityLease(lease *coordinationv1.Lease) bool {
	return lease != nil && lease.Labels[identityLabel] == identityValue
}

// storageVersionAction is what svgc does about one StorageVersion.
type storageVersionAction struct {
	decision reconcile.Decision
	// update is the StorageVersion with only the entries kept, its
	// commonEncodingVersion and AllEncodingVersionsEqual condition
	// recomputed, for the status subresource. It is nil for a delete.
	update *apiserverinternalv1alpha1.StorageVersion
}

// decideStorageVersion decides about sv, given leases, the live lookup of
// the identity Lease of each server its entries name (nil, or no key, when
// not found). The entries of servers without an identity Lease go
// (KG-06-01); when none would be left, sv is deleted instead (KG-06-02).
// It reports false when every entry's server has its Lease.
func decideStorageVersion(sv *apiserverinternalv1alpha1.StorageVersion, leases map[string]*coordinationv1.Lease,
	now time.Time) (storageVersionAction, bool) {
	var kept []apiserverinternalv1alpha1.ServerStorageVersion
	var removed []string
	for _, e := range sv.Status.StorageVersions {
		if isIdentityLease(leases[e.APIServerID]) {
			kept = append(kept, e)
		} else {
			removed = append(removed, e.APIServerID)
		}
	}
	if len(removed) == 0 {
		return storageVersionAction{}, false
	}
	why := fmt.Sprintf("entries of API servers without a kube-apiserver identity lease in kube-system "+
		"(looked up live): %v", removed)
	target := api.Target{APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion",
		Name: sv.Name, UID: string(sv.UID)}
	facts := map[string]any{"removedServers": removed, "keptEntries": len(kept)}
	d := reconcile.Decision{Controller: api.ControllerSVGC, Rule: ruleNoLease, Action: api.ActionRemoveEntries,
		Target: target, ResourceVersion: sv.ResourceVersion, Reason: why, Facts: facts, DecidedAt: now}
	if len(kept) == 0 {
		d.Rule, d.Action = ruleEmpty, api.ActionDelete
		d.Reason = why + "; none is left, so the StorageVersion is deleted"
		return storageVersionAction{decision: d}, true
	}
	updated := sv.DeepCopy()
	updated.Status.StorageVersions = kept
	SetCommonEncodingVersion(updated, now)
	if v := updated.Status.CommonEncodingVersion; v != nil {
		facts["commonEncodingVersion"] = *v
	}
	return storageVersionAction{decision: d, update: updated}, true
}

// SetCommonEncodingVersion recomputes status.commonEncodingVersion (set
// when every entry agrees) and the AllEncodingVersionsEqual condition, as
// k8s.io/apiserver's storageversion.SetCommonEncodingVersion does.
func SetCommonEncodingVersion(sv *apiserverinternalv1alpha1.StorageVersion, now time.Time) {
	var old *string
	if v := sv.Status.CommonEncodingVersion; v != nil {
		s := *v
		old = &s
	}
	sv.Status.CommonEncodingVersion = nil
	if len(sv.Status.StorageVersions) > 0 {
		first := sv.Status.StorageVersions[0].EncodingVersion
		agreed := true
		for _, e := range sv.Status.StorageVersions {
			if e.EncodingVersion != first {
				agreed = false
				break
			}
		}
		if agreed {
			sv.Status.CommonEncodingVersion = &first
		}
	}
	cond := apiserverinternalv1alpha1.StorageVersionCondition{
		Type:               apiserverinternalv1alpha1.AllEncodingVersionsEqual,
		Status:             apiserverinternalv1alpha1.ConditionFalse,
		ObservedGeneration: sv.Generation,
		LastTransitionTime: metav1.NewTime(now),
		Reason:             "CommonEncodingVersionUnset",
		Message:            "Common encoding version unset",
	}
	if sv.Status.CommonEncodingVersion != nil {
		cond.Status = apiserverinternalv1alpha1.ConditionTrue
		cond.Reason, cond.Message = "CommonEncodingVersionSet", "Common encoding version set"
	}
	force := old != nil && sv.Status.CommonEncodingVersion != nil && *old != *sv.Status.CommonEncodingVersion
	for i := range sv.Status.Conditions {
		existing := &sv.Status.Conditions[i]
		if existing.Type != cond.Type {
			continue
		}
		if existing.Status != cond.Status || force {
			existing.LastTransitionTime = cond.LastTransitionTime
		}
		existing.Status, existing.Reason, existing.Message = cond.Status, cond.Reason, cond.Message
		existing.ObservedGeneration = cond.ObservedGeneration
		return
	}
	sv.Status.Conditions = append(sv.Status.Conditions, cond)
}
