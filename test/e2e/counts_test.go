package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// TestCountMetrics makes ConfigMaps owned by a ConfigMap, by a Widget (a
// custom resource) and by both, and a Widget owned by a ConfigMap, and
// checks that kubegcd_objects and kubegcd_owned_objects grow by exactly
// those numbers. Not parallel: the metrics count the whole mirror, which
// nothing else may change between the two readings. Dry-run (the default),
// so nothing is collected.
func TestCountMetrics(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "counts-"+string(uuid.NewUUID())[:8])
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)

	series := map[string]float64{
		`kubegcd_objects{group="",kind="ConfigMap"}`:                                                                   7,
		`kubegcd_objects{group="e2e.kubegcd.io",kind="Widget"}`:                                                        2,
		`kubegcd_owned_objects{group="",kind="ConfigMap",owner_group="",owner_kind="ConfigMap"}`:                       4,
		`kubegcd_owned_objects{group="",kind="ConfigMap",owner_group="e2e.kubegcd.io",owner_kind="Widget"}`:            2,
		`kubegcd_owned_objects{group="e2e.kubegcd.io",kind="Widget",owner_group="",owner_kind="ConfigMap"}`:            1,
		`kubegcd_owned_objects{group="e2e.kubegcd.io",kind="Widget",owner_group="e2e.kubegcd.io",owner_kind="Widget"}`: 0,
	}
	before := map[string]float64{}
	for s := range series {
		before[s] = scrape(t, d, s)
	}
	// The first reading is the whole mirror, not what was synced so far.
	all, err := kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := before[`kubegcd_objects{group="",kind="ConfigMap"}`]; got != float64(len(all.Items)) {
		t.Fatalf("kubegcd_objects counts %v ConfigMaps, the cluster has %d", got, len(all.Items))
	}

	configMap := func(name string, refs ...metav1.OwnerReference) metav1.OwnerReference {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ConfigMap %s: %v", name, err)
		}
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: cm.UID}
	}
	widget := func(name string, refs ...metav1.OwnerReference) metav1.OwnerReference {
		t.Helper()
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e2e.kubegcd.io/v1", "kind": "Widget"}}
		w.SetName(name)
		w.SetOwnerReferences(refs)
		w, err := dyn.Resource(widgetGVR).Namespace(ns).Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating Widget %s: %v", name, err)
		}
		return metav1.OwnerReference{APIVersion: "e2e.kubegcd.io/v1", Kind: "Widget", Name: name, UID: w.GetUID()}
	}
	owner, owner2 := configMap("owner"), configMap("owner2")
	w := widget("w")
	configMap("by-configmap", owner)
	configMap("by-configmap-too", owner)
	// Two ConfigMap owners: one dependent of that pair.
	configMap("by-two-configmaps", owner, owner2)
	// Owners of two kinds: one dependent in each pair.
	configMap("by-both", owner, w)
	configMap("by-widget", w)
	widget("w-by-configmap", owner)

	// The counts are cached for 30 s.
	eventually(t, 60*time.Second, func() error {
		for s, delta := range series {
			if got := scrape(t, d, s); got != before[s]+delta {
				return fmt.Errorf("%s = %v, want %v + %v", s, got, before[s], delta)
			}
		}
		return nil
	})
}
