package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/reconcile/ownergc"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestNoDecisionWhileBehind: once running, the collector must still
// decide nothing while part of the mirror is behind the cluster (after an
// outage, some watches resumed and others not yet): garbage that reaches
// it meanwhile waits, and is collected once the mirror has caught up.
func TestNoDecisionWhileBehind(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t)
	kube, meta, store, rid := f.kube, f.meta, f.store, f.configMaps
	var caughtUp atomic.Bool
	caughtUp.Store(true)
	gc := f.runOwnerGC(t, ownergc.Options{CaughtUp: caughtUp.Load, Workers: 2, ResyncPeriod: time.Second})
	// orphan creates an orphan and hands it to the collector through
	// ingest's write path; exists reports whether it is still there.
	orphan := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "never-was", UID: uuid.NewUUID()}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen, err := meta.Resource(configMapsGVR).Namespace("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changes, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rid, Object: ingest.ObjectFromMeta(seen, "v1", "ConfigMap")}})
		if err != nil {
			t.Fatal(err)
		}
		gc.OnChange(changes)
		return cm
	}
	exists := func(name string) bool {
		t.Helper()
		_, err := kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	// Running: an orphan is collected.
	orphan("first")
	e2eutil.Eventually(t, 10*time.Second, func() error {
		if exists("first") {
			return fmt.Errorf("the first orphan is still there")
		}
		return nil
	})

	// Behind, as after an outage with some watches resumed and others not
	// yet: the next orphan waits.
	caughtUp.Store(false)
	second := orphan("second")
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		rows, _, err := store.Decisions().ListAudit(ctx, db.AuditFilter{UID: string(second.UID), Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if !exists("second") || len(rows) > 0 {
			t.Fatalf("decided while the mirror was behind: the orphan exists %v, %d audit rows", exists("second"), len(rows))
		}
	}

	caughtUp.Store(true)
	e2eutil.Eventually(t, 10*time.Second, func() error {
		if exists("second") {
			return fmt.Errorf("the second orphan is still there once the mirror has caught up")
		}
		return nil
	})
}
