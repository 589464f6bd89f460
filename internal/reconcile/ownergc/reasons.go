package ownergc

import (
	"fmt"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// This file holds the text that audit rows and Events give as the reason
// for a decision.

// foregroundReason says why an owner deleted in the foreground loses its
// foregroundDeletion finalizer. deleted and released count the dependents
// with blockOwnerDeletion that dry-run only simulated away: deleted, or
// with their reference removed or made non-blocking. The cluster still has
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
		what = fmt.Sprintf("once %d of its dependents with blockOwnerDeletion %s deleted "+
			"and %d no longer %s it (dry-run: none of this is done)",
			deleted, isAre(deleted), released, blockS(released))
	}
	return what + ", the foregroundDeletion finalizer would be removed"
}

// orphanReason says why an owner deleted with the orphan policy loses its
// orphan finalizer. In dry-run its dependents still name it.
func orphanReason(n int, dryRun bool) string {
	if !dryRun {
		return fmt.Sprintf("%d dependent(s) orphaned: removing the orphan finalizer", n)
	}
	return fmt.Sprintf("once its %s no longer %s it (dry-run: %s still), the orphan finalizer would be removed",
		dependents(n), nameS(n), theyDo(n))
}

// orphanRefReason says why a dependent loses its reference to owner.
func orphanRefReason(owner *db.Object) string {
	return fmt.Sprintf("owner %s/%s is deleted with the orphan policy: removing the reference to it",
		owner.Kind, owner.Name)
}

// assumingDryRun marks a reason that rests on earlier dry-run decisions
// about the object's owners, such as an owner dry-run deleted or began to
// delete. In the cluster those decisions were not carried out.
func assumingDryRun(reason string) string {
	return "dry-run, as if the decisions already recorded about its owners had been carried out " +
		"(they are not): " + reason
}

// otherNamespaceMessage is the Event's message when the owner's UID exists,
// but in another namespace than the dependent's.
func otherNamespaceMessage(ref api.OwnerRef, namespace string) string {
	return fmt.Sprintf("ownerRef %s/%s %s does not exist in namespace %q", ref.Kind, ref.Name, ref.UID, namespace)
}

// clusterScopedMessage is the Event's message when a cluster-scoped object
// names a namespaced owner kind.
func clusterScopedMessage(ref api.OwnerRef) string {
	return fmt.Sprintf("ownerRef %s/%s %s is namespaced, but this object is cluster-scoped",
		ref.Kind, ref.Name, ref.UID)
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
