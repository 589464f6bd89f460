package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
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
	cluster := startCluster(t)
	kube := kubernetes.NewForConfigOrDie(cluster.Config)
	meta := metadata.NewForConfigOrDie(cluster.Config)

	store := dbtest.Open(t)
	rid, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		t.Fatal(err)
	}
	// Mirrored only: their deletes find nothing, which is done all the same.
	const n = 300
	var deps []*db.Object
	for i := range n {
		deps = append(deps, &db.Object{UID: fmt.Sprintf("dep-%03d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: "default",
			Name: fmt.Sprintf("dep-%03d", i), ResourceVersion: "1",
			OwnerReferences: []db.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner-uid"}}})
	}
	epoch, err := store.Mirror().BeginList(ctx, rid)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Mirror().WriteListPage(ctx, rid, epoch, deps); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
		t.Fatal(err)
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: store.Ledger(), Instance: "test", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := ownergc.New(ownergc.Options{
		ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Synced: func() bool { return true }}, DB: store.OwnerGC(), Client: meta,
		Workers: 64, ResyncPeriod: time.Hour, UnknownKindRetry: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	getsBefore := apiGets(t, kube)
	done := make(chan error, 1)
	go func() { done <- gc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	e2eutil.Eventually(t, 30*time.Second, func() error {
		rows, _, err := store.Decisions().ListAudit(ctx, db.AuditFilter{Controller: ownergc.Name, Limit: 1000})
		if err != nil {
			return err
		}
		if len(rows) < n {
			return fmt.Errorf("%d of %d dependents decided", len(rows), n)
		}
		return nil
	})
	// One; two only if the API server failed the first (it is retried).
	if gets := apiGets(t, kube) - getsBefore; gets < 1 || gets > 2 {
		t.Errorf("%v GETs of configmaps reached the API server for %d dependents of one absent owner, want 1 (at most 2)", gets, n)
	}
}

// apiGets reads, from the API server's own metrics, how many GETs of one
// configmap it has answered.
func apiGets(t *testing.T, kube kubernetes.Interface) float64 {
	t.Helper()
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") ||
			!strings.Contains(line, `verb="GET"`) || !strings.Contains(line, `resource="configmaps"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("apiserver metrics line %q: %v", line, err)
		}
		total += v
	}
	return total
}
