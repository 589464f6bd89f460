// Made from docs/rules.md by `go test ./web -run TestRulesJS -update`: edit docs/rules.md, not this file.
// Each rule id (and each rule name of enforcement itself) with a one-line title and
// the anchor of the docs/rules.md heading that explains it.
export const rules = {
  "BR-19-01": {
    "title": "ttl · step 0, sizeMin 0, sizeMax 100, TTL 0 s",
    "anchor": "ttl"
  },
  "BR-19-02": {
    "title": "ttl · step 1, sizeMin 90, sizeMax 500, TTL 15 s",
    "anchor": "ttl"
  },
  "BR-19-03": {
    "title": "ttl · step 2, sizeMin 450, sizeMax 1000, TTL 30 s",
    "anchor": "ttl"
  },
  "BR-19-04": {
    "title": "ttl · step 3, sizeMin 900, sizeMax 2000, TTL 60 s",
    "anchor": "ttl"
  },
  "BR-19-05": {
    "title": "ttl · step 4, sizeMin 1800, sizeMax 2147483647, TTL 300 s",
    "anchor": "ttl"
  },
  "BR-19-06": {
    "title": "ttl · hysteresis (not in rows): the band moves up while the node count exceeds its sizeMax.",
    "anchor": "ttl"
  },
  "BR-19-07": {
    "title": "ttl · idempotent update (not in rows): a node whose annotation already reads as the band's TTL gets no patch and no pending row.",
    "anchor": "ttl"
  },
  "BR-21-01": {
    "title": "ownergc · delete: No owner is solid, and the BR-21-03 case does not apply; remove-owner-refs: At least one owner is solid and some references are dangling or waiting.",
    "anchor": "ownergc"
  },
  "BR-21-02": {
    "title": "ownergc · remove-owner-refs, remove-finalizer: An owner is being deleted with the orphan finalizer (checked before foregroundDeletion).",
    "anchor": "ownergc"
  },
  "BR-21-03": {
    "title": "ownergc · delete: No owner is solid, at least one is waiting, and the object has dependents of its own; unblock-owner-refs: The same case, when one of the object's dependents is itself being deleted in the foreground; remove-finalizer: An owner is being deleted with foregroundDeletion.",
    "anchor": "ownergc"
  },
  "BR-21-04": {
    "title": "ownergc · not in rows: UIDs decide identity.",
    "anchor": "ownergc"
  },
  "BR-21-05": {
    "title": "ownergc · not in rows: An owner missing from the mirror is only suspected absent.",
    "anchor": "ownergc"
  },
  "BR-21-06": {
    "title": "ownergc · not in rows: Owners confirmed absent are remembered in an LRU of 10,000.",
    "anchor": "ownergc"
  },
  "BR-21-07": {
    "title": "ownergc · keep: A cluster-scoped object names an owner of a namespaced kind.",
    "anchor": "ownergc"
  },
  "BR-24-01": {
    "title": "podgc · The terminated pods beyond the cluster-wide threshold, in deletion order.",
    "anchor": "podgc"
  },
  "BR-24-02": {
    "title": "podgc · Pods being deleted on a node whose Ready condition is not True and that has a taint with key node.kubernetes.io/out-of-service.",
    "anchor": "podgc"
  },
  "BR-24-03": {
    "title": "podgc · Pods bound to a node missing from the mirror.",
    "anchor": "podgc"
  },
  "BR-24-04": {
    "title": "podgc · not in rows: pods deleted under BR-24-03 also get the condition DisruptionTarget=True, reason DeletionByPodGC.",
    "anchor": "podgc"
  },
  "BR-24-05": {
    "title": "podgc · not in rows: before any delete, a pod not already Succeeded or Failed is patched to phase Failed through the status subresource.",
    "anchor": "podgc"
  },
  "BR-24-06": {
    "title": "podgc · not in rows: every delete has grace period 0 and the pod's UID as a precondition.",
    "anchor": "podgc"
  },
  "KG-04-01": {
    "title": "lcgc · delete: A LeaseCandidate, read live, is expired.",
    "anchor": "lcgc"
  },
  "KG-04-02": {
    "title": "lcgc · not in rows: A candidate the mirror shows expired but that reads live as renewed, or as being deleted, is kept.",
    "anchor": "lcgc"
  },
  "KG-06-01": {
    "title": "svgc · remove-entries: A StorageVersion has entries (status.storageVersions) of API servers with no identity Lease: not found, or found without the label.",
    "anchor": "svgc"
  },
  "KG-06-02": {
    "title": "svgc · delete: The same, when no entry would be left.",
    "anchor": "svgc"
  },
  "KG-24-01": {
    "title": "podgc · Pods being deleted that are bound to no node: no kubelet will ever finish them.",
    "anchor": "podgc"
  },
  "KG-24-02": {
    "title": "podgc · Terminated pods created longer ago than the maximum age, however many there are.",
    "anchor": "podgc"
  },
  "KG-24-03": {
    "title": "podgc · In each namespace given a threshold, its terminated pods beyond it, in deletion order.",
    "anchor": "podgc"
  },
  "KG-LINT-01": {
    "title": "Lint · dangling-owner, severity warning: No object with the reference's UID in the mirror, and none of its group, kind and name where the owner must be.",
    "anchor": "lint"
  },
  "KG-LINT-02": {
    "title": "Lint · uid-mismatch, severity error: The owner was re-created: an object of the reference's group, kind and name exists where the owner must be, with another UID.",
    "anchor": "lint"
  },
  "KG-LINT-03": {
    "title": "Lint · cross-namespace-owner, severity error: The object with the reference's UID is in another namespace than its namespaced dependent.",
    "anchor": "lint"
  },
  "KG-LINT-04": {
    "title": "Lint · cluster-scoped-dependent-namespaced-owner, severity error: A cluster-scoped object names an owner of a namespaced kind.",
    "anchor": "lint"
  },
  "KG-LINT-05": {
    "title": "Lint · owner-kind-not-served, severity error: No discovered resource serves the reference's group and kind: a CRD removed, or a version no longer served (kubernetes#102641).",
    "anchor": "lint"
  },
  "KG-LINT-06": {
    "title": "Lint · multiple-controllers, severity error: A second or later reference with controller: true on one object.",
    "anchor": "lint"
  },
  "KG-LINT-07": {
    "title": "Lint · block-owner-deletion-live-owner, severity info: blockOwnerDeletion: true on a reference that is not the controller reference, to an owner that is not being deleted.",
    "anchor": "lint"
  },
  "audit-store": {
    "title": "Every controller · No write is sent that kubegcd cannot record.",
    "anchor": "every-controller"
  },
  "blast-radius-cap": {
    "title": "Every controller · Writes beyond --max-deletions-per-minute in any sliding minute pause enforcement.",
    "anchor": "every-controller"
  }
};
