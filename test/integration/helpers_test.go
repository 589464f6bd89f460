package integration

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/reconcile/ownergc"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// fixture is a control plane of one test, its clients, and a mirror that
// knows the ConfigMaps resource. No garbage collector runs in the cluster.
type fixture struct {
	kube       kubernetes.Interface
	meta       metadata.Interface
	store      *db.DB
	configMaps int64 // the resource ID of configmaps in the mirror
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{})
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	f := &fixture{kube: kubernetes.NewForConfigOrDie(c.Config), meta: metadata.NewForConfigOrDie(c.Config), store: dbtest.Open(t)}
	if f.configMaps, err = f.store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}); err != nil {
		t.Fatal(err)
	}
	return f
}

// list writes objs to the mirror as ingest writes a list of ConfigMaps
// at resourceVersion rv.
func (f *fixture) list(t *testing.T, rv string, objs ...*db.Object) {
	t.Helper()
	ctx := context.Background()
	epoch, err := f.store.Mirror().BeginList(ctx, f.configMaps)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Mirror().WriteListPage(ctx, f.configMaps, epoch, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Mirror().FinishList(ctx, f.configMaps, epoch, rv); err != nil {
		t.Fatal(err)
	}
}

// runOwnerGC runs ownergc, enforcing, on the mirror until the test ends,
// and returns it. opts gives what differs from a synced mirror, a
// discarded log and an applier of its own.
func (f *fixture) runOwnerGC(t *testing.T, opts ownergc.Options) *ownergc.Controller {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: f.store.Ledger(), Instance: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	opts.Applier, opts.Logger, opts.Synced = applier, log, func() bool { return true }
	opts.DB, opts.Client = f.store.OwnerGC(), f.meta
	if opts.UnknownKindRetry == 0 {
		opts.UnknownKindRetry = time.Minute
	}
	gc, err := ownergc.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return gc
}
