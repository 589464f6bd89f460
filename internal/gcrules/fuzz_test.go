package gcrules

import (
	"testing"
)

// FuzzClassify: any reference and any owner classify to one of the known
// states, the same one every time, and the states follow the rules whatever
// the strings: an unserved kind is UnknownKind, a cluster-scoped dependent
// of a namespaced kind InvalidNamespace, a missing owner Dangling only when
// the lookup is authoritative, and a Solid owner always matches the
// reference.
func FuzzClassify(f *testing.F) {
	f.Add("ns", "v1", "ConfigMap", "owner", "uid-1", true, true, true, "uid-1", "v1", "ConfigMap", "ns", "owner", false, "", true)
	f.Add("", "apps/v1", "Deployment", "web", "u", true, true, false, "", "", "", "", "", false, "", false)
	f.Add("ns", "apps/v1", "ReplicaSet", "rs", "u", true, true, true, "u", "apps/v2", "ReplicaSet", "ns", "rs", true, "foregroundDeletion", true)
	f.Add("ns", "example.com/v1", "Widget", "w", "u", false, true, true, "u", "example.com/v1", "Widget", "other", "w", false, "x", false)
	f.Fuzz(func(t *testing.T, depNS, apiVersion, kind, name, uid string, served, namespaced, hasOwner bool,
		oUID, oAPIVersion, oKind, oNS, oName string, deleting bool, finalizer string, authoritative bool) {
		ref := Ref{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid}
		k := Kind{Served: served, Namespaced: namespaced}
		var owner *Owner
		if hasOwner {
			owner = &Owner{UID: oUID, APIVersion: oAPIVersion, Kind: oKind, Namespace: oNS, Name: oName, Deleting: deleting}
			if finalizer != "" {
				owner.Finalizers = []string{finalizer}
			}
		}
		lookup := Mirror
		if authoritative {
			lookup = Authoritative
		}
		got := Classify(depNS, ref, k, owner, lookup)
		if again := Classify(depNS, ref, k, owner, lookup); again != got {
			t.Fatalf("Classify is not deterministic: %s then %s", got, again)
		}
		switch got {
		case Solid, Waiting:
			if owner == nil || Mismatch(ref, OwnerNamespace(depNS, k), owner) != "" {
				t.Fatalf("%s for an owner that is missing or does not match: %+v %+v", got, ref, owner)
			}
			if got == Waiting && !deleting {
				t.Fatalf("waiting on an owner not being deleted: %+v", owner)
			}
		case Dangling, Unverified:
			if (got == Dangling) != authoritative {
				t.Fatalf("%s with an authoritative lookup %v", got, authoritative)
			}
		case UnknownKind:
			if served {
				t.Fatal("UnknownKind for a served kind")
			}
		case InvalidNamespace:
			if depNS != "" || !namespaced {
				t.Fatalf("InvalidNamespace for dependent namespace %q, namespaced %v", depNS, namespaced)
			}
		default:
			t.Fatalf("unknown state %q", got)
		}
		if !served && got != UnknownKind {
			t.Fatalf("%s for an unserved kind", got)
		}
	})
}
