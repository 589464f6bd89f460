package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// pagedSource lists its attempts in turn, in pages of the limit asked,
// the continue token being the index of the next item. An attempt with
// expireAt set ends in 410 Gone when a page is asked from that index.
type pagedSource struct {
	attempts []listAttempt
	lists    int
}

type listAttempt struct {
	items    []runtime.Object
	expireAt int
}

func (s *pagedSource) list(_ context.Context, opts metav1.ListOptions) ([]runtime.Object, string, string, error) {
	from := 0
	if opts.Continue == "" {
		s.lists++
	} else {
		from, _ = strconv.Atoi(opts.Continue)
	}
	a := s.attempts[min(s.lists, len(s.attempts))-1]
	if a.expireAt > 0 && from >= a.expireAt {
		return nil, "", "", apierrors.NewResourceExpired("the continue token expired")
	}
	to := min(from+int(opts.Limit), len(a.items))
	cont := ""
	if to < len(a.items) {
		cont = strconv.Itoa(to)
	}
	return a.items[from:to], "100", cont, nil
}

func (s *pagedSource) watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// countingMirror records the size of each list write.
type countingMirror struct {
	Mirror
	writes []int
}

func (m *countingMirror) WriteListPage(ctx context.Context, resourceID, epoch int64, objs []*db.Object) error {
	m.writes = append(m.writes, len(objs))
	return m.Mirror.WriteListPage(ctx, resourceID, epoch, objs)
}

func configMapMeta(i int) runtime.Object {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%05d", i),
		UID: types.UID(fmt.Sprintf("uid-%05d", i)), ResourceVersion: strconv.Itoa(i + 1)}}
}

// TestListWritesInBatches: a relist goes into the mirror listBatch
// objects per write, not a page per write, and what an attempt cut short by an
// expired continue token had gathered is not written by the next one. The
// first attempt expires after listBatch+1,000 objects, 1,000 of them
// gathered and unwritten; the second lists a cluster where those 1,000 and
// the first 100 are gone. The mirror must hold exactly what the second
// attempt listed.
func TestListWritesInBatches(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	res := configMapsIn(t, store)
	const total = 2*listBatch + 2000
	gone := func(i int) bool { return i < 100 || i >= listBatch && i < listBatch+1000 }
	var all, kept []runtime.Object
	for i := range total {
		all = append(all, configMapMeta(i))
		if !gone(i) {
			kept = append(kept, configMapMeta(i))
		}
	}
	src := &pagedSource{attempts: []listAttempt{{items: all, expireAt: listBatch + 1000}, {items: kept}}}
	// An object mirrored before: the list is a relist, not a first fill.
	seedMirror(t, store, res, configMapMeta(3*listBatch))
	mirror := &countingMirror{Mirror: store.Mirror()}
	w := &watcher{res: res, apiVersion: "v1", label: "configmaps", src: src, db: mirror, pageSize: 500,
		metrics: newMetrics(prometheus.NewRegistry()), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		notify: func([]db.Change) {}, done: make(chan struct{})}
	if _, err := w.list(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []int{listBatch, listBatch, listBatch, len(kept) - 2*listBatch}; !slices.Equal(mirror.writes, want) {
		t.Errorf("list writes of %v objects, want %v", mirror.writes, want)
	}
	for i := range total {
		_, err := store.Objects().GetObject(ctx, fmt.Sprintf("uid-%05d", i))
		switch {
		case gone(i) && err == nil:
			t.Fatalf("cm-%05d is in the mirror, but the last list did not return it", i)
		case gone(i) && !errors.Is(err, db.ErrNotFound):
			t.Fatal(err)
		case !gone(i) && err != nil:
			t.Fatalf("cm-%05d: %v", i, err)
		}
	}
}

// seedMirror lists objs into the resource, as an earlier list did.
func seedMirror(t *testing.T, store *db.DB, res db.Resource, objs ...runtime.Object) {
	t.Helper()
	ctx := context.Background()
	m := store.Mirror()
	epoch, err := m.BeginList(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{res: res, apiVersion: "v1"}
	var batch []*db.Object
	for _, o := range objs {
		batch = append(batch, w.convert(o))
	}
	if err := m.WriteListPage(ctx, res.ID, epoch, batch); err != nil {
		t.Fatal(err)
	}
	if _, err := m.FinishList(ctx, res.ID, epoch, "1"); err != nil {
		t.Fatal(err)
	}
}
