package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

type statusResource struct {
	Group, Version, Resource string
	Synced                   bool
	Objects                  int64
}

func statusResourceOf(t *testing.T, d *daemon, group, resource string) *statusResource {
	t.Helper()
	var st struct{ Resources []statusResource }
	d.GetJSON(t, "/status", 200, &st)
	for _, r := range st.Resources {
		if r.Group == group && r.Resource == resource {
			return &r
		}
	}
	return nil
}

// TestCRDAddedAndRemovedWhileRunning uses the default discovery interval:
// a CRD must be watched within 35 s of its creation.
func TestCRDAddedAndRemovedWhileRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "crd-lifecycle")
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)

	const group = "late.kubegcd.io"
	if err := createCRD(ctx, group, "gadgets", "Gadget", "Namespaced"); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	var uids []string
	for _, name := range []string{"g1", "g2"} {
		g, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Gadget", "metadata": map[string]any{"name": name},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, string(g.GetUID()))
	}

	eventually(t, 35*time.Second-time.Since(created), func() error {
		r := statusResourceOf(t, d, group, "gadgets")
		if r == nil || !r.Synced || r.Objects != 2 {
			return fmt.Errorf("gadgets in /status: %+v", r)
		}
		return nil
	})
	t.Logf("CRD watched %v after its creation", time.Since(created).Round(time.Millisecond))
	for _, uid := range uids {
		if _, err := d.DB(t).Objects().GetObject(ctx, uid); err != nil {
			t.Fatalf("gadget %s not mirrored: %v", uid, err)
		}
	}

	if err := dyn.Resource(crdGVR).Delete(ctx, "gadgets."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 40*time.Second, func() error {
		for _, uid := range uids {
			if err := absentFromMirror(d.DB(t), types.UID(uid)); err != nil {
				return err
			}
		}
		if r := statusResourceOf(t, d, group, "gadgets"); r != nil {
			return fmt.Errorf("gadgets still listed in /status: %+v", r)
		}
		return nil
	})
	d.WaitReady(t, 5*time.Second)
}
