package podgc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// unlistable is a store whose pods of one node cannot be listed.
type unlistable struct {
	db.PodGC
	node string
}

func (s unlistable) PodsOnNode(ctx context.Context, node string) ([]*db.Object, error) {
	if node == s.node {
		return nil, errors.New("disk I/O error")
	}
	return s.PodGC.PodsOnNode(ctx, node)
}

// TestUnlistedPodsKeepTheirPendingRows: a pod bound to a node missing from
// the mirror is quarantined (pending). Once the quarantine is over, the
// node's live check fails, and so does the listing of its pods that would
// keep them: the pass ends with an error, and the pod's pending row stays,
// for it was not seen, not found stale.
func TestUnlistedPodsKeepTheirPendingRows(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "pods", Kind: "Pod", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)
	pod := &db.Object{UID: "uid-p", APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p", ResourceVersion: "3",
		CreationTimestamp: &created, Pod: &db.Pod{Phase: "Running", NodeName: "gone"}}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Object: pod}}); err != nil {
		t.Fatal(err)
	}

	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), Instance: "test", Logger: log, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is unreachable")
	})
	passes := reconcile.NewPasses(prometheus.NewRegistry())
	c, err := New(Options{
		ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Passes: passes, Registerer: prometheus.NewRegistry(), Now: clock}, DB: store.PodGC(), Client: client,
		ResourceSynced: func(string, string) bool { return true }, Quarantine: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}

	// held reports whether podgc holds the pod pending, in memory and in
	// the table, which must agree.
	held := func() bool {
		t.Helper()
		rows, _, err := store.Decisions().ListPending(ctx, db.PendingFilter{Controller: api.ControllerPodGC})
		if err != nil {
			t.Fatal(err)
		}
		inTable := len(rows) == 1 && rows[0].Target.UID == pod.UID
		if inTable != applier.HasPending(api.ControllerPodGC, pod.UID) {
			t.Fatalf("pending rows %+v, but the applier holds the pod pending: %v", rows, !inTable)
		}
		return inTable
	}

	// The first pass quarantines the pod.
	if err := c.Pass(ctx); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	if !held() {
		t.Fatal("the quarantined pod has no pending row")
	}

	c.opts.DB = unlistable{PodGC: store.PodGC(), node: "gone"}
	now = now.Add(2 * time.Minute)
	err = c.Pass(ctx)
	if err == nil || !strings.Contains(err.Error(), "listing the pods of node gone") {
		t.Errorf("second pass: %v, want the failed listing", err)
	}
	if !held() {
		t.Error("the pending row of a pod the pass could not list was cleared")
	}

	// A pass that lists every pod again forgets what it no longer holds:
	// the pod went from the cluster meanwhile.
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Object: pod, Deleted: true}}); err != nil {
		t.Fatal(err)
	}
	c.opts.DB = store.PodGC()
	if err := c.Pass(ctx); err != nil {
		t.Fatalf("third pass: %v", err)
	}
	if held() {
		t.Error("a complete pass kept the pending row of a pod gone from the mirror")
	}
}
