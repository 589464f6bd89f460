// Package copies keeps the copies of deleted objects and restores objects
// from them: the undo of a deletion. Take makes a copy of a live object
// and Prepare makes a copy ready to be created again. A Keeper takes and
// stores the copy just before the applier sends a delete; a Restorer
// re-creates the object and records the restore.
package copies

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Take returns obj as JSON, the body of its copy. A core/v1 Secret's data
// and stringData are removed, keys and values alike, unless keepSecretData;
// secretDataDropped says so. obj is not changed.
func Take(obj *unstructured.Unstructured, keepSecretData bool) (body []byte, secretDataDropped bool, err error) {
	content := obj.Object
	if isSecret(obj) && !keepSecretData {
		_, hasData := content["data"]
		_, hasString := content["stringData"]
		// A shallow copy: only the top level changes.
		content = make(map[string]any, len(obj.Object))
		for k, v := range obj.Object {
			if k != "data" && k != "stringData" {
				content[k] = v
			}
		}
		secretDataDropped = hasData || hasString
	}
	body, err = json.Marshal(content)
	if err != nil {
		return nil, false, fmt.Errorf("copy of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return body, secretDataDropped, nil
}

// isSecret: obj is a core/v1 Secret, whose data a copy leaves out.
func isSecret(obj *unstructured.Unstructured) bool {
	return obj.GetAPIVersion() == "v1" && obj.GetKind() == "Secret"
}

// The finalizers the API server's deletion adds, which a restored object
// must not start with.
var deletionFinalizers = map[string]bool{metav1.FinalizerOrphanDependents: true, metav1.FinalizerDeleteDependents: true}

// Prepare reads a copy's body into the object to create: without its uid,
// resourceVersion, creationTimestamp, deletionTimestamp,
// deletionGracePeriodSeconds, generation, managedFields, selfLink and
// status. An object copied while it was being deleted also loses the
// orphan and foregroundDeletion finalizers, which that deletion set.
// ownerExists is asked about each ownerReference: those whose owner no
// longer exists are dropped and returned. Its error ends the preparation.
func Prepare(body []byte, ownerExists func(metav1.OwnerReference) (bool, error)) (*unstructured.Unstructured,
	[]metav1.OwnerReference, error) {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(body); err != nil {
		return nil, nil, fmt.Errorf("the copy is not an object: %w", err)
	}
	if obj.GetName() == "" {
		return nil, nil, fmt.Errorf("the copy of a %s has no name", obj.GetKind())
	}
	if obj.GetDeletionTimestamp() != nil {
		var kept []string
		for _, f := range obj.GetFinalizers() {
			if !deletionFinalizers[f] {
				kept = append(kept, f)
			}
		}
		obj.SetFinalizers(kept)
	}
	for _, field := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", field)
	}
	unstructured.RemoveNestedField(obj.Object, "status")
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return obj, nil, nil
	}
	var kept, dropped []metav1.OwnerReference
	for _, ref := range refs {
		exists, err := ownerExists(ref)
		if err != nil {
			return nil, nil, fmt.Errorf("looking up the owner %s %s (uid %s): %w", ref.Kind, ref.Name, ref.UID, err)
		}
		if exists {
			kept = append(kept, ref)
		} else {
			dropped = append(dropped, ref)
		}
	}
	obj.SetOwnerReferences(kept) // none removes the field
	return obj, dropped, nil
}
