package ownergc

import (
	"slices"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/gcrules"
)

// This file holds the collector's decisions as functions of their inputs
// alone. The controller establishes the facts (classify.go), gcrules.Plan
// decides, and attempt.go and deleting.go carry the decisions out.

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

// viaDryRun marks a state that rests on an earlier dry-run decision.
const viaDryRun = "dry-run"

// factOf starts the fact about ref; classify fills in its state.
func factOf(ref api.OwnerRef) refFact {
	return refFact{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID}
}

// with returns the fact with its state and how it was established.
func (f refFact) with(state, via string) refFact {
	f.State, f.Via = state, via
	return f
}

// restsOnDryRun reports whether any of facts rests on an earlier dry-run
// decision, so that the reasons built on them must say so.
func restsOnDryRun(facts []refFact) bool {
	return slices.ContainsFunc(facts, func(f refFact) bool { return f.Via == viaDryRun })
}

func ruleRef(ref api.OwnerRef) gcrules.Ref {
	return gcrules.Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: ref.UID,
		BlockOwnerDeletion: ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion}
}

// foregroundTally is what an owner deleted in the foreground waits for. It
// counts its dependents with blockOwnerDeletion: those still blocking it,
// and those dry-run only simulated away, deleted or released (their
// reference removed or made non-blocking). wake lists the dependents to
// look at again: those not being deleted already.
type foregroundTally struct {
	blocking, deleted, released int
	wake                        []string
}

// tallyForeground counts owner's dependents as enforce would have left
// them: o is dry-run's overlay, nil when enforcing.
func tallyForeground(owner string, deps []db.Dependent, o *overlay) foregroundTally {
	var t foregroundTally
	for _, dep := range deps {
		switch {
		case o.isDeleted(dep.UID):
			if dep.BlockOwnerDeletion {
				t.deleted++
			}
			continue
		case o.refRemoved(dep.UID, owner):
			if dep.BlockOwnerDeletion {
				t.released++
			}
			continue
		}
		switch {
		case dep.BlockOwnerDeletion && o.refUnblocked(dep.UID, owner):
			t.released++
		case dep.BlockOwnerDeletion:
			t.blocking++
		}
		if !dep.Deleting {
			t.wake = append(t.wake, dep.UID)
		}
	}
	return t
}
