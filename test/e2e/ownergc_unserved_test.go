package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestOwnerGCUnservedOwnerPath: kubegcd maps an owner's kind to a CRD
// version that has stopped being served since its last discovery. The live
// GET of the owner then gets a 404 for the path, not for the object: that
// must not be read as an absent owner. Here the owner exists (under the
// version now served), so deleting its dependent would be plainly wrong;
// kubegcd must keep it, audit nothing about it, and retry after discovery.
func TestOwnerGCUnservedOwnerPath(t *testing.T) {
	ctx := context.Background()
	const group, plural, kind = "pathgone.kubegcd.io", "sprockets", "Sprocket"
	if err := createCRD(ctx, group, plural, kind, "Namespaced"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(crdGVR).Delete(context.Background(), plural+"."+group, metav1.DeleteOptions{})
	})
	v1 := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	v2 := schema.GroupVersionResource{Group: group, Version: "v2", Resource: plural}
	kinds[v1], kinds[v2] = kind, kind

	// kubegcd discovers sprockets at v1, and no more discovery happens
	// during the test.
	s := newScenarioIn(t, "gc-unserved-path", modeEnforce, "--discovery-interval=10m")

	// v1 stops being served; v2 takes over. kubegcd's watch of v1 fails,
	// so what is created now never reaches its mirror.
	serveOnlyV2(t, plural+"."+group)
	eventually(t, 30*time.Second, func() error {
		_, err := dyn.Resource(v1).Namespace(s.ns).List(s.ctx, metav1.ListOptions{Limit: 1})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("listing %s: %v, want 404", v1, err)
		}
		_, err = dyn.Resource(v2).Namespace(s.ns).List(s.ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	owner := s.create(v2, "", "s1", nil)
	dep := s.cm("dep", owner.ref(true))

	// kubegcd looks the owner up at the path it knows, /apis/<group>/v1/…,
	// and gets a 404 that names no object.
	eventually(t, gcTimeout, func() error {
		if s.get(dep) == nil {
			return stopError{Err: fmt.Errorf("the dependent of an existing %s was deleted after a 404 for its unserved path %s", kind, v1)}
		}
		if n := s.verifications("unserved"); n < 1 {
			return fmt.Errorf("no owner lookup answered by an unserved path yet (%v)", n)
		}
		return nil
	})
	s.stable(3*time.Second, func() error {
		if s.get(dep) == nil {
			return fmt.Errorf("the dependent of an existing %s was deleted", kind)
		}
		return nil
	})
	// No row, so none says the owner is absent. (The metric of absent
	// owners would not do: this kubegcd collects the whole cluster.)
	if rows := s.auditFor(dep); len(rows) != 0 {
		t.Fatalf("decisions about the dependent of an owner whose path is not served: %+v", rows)
	}
}

// serveOnlyV2 turns the CRD's v1 off and serves (and stores) v2 instead.
func serveOnlyV2(t *testing.T, name string) {
	t.Helper()
	crd, err := dyn.Resource(crdGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions := crd.Object["spec"].(map[string]any)["versions"].([]any)
	v1 := versions[0].(map[string]any)
	v1["served"], v1["storage"] = false, false
	v2 := map[string]any{"name": "v2", "served": true, "storage": true, "schema": v1["schema"]}
	crd.Object["spec"].(map[string]any)["versions"] = append(versions, v2)
	if _, err := dyn.Resource(crdGVR).Update(context.Background(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// verifications reads kubegcd's count of owner lookups with result.
func (s *scenario) verifications(result string) float64 {
	s.t.Helper()
	return s.d.Metric(s.t, "kubegcd_ownergc_owner_verifications_total", "result="+result)
}
