package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// streamSource serves a WatchList of its events, and lists page by page
// what pagedSource lists. It records the options of each watch.
type streamSource struct {
	pagedSource
	// refuse is the error of a watch; events are sent, then the watch
	// closes unless the last is the initial-events-end bookmark.
	refuse  error
	events  []watch.Event
	watches []metav1.ListOptions
}

func (s *streamSource) watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.watches = append(s.watches, opts)
	if s.refuse != nil {
		return nil, s.refuse
	}
	ch := make(chan watch.Event, len(s.events))
	for _, ev := range s.events {
		ch <- ev
	}
	if n := len(s.events); n == 0 || !isInitialEventsEnd(s.events[n-1]) {
		close(ch)
	}
	return watch.NewProxyWatcher(ch), nil
}

func isInitialEventsEnd(ev watch.Event) bool {
	m, err := metaOf(ev.Object)
	return err == nil && ev.Type == watch.Bookmark && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

func added(objs ...runtime.Object) []watch.Event {
	var evs []watch.Event
	for _, o := range objs {
		evs = append(evs, watch.Event{Type: watch.Added, Object: o})
	}
	return evs
}

func initialEventsEnd(rv string) watch.Event {
	return watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}}
}

// listWith lists src into a new mirror with a WatchList asked for, and
// returns the list's resourceVersion, the sizes of the mirror's writes,
// the UIDs the mirror holds and whether the watcher still lists with a
// WatchList.
func listWith(t *testing.T, src source) (string, []int, []string, bool) {
	t.Helper()
	ctx := context.Background()
	store := dbtest.Open(t)
	res := configMapsIn(t, store)
	mirror := &countingMirror{Mirror: store.Mirror()}
	w := &watcher{res: res, apiVersion: "v1", label: "configmaps", src: src, db: mirror, pageSize: 500,
		watchList: true, metrics: newMetrics(prometheus.NewRegistry()),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
	rv, err := w.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var uids []string
	for i := range db.FirstFillBatch + 2*listBatch {
		uid := fmt.Sprintf("uid-%05d", i)
		if _, err := store.Objects().GetObject(ctx, uid); err == nil {
			uids = append(uids, uid)
		} else if !errors.Is(err, db.ErrNotFound) {
			t.Fatal(err)
		}
	}
	return rv, mirror.writes, uids, w.watchList
}

func uidsOf(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("uid-%05d", i))
	}
	return out
}

// TestWatchListFillsTheMirror: a WatchList's initial events go into the
// empty mirror in batches of db.FirstFillBatch, and the list's
// resourceVersion is its initial-events-end bookmark's. Bookmarks before
// it, without the annotation, change nothing.
func TestWatchListFillsTheMirror(t *testing.T) {
	const total = db.FirstFillBatch + 1200
	var objs []runtime.Object
	for i := range total {
		objs = append(objs, configMapMeta(i))
	}
	evs := added(objs[:10]...)
	evs = append(evs, watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}}})
	evs = append(append(evs, added(objs[10:]...)...), initialEventsEnd("4242"))
	src := &streamSource{events: evs}
	rv, writes, uids, still := listWith(t, src)
	if rv != "4242" || !still {
		t.Errorf("list at %q, WatchList still asked: %v; want 4242, true", rv, still)
	}
	if want := []int{db.FirstFillBatch, total - db.FirstFillBatch}; !slices.Equal(writes, want) {
		t.Errorf("writes of %v objects, want %v", writes, want)
	}
	if !slices.Equal(uids, uidsOf(0, total)) {
		t.Errorf("the mirror holds %d objects, want %d", len(uids), total)
	}
	if src.lists != 0 {
		t.Errorf("%d paginated lists, want none", src.lists)
	}
	o := src.watches[0]
	if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan ||
		!o.AllowWatchBookmarks || o.ResourceVersion != "" {
		t.Errorf("the WatchList asked %+v", o)
	}
}

// TestWatchListFallsBack: an API server that refuses a WatchList, or
// whose watch does not keep to WatchList's events, is listed page by
// page, and never asked for a WatchList again. What the stream had
// written and the paginated list does not return is not in the mirror.
func TestWatchListFallsBack(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "",
		field.ErrorList{field.Forbidden(field.NewPath("resourceVersionMatch"), "resourceVersionMatch is forbidden for watch")})
	var streamed []runtime.Object
	for i := range listBatch + 10 {
		streamed = append(streamed, configMapMeta(i))
	}
	var listed []runtime.Object
	for i := listBatch + 5; i < listBatch+40; i++ {
		listed = append(listed, configMapMeta(i))
	}
	for _, tc := range []struct {
		name   string
		refuse error
		events []watch.Event
	}{
		{"refused", invalid, nil},
		{"bad request in the stream", nil, append(added(streamed[:3]...), watch.Event{Type: watch.Error,
			Object: &apierrors.NewBadRequest("sendInitialEvents is not supported").ErrStatus})},
		{"closed before the bookmark", nil, added(streamed...)},
		{"a modification before the bookmark", nil, append(added(streamed...),
			watch.Event{Type: watch.Modified, Object: streamed[0]})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &streamSource{refuse: tc.refuse, events: tc.events,
				pagedSource: pagedSource{attempts: []listAttempt{{items: listed}}}}
			rv, _, uids, still := listWith(t, src)
			if rv != "100" || still || src.lists != 1 || len(src.watches) != 1 {
				t.Errorf("list at %q, WatchList still asked %v, %d paginated lists, %d watches; want 100, false, 1, 1",
					rv, still, src.lists, len(src.watches))
			}
			if want := uidsOf(listBatch+5, listBatch+40); !slices.Equal(uids, want) {
				t.Errorf("the mirror holds %d objects (first %v), want the %d listed", len(uids), uids[:min(3, len(uids))], len(want))
			}
		})
	}
}

// TestWatchListError: an error other than a refusal ends the list, as a
// failed paginated list does, and the next list asks for a WatchList
// again.
func TestWatchListError(t *testing.T) {
	src := &streamSource{refuse: apierrors.NewServiceUnavailable("etcd is down")}
	ctx := context.Background()
	store := dbtest.Open(t)
	w := &watcher{res: configMapsIn(t, store), apiVersion: "v1", label: "configmaps", src: src, db: store.Mirror(),
		pageSize: 500, watchList: true, metrics: newMetrics(prometheus.NewRegistry()),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
	if _, err := w.list(ctx); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("list: %v, want the watch's 503", err)
	}
	if !w.watchList || src.lists != 0 {
		t.Errorf("after a 503, WatchList asked %v and %d paginated lists; want true and 0", w.watchList, src.lists)
	}
}

// TestListBatchBytes: a batch of large objects ends at maxBatchBytes,
// before db.FirstFillBatch objects.
func TestListBatchBytes(t *testing.T) {
	var objs []runtime.Object
	for i := range 2000 {
		cm := configMapMeta(i).(*metav1.PartialObjectMetadata)
		cm.Finalizers = []string{strings.Repeat("x", 16<<10)} // 16 KB each: about 1,000 a batch
		objs = append(objs, cm)
	}
	src := &streamSource{events: append(added(objs...), initialEventsEnd("7"))}
	_, writes, uids, _ := listWith(t, src)
	if len(writes) < 2 || writes[0] >= 2000 || writes[0]*(16<<10) > maxBatchBytes+(32<<10) {
		t.Errorf("writes of %v objects of 16 KB, want batches of at most %d KB", writes, maxBatchBytes>>10)
	}
	if len(uids) != 2000 {
		t.Errorf("the mirror holds %d objects, want 2000", len(uids))
	}
}
