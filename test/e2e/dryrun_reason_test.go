package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/api"
)

// TestDryRunForegroundReasonSaysWhatEnforceWouldDo: an owner deleted in the
// foreground with two blocking dependents and one that does not block. In
// dry-run ownergc decides to delete the dependents and then to remove the
// owner's foregroundDeletion finalizer, but the cluster still holds them
// all: the owner's row must say what enforce would do, marked as not done,
// not that no blocking dependent remains.
func TestDryRunForegroundReasonSaysWhatEnforceWouldDo(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "dry-reason")
	cms := kube.CoreV1().ConfigMaps(ns)
	const hold = "example.com/hold"
	owner, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held-owner", Finalizers: []string{hold}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropFinalizers(t, configMapsGVR, ns, owner.Name) })
	for i, block := range []bool{true, true, false} {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("held-dep-%d", i+1),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
				BlockOwnerDeletion: ptr.To(block)}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", "--controllers=ownergc", "--dry-run=true")

	var row api.AuditEntry
	eventually(t, 60*time.Second, func() error {
		var out struct{ Items []api.AuditEntry }
		d.GetJSON(t, "/audit?controller=ownergc&uid="+string(owner.UID), http.StatusOK, &out)
		for _, r := range out.Items {
			if r.Action == "remove-finalizer" {
				row = r
				return nil
			}
		}
		return fmt.Errorf("no remove-finalizer row about the owner yet: %+v", out.Items)
	})
	const want = "once its 2 dependents with blockOwnerDeletion are deleted (dry-run: they are not), " +
		"the foregroundDeletion finalizer would be removed"
	if !row.DryRun || row.Reason != want {
		t.Errorf("owner's row: dry-run %v, reason %q; want a dry-run row with reason %q", row.DryRun, row.Reason, want)
	}
	// The cluster indeed still holds them.
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "held-") {
			names = append(names, cm.Name)
		}
	}
	if len(names) != 4 {
		t.Errorf("configmaps %v: dry-run must leave the owner and its three dependents", names)
	}
}
