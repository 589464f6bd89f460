package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// forbiddenSource is a resource kubegcd's role does not grant, as Secrets
// under kubegcd cluster add --no-secrets: every list answers 403.
type forbiddenSource struct{}

func (forbiddenSource) list(context.Context, metav1.ListOptions) ([]runtime.Object, string, string, error) {
	return nil, "", "", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC: not granted"))
}

func (forbiddenSource) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", errors.New("RBAC: not granted"))
}

// TestForbiddenResourceDoesNotHoldSync: a resource the API server forbids
// kubegcd to list stays out of sync, and out of the mirror, but does not
// hold the rest: the mirror is synced once every resource kubegcd may read
// is, so that the controllers start. A 503 (an aggregated API down) still
// holds it, as the API may come back.
func TestForbiddenResourceDoesNotHoldSync(t *testing.T) {
	for _, tt := range []struct {
		name       string
		src        source
		wantSynced bool
	}{
		{"forbidden", forbiddenSource{}, true},
		{"unavailable", refusedSource{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			store := dbtest.Open(t)
			res := configMapsIn(t, store)
			m := newMetrics(prometheus.NewRegistry())
			w := &watcher{res: res, apiVersion: "v1", label: "secrets", src: tt.src, db: store.Mirror(), metrics: m,
				log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
			live := &watcher{done: make(chan struct{})}
			live.synced.Store(true)
			i := &Ingester{discovered: true, watchers: map[schema.GroupVersionResource]*watcher{
				{Version: "v1", Resource: "secrets"}: w, {Version: "v1", Resource: "configmaps"}: live}}
			go w.run(ctx, "")
			waitFor(t, 10*time.Second, func() error {
				if testutil.ToFloat64(m.errors.WithLabelValues("secrets", "list")) < 1 {
					return errors.New("no failed list yet")
				}
				return nil
			})
			if w.synced.Load() || w.behind.Load() {
				t.Errorf("synced %v, behind %v; want neither", w.synced.Load(), w.behind.Load())
			}
			if got := i.Synced(); got != tt.wantSynced {
				t.Errorf("Synced() = %v, want %v", got, tt.wantSynced)
			}
			if i.ResourceSynced("", "secrets") {
				t.Error("ResourceSynced(secrets) = true for a resource never listed")
			}
			cancel()
			<-w.done
		})
	}
}
