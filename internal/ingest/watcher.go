package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1alpha2 "k8s.io/api/coordination/v1alpha2"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	typedcoordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcoordinationv1alpha2 "k8s.io/client-go/kubernetes/typed/coordination/v1alpha2"
	typedcoordinationv1beta1 "k8s.io/client-go/kubernetes/typed/coordination/v1beta1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"

	"github.com/kubegcd/kubegcd/internal/db"
)

// maxBatch bounds how many watch events go into one transaction.
const maxBatch = 1000

// listBatch is how many listed objects go into one transaction. A list
// changes a leaf of every index keyed by UID per object, and each commit
// writes each leaf it changed whole: at one page of 500 per commit, a list
// of 50,000 objects wrote 30 KB per object, at 5,000 per commit 5 KB.
// Such a commit holds the writer for up to a second, only while a list runs.
// A list into a resource with no object writes db.FirstFillBatch objects a
// commit: nothing else waits for the writer then but other first lists.
const listBatch = 5000

// flushInterval is the shortest time between two commits of a watch under
// a steady stream of events, such as 2,000 nodes that renew their Leases
// every 10 s. Each commit writes and syncs the write-ahead log. With one
// event a commit, the commits cost more than the events themselves. An
// event after a quiet moment is committed at once. An event in a stream
// waits at most this long.
const flushInterval = 100 * time.Millisecond

const (
	// resumeGrace is how long a watch may take to start before its
	// resource counts as out of sync.
	resumeGrace = 3 * time.Second
	// watchSettle is how long a resumed watch that delivers nothing must
	// stay open before its resource is back in sync.
	watchSettle = time.Second
)

// errWatchEnded says that a resumed watch closed before it delivered
// anything or settled. client-go returns such an empty watch once it has
// given up.
var errWatchEnded = errors.New("the watch ended before it delivered anything")

// These constants shape the catch-up at start from the resume point an
// earlier run stored (see watcher.catchUp). The API server's watch cache
// sends a bookmark two seconds before a watch times out. For a quiet
// resource, that bookmark is the only sign that its watch has passed a
// resourceVersion. So each watch lasts catchUpWatchSeconds. An API server
// without its watch cache sends no bookmarks. So the resource is listed
// instead when catchUpQuietWatches watches in a row ended without one, or
// when it has not caught up within catchUpTimeout.
const (
	catchUpWatchSeconds = 3
	catchUpQuietWatches = 2
	catchUpTimeout      = 30 * time.Second
)

// source lists and watches one resource across all namespaces.
type source interface {
	list(ctx context.Context, opts metav1.ListOptions) (items []runtime.Object, rv, cont string, err error)
	watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// objects returns pointers to a list's items as runtime.Objects.
func objects[T any, PT interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// client is a client of one resource: metadata's, dynamic's or a typed
// one. L is its list type.
type client[L lister] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// lister is what every list type says of its position.
type lister interface {
	GetResourceVersion() string
	GetContinue() string
}

// clientSource is the source of any client: items gives a list's items.
type clientSource[L lister] struct {
	c     client[L]
	items func(L) []runtime.Object
}

func newSource[L lister](c client[L], items func(L) []runtime.Object) source {
	return clientSource[L]{c: c, items: items}
}

func (s clientSource[L]) list(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, string, string, error) {
	l, err := s.c.List(ctx, opts)
	if err != nil {
		return nil, "", "", err
	}
	return s.items(l), l.GetResourceVersion(), l.GetContinue(), nil
}

func (s clientSource[L]) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return s.c.Watch(ctx, opts)
}

// The sources: object metadata (most resources), whole objects (those
// whose status is mirrored), and pods, nodes, Leases and LeaseCandidates as
// typed protobuf.
func metadataSource(c metadata.ResourceInterface) source {
	return newSource(c, func(l *metav1.PartialObjectMetadataList) []runtime.Object { return objects(l.Items) })
}

func dynamicSource(c dynamic.ResourceInterface) source {
	return newSource(c, func(l *unstructured.UnstructuredList) []runtime.Object { return objects(l.Items) })
}

func podSource(c typedcorev1.PodInterface) source {
	return newSource(c, func(l *corev1.PodList) []runtime.Object { return objects(l.Items) })
}

func nodeSource(c typedcorev1.NodeInterface) source {
	return newSource(c, func(l *corev1.NodeList) []runtime.Object { return objects(l.Items) })
}

func leaseSource(c typedcoordinationv1.LeaseInterface) source {
	return newSource(c, func(l *coordinationv1.LeaseList) []runtime.Object { return objects(l.Items) })
}

func leaseCandidateBetaSource(c typedcoordinationv1beta1.LeaseCandidateInterface) source {
	return newSource(c, func(l *coordinationv1beta1.LeaseCandidateList) []runtime.Object {
		return objects(l.Items)
	})
}

func leaseCandidateAlphaSource(c typedcoordinationv1alpha2.LeaseCandidateInterface) source {
	return newSource(c, func(l *coordinationv1alpha2.LeaseCandidateList) []runtime.Object {
		return objects(l.Items)
	})
}

// watcher mirrors one resource: a paginated list written page by page, then
// a watch from the list's resourceVersion, relisting when the watch expires.
// Only one page or one batch of events is held in memory at a time.
type watcher struct {
	res        db.Resource
	apiVersion string
	label      string // metrics label: group/resource
	src        source
	typed      func(runtime.Object, *db.Object)
	pageSize   int64
	// watchList says to list with a WatchList, else page by page. It
	// turns false once the API server refused one.
	watchList bool
	db        Mirror
	log       *slog.Logger
	notify    func([]db.Change)
	metrics   *metrics

	// stored is the resume point an earlier run recorded: the mirror
	// holds every change up to it. "" when only a list will do.
	stored string
	// catchUpTimeout overrides the constant of that name in tests.
	catchUpTimeout time.Duration
	// flushEvery overrides flushInterval in tests.
	flushEvery time.Duration
	// bookmarks counts the bookmarks received, for run to tell a watch
	// that got none.
	bookmarks int

	synced atomic.Bool
	// behind says that the resource is out of sync because the mirror
	// misses what the API server has: a watch was cut off, stalled or
	// expired, or the database refused a batch. It is false when the
	// server refuses to serve the resource, with an answer such as 404 or
	// 503 that lasts as long as an aggregated API is down. See
	// Ingester.CaughtUp.
	behind atomic.Bool
	// forbidden: out of sync because the API server forbids kubegcd to
	// read the resource (403: its role does not grant it, as Secrets under
	// cluster add --no-secrets). See Ingester.Synced.
	forbidden atomic.Bool
	done      chan struct{}
	cancel    context.CancelFunc
}

// markUnsynced takes the resource out of sync, behind or not. The row only
// mirrors the flag (nothing gates on it); when it cannot be written the
// database is failing, and the relist or resume that follows writes it
// again.
func (w *watcher) markUnsynced(ctx context.Context, behind bool) {
	w.behind.Store(behind)
	w.forbidden.Store(false)
	if !w.synced.Swap(false) {
		return
	}
	w.metrics.synced.WithLabelValues(w.label).Set(0)
	if err := w.db.SetSynced(context.WithoutCancel(ctx), w.res.ID, false); err != nil {
		w.log.Warn("recording sync state", "err", err)
	}
}

// markSynced puts the resource back in sync once its row says so: callers
// have committed synced = 1 first.
// markFailed takes the resource out of sync after a list or watch failed
// with err: behind unless the API server answered, forbidden when it
// answered 403.
func (w *watcher) markFailed(ctx context.Context, err error) {
	w.markUnsynced(ctx, !servedAnswer(err))
	w.forbidden.Store(apierrors.IsForbidden(err))
}

func (w *watcher) markSynced() {
	w.behind.Store(false)
	w.forbidden.Store(false)
	if !w.synced.Swap(true) {
		w.metrics.synced.WithLabelValues(w.label).Set(1)
	}
}

// writeError is a failed write to the mirror: the events read since the
// last commit are not in it.
type writeError struct{ err error }

func (e writeError) Error() string { return e.err.Error() }
func (e writeError) Unwrap() error { return e.err }

// run mirrors the resource until ctx ends. With startRV set it first tries
// to resume watching from there, as after a broken watch. Otherwise, with a
// stored resume point, it catches up from there (see catchUp).
func (w *watcher) run(ctx context.Context, startRV string) {
	defer close(w.done)
	defer w.metrics.synced.DeleteLabelValues(w.label)
	b := backoff{min: 200 * time.Millisecond, max: 30 * time.Second}
	rv := startRV
	// While catching up, target is the resourceVersion the mirror must
	// reach before the resource is in sync.
	var target string
	var giveUp time.Time
	quiet := 0 // catch-up watches in a row without a bookmark
	if rv == "" && w.stored != "" {
		rv, target = w.catchUp(ctx)
		giveUp = time.Now().Add(cmp.Or(w.catchUpTimeout, catchUpTimeout))
	}
	for ctx.Err() == nil {
		if rv == "" {
			target = ""
			var listed bool
			if rv, listed = w.tryList(ctx, &b); !listed {
				continue
			}
		}
		var err error
		bookmarks := w.bookmarks
		rv, err = w.watch(ctx, rv, target)
		if w.synced.Load() {
			target = ""
		}
		if err == nil && w.bookmarks == bookmarks {
			quiet++
		} else {
			quiet = 0
		}
		if ctx.Err() != nil {
			return
		}
		stalled := quiet >= catchUpQuietWatches || time.Now().After(giveUp)
		rv = w.nextStart(ctx, err, rv, target, stalled, &b)
	}
}

// tryList lists the resource and returns the resourceVersion to watch
// from. When the list fails, the resource goes out of sync, and tryList
// waits out the backoff and reports false.
func (w *watcher) tryList(ctx context.Context, b *backoff) (string, bool) {
	rv, err := w.list(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", false
		}
		w.markFailed(ctx, err)
		w.metrics.errors.WithLabelValues(w.label, "list").Inc()
		w.log.Warn("list failed", "err", err)
		b.wait(ctx)
		return "", false
	}
	b.reset()
	return rv, true
}

// nextStart says where the next watch starts after one that ended at rv
// with err: at rv, or at "" to list first. While catching up to target,
// stalled says that the watches brought no proof of progress.
func (w *watcher) nextStart(ctx context.Context, err error, rv, target string, stalled bool, b *backoff) string {
	switch {
	case target != "" && stalled:
		// No proof of having caught up: without the API server's watch
		// cache a watch sends no bookmarks.
		w.metrics.relists.WithLabelValues(w.label, "resume-stalled").Inc()
		w.log.Info("resumed watch did not catch up; listing", "target", target, "at", rv, "err", err)
		return ""
	case errors.As(err, new(writeError)):
		// A relist, not a resume. Synced then means what it means at start:
		// a complete list committed, then a live watch. While the database
		// still fails, the list's first write fails before anything is
		// asked of the API server.
		w.markUnsynced(ctx, true)
		w.metrics.errors.WithLabelValues(w.label, "write").Inc()
		w.metrics.relists.WithLabelValues(w.label, "write-failed").Inc()
		w.log.Warn("writing to the mirror failed; relisting", "err", err)
		b.wait(ctx)
		return ""
	case isExpired(err) && target != "":
		// The stored resume point was compacted away. The resource is
		// listed, as at a start without one, and stays out of sync.
		w.metrics.relists.WithLabelValues(w.label, "expired").Inc()
		w.log.Info("stored resourceVersion expired, listing", "err", err)
		return ""
	case isExpired(err):
		// The events since rv are lost. Until the relist is committed the
		// mirror may hold ghosts and miss changes, so no one may take it
		// for live, though a resumed watch marked it synced already.
		w.markUnsynced(ctx, true)
		w.metrics.relists.WithLabelValues(w.label, "expired").Inc()
		w.log.Info("watch expired, relisting", "err", err)
		return ""
	case err != nil:
		w.markFailed(ctx, err)
		w.metrics.errors.WithLabelValues(w.label, "watch").Inc()
		w.log.Warn("watch failed", "err", err)
		b.wait(ctx)
		return rv
	default:
		b.reset()
		return rv
	}
}

// servedAnswer reports whether err is the API server's answer (a status
// such as 404, 403 or 503) rather than a failure to reach it.
func servedAnswer(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st)
}

func isExpired(err error) bool {
	return err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err))
}

// list reads the resource page by page into the mirror and returns the
// resourceVersion to watch from.
func (w *watcher) list(ctx context.Context) (_ string, err error) {
	start := time.Now()
	defer func() {
		if err != nil {
			// The writer keeps a large cache while a list is under way. A
			// failed write cannot end one either, so this loses nothing.
			_ = w.db.EndList(context.WithoutCancel(ctx), w.res.ID)
		}
	}()
	for attempt := 0; ; attempt++ {
		epoch, err := w.db.BeginList(ctx, w.res.ID)
		if err != nil {
			return "", err
		}
		rv, count, err := w.listOnce(ctx, epoch)
		// A continue token outlives etcd's compaction only so long; start
		// the list over.
		if errors.Is(err, errContinueExpired) && attempt < 3 {
			continue
		}
		// The API server refused a WatchList: list page by page, at a new
		// epoch, so that the objects the stream wrote go unless listed.
		if errors.Is(err, errNoWatchList) {
			continue
		}
		if err != nil {
			return "", err
		}
		changes, err := w.db.FinishList(ctx, w.res.ID, epoch, rv)
		if err != nil {
			return "", err
		}
		w.metrics.events.WithLabelValues(w.label, "listed").Add(float64(count))
		method := "paginated"
		if w.watchList {
			method = "watchlist"
		}
		w.metrics.lists.WithLabelValues(w.label, method).Inc()
		// Synced before the notification, so that a controller it wakes
		// finds the resource live.
		w.markSynced()
		w.notify(changes)
		w.log.Debug("listed", "objects", count, "removed", len(changes)-1, "method", method,
			"duration", time.Since(start))
		return rv, nil
	}
}

// errContinueExpired says that a list's continue token expired.
var errContinueExpired = errors.New("continue token expired")

// listOnce reads every page of one list at epoch into the mirror. It
// returns the list's resourceVersion and how many objects it wrote. A
// batch is written while the next pages are fetched: at most one batch is
// being written and one gathered.
func (w *watcher) listOnce(ctx context.Context, epoch int64) (rv string, count int, err error) {
	pages := w.startPageWriter(ctx, epoch)
	defer func() {
		if werr := pages.close(); err == nil {
			err = werr
		}
	}()
	if w.watchList {
		rv, count, err = w.streamList(ctx, pages)
		if errors.Is(err, errNoWatchList) {
			w.watchList = false
			w.log.Info("listing page by page", "reason", err)
		}
		return rv, count, err
	}
	opts := metav1.ListOptions{Limit: w.pageSize}
	for {
		items, pageRV, cont, err := w.src.list(ctx, opts)
		if isExpired(err) && opts.Continue != "" {
			return "", count, fmt.Errorf("%w: %w", errContinueExpired, err)
		}
		if err != nil {
			return "", count, err
		}
		for _, it := range items {
			if o := w.convert(it); o != nil {
				pages.add(o)
			}
		}
		if pages.full() || cont == "" {
			n, err := pages.flush()
			count += n
			if err != nil {
				return "", count, err
			}
		}
		if cont == "" {
			return pageRV, count, nil
		}
		opts.Continue = cont
	}
}

// pageWriter writes the batches of one list on a goroutine of its own.
type pageWriter struct {
	// size is how many objects a batch holds: listBatch, or
	// db.FirstFillBatch when the resource had no object. A batch ends
	// sooner when its objects hold maxBatchBytes.
	size int
	// batch is being gathered; bytes is what its objects hold (db.Object.Size).
	batch   []*db.Object
	bytes   int
	batches chan []*db.Object
	// done gets the goroutine's result when it ends: the first failed
	// write, or nil once batches is closed.
	done  chan error
	err   error
	ended bool
}

func (w *watcher) startPageWriter(ctx context.Context, epoch int64) *pageWriter {
	p := &pageWriter{size: listBatch, batches: make(chan []*db.Object), done: make(chan error, 1)}
	if w.db.IsFirstFill(w.res.ID, epoch) {
		p.size = db.FirstFillBatch
	}
	go func() {
		for batch := range p.batches {
			if err := w.db.WriteListPage(ctx, w.res.ID, epoch, batch); err != nil {
				p.done <- err
				return
			}
		}
		p.done <- nil
	}()
	return p
}

// maxBatchBytes bounds the memory of one batch: Pods with references hold
// several times what a ConfigMap does.
const maxBatchBytes = 16 << 20

// add gathers o into the batch.
func (p *pageWriter) add(o *db.Object) {
	p.batch = append(p.batch, o)
	p.bytes += o.Size()
}

// full says whether the batch is to be written.
func (p *pageWriter) full() bool { return len(p.batch) >= p.size || p.bytes >= maxBatchBytes }

// flush hands the batch gathered to the goroutine, if there is one, and
// returns how many objects it held.
func (p *pageWriter) flush() (int, error) {
	n := len(p.batch)
	if n == 0 {
		return 0, nil
	}
	err := p.write(p.batch)
	p.batch, p.bytes = nil, 0
	return n, err
}

// write hands batch to the goroutine, once it has written the last one.
// It returns the error of a write that failed.
func (p *pageWriter) write(batch []*db.Object) error {
	if p.ended {
		return p.err
	}
	select {
	case p.batches <- batch:
		return nil
	case p.err = <-p.done:
		p.ended = true
		return p.err
	}
}

// close waits until every batch handed over is written, and returns the
// first error.
func (p *pageWriter) close() error {
	close(p.batches)
	if !p.ended {
		p.err, p.ended = <-p.done, true
	}
	return p.err
}

// watch applies events until the watch ends. It returns the
// resourceVersion up to which every event is committed to the mirror, the
// only point it may resume from, and nil when the server closed the watch
// normally. A failed write is a writeError. With target set (catching up
// at start), the resource is in sync once the committed resourceVersion
// reaches it, and not before.
func (w *watcher) watch(ctx context.Context, rv, target string) (string, error) {
	wi, err := w.open(ctx, rv, target)
	if err != nil {
		return rv, err
	}
	defer wi.Stop()
	// Resuming after a broken watch, the resource is back in sync once the
	// watch has delivered an event or stayed open for watchSettle. When its
	// retries run out, client-go returns an empty watch, already closed,
	// instead of an error.
	var settled <-chan time.Time
	if !w.synced.Load() && target == "" {
		t := time.NewTimer(watchSettle)
		defer t.Stop()
		settled = t.C
	}
	resumed := func() error {
		settled = nil
		// The row first, so a database that takes no writes keeps the
		// resource out of sync.
		if err := w.db.SetSynced(ctx, w.res.ID, true); err != nil {
			return writeError{err}
		}
		w.markSynced()
		return nil
	}
	ch := wi.ResultChan()
	batch := make([]db.Event, 0, 64)
	var lastFlush time.Time
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv, ctx.Err()
		case <-settled:
			if err := resumed(); err != nil {
				return rv, err
			}
			continue
		case ev, ok = <-ch:
		}
		if !ok {
			if settled != nil {
				return rv, errWatchEnded
			}
			return rv, nil
		}
		if settled != nil && ev.Type != watch.Error {
			if err := resumed(); err != nil {
				return rv, err
			}
		}
		var next string
		var closed bool
		var evErr error
		next, batch, closed, evErr = w.gather(ctx, ch, ev, rv, batch[:0], lastFlush)
		if err := w.flush(ctx, batch, rv, next); err != nil {
			return rv, writeError{err}
		}
		lastFlush = time.Now()
		rv = next
		if target != "" && reached(rv, target) {
			target = ""
			w.log.Debug("resumed watch caught up", "resourceVersion", rv)
			w.metrics.resumes.WithLabelValues(w.label).Inc()
			if err := resumed(); err != nil {
				return rv, err
			}
		}
		if evErr != nil {
			return rv, evErr
		}
		if closed {
			return rv, nil
		}
	}
}

// open starts a watch from rv: a short one while catching up to target,
// else one of five to ten minutes. A watch resumes within moments when the
// API server is there. But client-go retries a connection that breaks or
// times out ten times before it returns an error. Past resumeGrace, the
// resource is out of sync, since nothing reaches the mirror meanwhile.
func (w *watcher) open(ctx context.Context, rv, target string) (watch.Interface, error) {
	timeout := int64(300 + rand.IntN(300))
	if target != "" {
		timeout = catchUpWatchSeconds
	}
	late := make(chan struct{})
	timer := time.AfterFunc(resumeGrace, func() {
		defer close(late)
		w.markUnsynced(ctx, true)
	})
	wi, err := w.src.watch(ctx, metav1.ListOptions{
		ResourceVersion:     rv,
		AllowWatchBookmarks: true,
		TimeoutSeconds:      &timeout,
	})
	if !timer.Stop() {
		<-late // so that its row is written before the caller's
	}
	return wi, err
}

// gather collects ev, and the events already waiting, into batch, so that
// a burst of events costs one transaction instead of one each. Then it
// lingers until flushInterval has passed since the last commit. It returns
// the resourceVersion of the batch, a bookmark's included, which counts
// only once the batch is committed, and whether the watch closed.
func (w *watcher) gather(ctx context.Context, ch <-chan watch.Event, ev watch.Event, rv string, batch []db.Event,
	lastFlush time.Time) (string, []db.Event, bool, error) {
	next, closed := rv, false
	var err error
	for {
		if next, batch, err = w.collect(ev, next, batch); err != nil {
			break
		}
		if len(batch) >= maxBatch {
			break
		}
		more := false
		select {
		case ev, more = <-ch:
			closed = !more
		default:
		}
		if !more {
			break
		}
	}
	if closed || err != nil {
		return next, batch, closed, err
	}
	every := cmp.Or(w.flushEvery, flushInterval)
	return w.linger(ctx, ch, time.Until(lastFlush.Add(every)), next, batch)
}

// linger goes on collecting events into batch for the time wait, if it is
// positive. It stops early when the batch is full, the watch ends or an
// event is an error.
func (w *watcher) linger(ctx context.Context, ch <-chan watch.Event, wait time.Duration, next string,
	batch []db.Event) (string, []db.Event, bool, error) {
	if wait <= 0 || len(batch) >= maxBatch {
		return next, batch, false, nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	for len(batch) < maxBatch {
		select {
		case <-ctx.Done():
			return next, batch, false, nil
		case <-t.C:
			return next, batch, false, nil
		case ev, ok := <-ch:
			if !ok {
				return next, batch, true, nil
			}
			if next, batch, err = w.collect(ev, next, batch); err != nil {
				return next, batch, false, err
			}
		}
	}
	return next, batch, false, nil
}

// collect turns one watch event into a mirror event.
func (w *watcher) collect(ev watch.Event, rv string, batch []db.Event) (string, []db.Event, error) {
	switch ev.Type {
	case watch.Error:
		return rv, batch, apierrors.FromObject(ev.Object)
	case watch.Bookmark:
		w.bookmarks++
		if m, err := metaOf(ev.Object); err == nil {
			rv = m.GetResourceVersion()
		}
		return rv, batch, nil
	}
	o := w.convert(ev.Object)
	if o == nil {
		return rv, batch, nil
	}
	w.metrics.events.WithLabelValues(w.label, eventType(ev.Type)).Inc()
	e := db.Event{ResourceID: w.res.ID, Deleted: ev.Type == watch.Deleted, Object: o}
	return o.ResourceVersion, append(batch, e), nil
}

// flush commits a batch that moved the watch from rv to next. In the same
// transaction, next becomes the resource's resume point.
func (w *watcher) flush(ctx context.Context, batch []db.Event, rv, next string) error {
	if len(batch) == 0 {
		if next == rv {
			return nil
		}
		return w.db.SetResumeVersion(ctx, w.res.ID, next)
	}
	changes, err := w.db.ApplyWatchEvents(ctx, w.res.ID, next, batch)
	if err != nil {
		return err
	}
	w.notify(changes)
	return nil
}

func eventType(t watch.EventType) string {
	switch t {
	case watch.Added:
		return "added"
	case watch.Modified:
		return "modified"
	case watch.Deleted:
		return "deleted"
	}
	return "other"
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("unexpected object type %T", obj)
	}
	return m, nil
}

// convert extracts what the mirror keeps; an object it cannot read is
// logged and skipped rather than stopping the resource.
func (w *watcher) convert(obj runtime.Object) *db.Object {
	m, err := metaOf(obj)
	if err != nil || m.GetUID() == "" {
		w.log.Warn("skipping unreadable object", "err", err)
		w.metrics.errors.WithLabelValues(w.label, "decode").Inc()
		return nil
	}
	o := toObject(m, w.apiVersion, w.res.Kind)
	if w.typed != nil {
		w.typed(obj, o)
	}
	return o
}

// backoff is a capped exponential backoff with jitter: each wait is drawn
// from [d/2, d), d doubling from min up to max.
type backoff struct {
	min, max time.Duration
	steps    *wait.Backoff // nil until the first wait after a reset
}

func (b *backoff) reset() { b.steps = nil }

func (b *backoff) wait(ctx context.Context) {
	if b.steps == nil {
		// wait.Backoff adds up to Jitter × its duration: from d/2, a
		// jitter of 1 waits between d/2 and d.
		b.steps = &wait.Backoff{Duration: b.min / 2, Factor: 2, Jitter: 1, Steps: math.MaxInt32, Cap: b.max / 2}
	}
	t := time.NewTimer(b.steps.Step())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
