package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// With no full pass to fall back on (a resync period of an hour), only
// the deletions the watch examined move collection on: a background chain
// root ← mid ← leaf goes because mid, once gone, is seen to have a
// dependent; an owner deleted in the foreground goes because its last
// dependent, once gone, wakes it as an owner being deleted. It enforces,
// so it runs alone (see mustEnforceAlone).
func TestDeletionsWakeTheirDependentsAndOwners(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "examined-"+string(uuid.NewUUID())[:8])
	cms := kube.CoreV1().ConfigMaps(ns)
	create := func(name string, owner *corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if owner != nil {
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
		}
		created, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		return created
	}
	gone := func(name string) func() error {
		return func() error {
			_, err := cms.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s still there (%v)", name, err)
		}
	}
	root := create("root", nil)
	mid := create("mid", root)
	create("leaf", mid)
	owner := create("owner", nil)
	create("dependent", owner)

	d := daemons.Start(t, "", "--controllers=ownergc", "--dry-run=false", "--resync-period=1h", "--discovery-interval=2s")
	d.WaitReady(t, 60*time.Second)

	bg, fg := metav1.DeletePropagationBackground, metav1.DeletePropagationForeground
	if err := cms.Delete(ctx, "root", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mid", "leaf", "dependent", "owner"} {
		eventually(t, 30*time.Second, gone(name))
	}
}
