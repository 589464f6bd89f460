package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/reconcile/ownergc"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestOneOwnerGETForItsDependents: 300 dependents of one owner that the
// mirror lacks, decided by 64 workers at once. Each must be confirmed
// absent by a live GET before anything is deleted, but the workers share
// that GET (and then the absent cache): not one GET per worker.
func TestOneOwnerGETForItsDependents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t)

	// Mirrored only: their deletes find nothing, which is done all the same.
	const n = 300
	var deps []*db.Object
	for i := range n {
		deps = append(deps, &db.Object{UID: fmt.Sprintf("dep-%03d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "default",
			Name: fmt.Sprintf("dep-%03d", i), ResourceVersion: "1",
			OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid"}}})
	}
	f.list(t, "1", deps...)
	getsBefore := e2eutil.APIRequests(t, f.kube, "GET", "configmaps").Sum()
	f.runOwnerGC(t, ownergc.Options{Workers: 64, ResyncPeriod: time.Hour})

	e2eutil.Eventually(t, 30*time.Second, func() error {
		rows, _, err := f.store.Decisions().ListAudit(ctx, db.AuditFilter{Controller: api.ControllerOwnerGC, Limit: 1000})
		if err != nil {
			return err
		}
		if len(rows) < n {
			return fmt.Errorf("%d of %d dependents decided", len(rows), n)
		}
		return nil
	})
	// One; two only if the API server failed the first (it is retried).
	if gets := e2eutil.APIRequests(t, f.kube, "GET", "configmaps").Sum() - getsBefore; gets < 1 || gets > 2 {
		t.Errorf("%v GETs of configmaps reached the API server for %d dependents of one absent owner, want 1 (at most 2)", gets, n)
	}
}
