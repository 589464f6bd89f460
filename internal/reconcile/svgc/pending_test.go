package svgc

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	v1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// TestPendingEndsWithItsCause: in dry-run, a StorageVersion with the entry
// of a server that has no identity Lease is pending (its entries would be
// removed). The pending row goes once the Lease is back, and again once
// the StorageVersion itself is gone: what needs nothing done any more is
// not shown as waiting.
func TestPendingEndsWithItsCause(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	svs, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "internal.apiserver.k8s.io", Version: "v1alpha1",
		Resource: "storageversions", Kind: "StorageVersion"})
	if err != nil {
		t.Fatal(err)
	}
	leases, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases",
		Kind: "Lease", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	sv := &v1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: "apps.deployments", UID: types.UID("uid-sv"), ResourceVersion: "5"},
		Status: v1alpha1.StorageVersionStatus{StorageVersions: []v1alpha1.ServerStorageVersion{
			{APIServerID: "server-live", EncodingVersion: "apps/v1"}, {APIServerID: "server-gone", EncodingVersion: "apps/v1"}}}}
	mirrored := &db.Object{UID: string(sv.UID), APIVersion: "internal.apiserver.k8s.io/v1alpha1", Kind: "StorageVersion",
		Name: sv.Name, ResourceVersion: sv.ResourceVersion, StorageVersion: &db.StorageVersion{Entries: []db.StorageVersionEntry{
			{APIServerID: "server-live", EncodingVersion: "apps/v1"}, {APIServerID: "server-gone", EncodingVersion: "apps/v1"}}}}
	label := identityValue
	lease := func(server string) (*coordinationv1.Lease, *db.Object) {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: identityLeasesNS, Name: server, UID: types.UID("uid-" + server),
			ResourceVersion: "1", Labels: map[string]string{identityLabel: identityValue}}}
		return l, &db.Object{UID: string(l.UID), APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: l.Namespace,
			Name: l.Name, ResourceVersion: "1", Lease: &db.Lease{IdentityLabel: &label}}
	}
	liveLease, liveMirrored := lease("server-live")
	goneLease, goneMirrored := lease("server-gone")
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: svs, Object: mirrored}, {ResourceID: leases, Object: liveMirrored}}); err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(sv, liveLease)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), Instance: "test", Logger: log, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Registerer: prometheus.NewRegistry()}, DB: store.SVGC(), Client: client})
	if err != nil {
		t.Fatal(err)
	}
	decide := func() {
		t.Helper()
		if err := c.scanOnce(ctx); err != nil {
			t.Fatal(err)
		}
		for c.storageVersions.Len() > 0 {
			name, _ := c.storageVersions.Get()
			if err := c.processStorageVersion(ctx, name); err != nil {
				t.Fatal(err)
			}
			c.storageVersions.Done(name)
		}
	}
	pending := func(want bool, when string) {
		t.Helper()
		rows, _, err := store.Decisions().ListPending(ctx, db.PendingFilter{Controller: api.ControllerSVGC})
		if err != nil {
			t.Fatal(err)
		}
		inTable := len(rows) == 1 && rows[0].Target.UID == string(sv.UID)
		if got := applier.HasPending(api.ControllerSVGC, string(sv.UID)); got != inTable {
			t.Fatalf("%s: the applier holds it pending: %v, the table %+v", when, got, rows)
		}
		if inTable != want {
			t.Fatalf("%s: pending %v, want %v", when, inTable, want)
		}
	}

	decide()
	pending(true, "the entry of a server without a Lease")

	// The server's Lease is back, in the cluster and in the mirror.
	if _, err := client.CoordinationV1().Leases(identityLeasesNS).Create(ctx, goneLease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: leases, Object: goneMirrored}}); err != nil {
		t.Fatal(err)
	}
	decide()
	pending(false, "the server's Lease is back")

	// It goes again: pending again. Then the StorageVersion goes.
	if err := client.CoordinationV1().Leases(identityLeasesNS).Delete(ctx, goneLease.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: leases, Object: goneMirrored, Deleted: true}}); err != nil {
		t.Fatal(err)
	}
	decide()
	pending(true, "the server's Lease gone again")
	if err := client.InternalV1alpha1().StorageVersions().Delete(ctx, sv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: svs, Object: mirrored, Deleted: true}}); err != nil {
		t.Fatal(err)
	}
	decide()
	pending(false, "the StorageVersion is gone")
}
