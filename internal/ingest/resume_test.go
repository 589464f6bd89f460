package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

func TestPlanResume(t *testing.T) {
	for _, tt := range []struct {
		name, stored, current string
		want                  resumePlan
	}{
		{"nothing stored", "", "100", planList},
		{"behind the cluster", "90", "100", planCatchUp},
		{"at the cluster", "100", "100", planCaughtUp},
		{"ahead of the cluster: history went back", "110", "100", planList},
		{"opaque stored version", "a7f3", "100", planList},
		{"opaque current version", "90", "a7f3", planList},
		{"zero", "0", "100", planList},
		{"no current version", "90", "", planList},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := planResume(tt.stored, tt.current); got != tt.want {
				t.Errorf("planResume(%q, %q) = %v, want %v", tt.stored, tt.current, got, tt.want)
			}
		})
	}
}

func TestReached(t *testing.T) {
	for _, tt := range []struct {
		rv, target string
		want       bool
	}{
		{"99", "100", false},
		{"100", "100", true},
		{"101", "100", true},
		// Compared as numbers, not as text.
		{"99", "100", false},
		{"1000", "999", true},
		{"", "100", false},
		{"x", "100", false},
	} {
		if got := reached(tt.rv, tt.target); got != tt.want {
			t.Errorf("reached(%q, %q) = %v, want %v", tt.rv, tt.target, got, tt.want)
		}
	}
}

// resumeSource is a resource whose collection is at resourceVersion
// "100". Its watches are handed to the test on watches; lists of more
// than one item are counted and return listed.
type resumeSource struct {
	watches chan *watch.FakeWatcher
	mu      sync.Mutex
	from    []string // resourceVersion of each watch
	lists   int
	listed  []runtime.Object
}

func (s *resumeSource) list(_ context.Context, opts metav1.ListOptions) ([]runtime.Object, string, string, error) {
	if opts.Limit == 1 {
		return nil, "100", "", nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	return s.listed, "100", "", nil
}

func (s *resumeSource) watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	s.from = append(s.from, opts.ResourceVersion)
	s.mu.Unlock()
	w := watch.NewFake()
	s.watches <- w
	return w, nil
}

func (s *resumeSource) listCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

func object(uid, rv string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "ns", ResourceVersion: rv}}
}

// resumeFixture is a database whose configmaps were mirrored up to
// resourceVersion "50" by an earlier run: objects a and b, as a list
// would leave them.
func resumeFixture(t *testing.T, src source) (*watcher, *db.DB) {
	t.Helper()
	ctx := context.Background()
	store := dbtest.Open(t)
	res := configMapsIn(t, store)
	epoch, err := store.Mirror().BeginList(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	objs := []*db.Object{
		{UID: "a", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a", ResourceVersion: "10"},
		{UID: "b", APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "b", ResourceVersion: "20"},
	}
	if err := store.Mirror().WriteListPage(ctx, res.ID, epoch, objs); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().FinishList(ctx, res.ID, epoch, "50"); err != nil {
		t.Fatal(err)
	}
	if err := store.Mirror().MarkAllUnsynced(ctx); err != nil {
		t.Fatal(err)
	}
	stored, err := store.Mirror().ResumeVersion(ctx, res.ID)
	if err != nil || stored != "50" {
		t.Fatalf("ResumeVersion = %q, %v; want 50", stored, err)
	}
	m := newMetrics(prometheus.NewRegistry())
	w := &watcher{res: res, apiVersion: "v1", label: "configmaps", src: src, db: store.Mirror(), metrics: m, stored: stored,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), notify: func([]db.Change) {}, done: make(chan struct{})}
	return w, store
}

func mirrored(t *testing.T, store *db.DB, id int64) []db.ObjectKey {
	t.Helper()
	got, err := store.Objects().ObjectsOf(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func nextWatch(t *testing.T, src *resumeSource) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-src.watches:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no watch started")
		return nil
	}
}

// TestResumeCatchesUp: a start with a stored resume point watches from it
// without listing, and the resource is in sync only once the watch has
// passed the collection's resourceVersion read at start ("100"): not after
// the missed events, which may be only the first of many, but after a
// bookmark at or past it. The deletion made while kubegcd was down leaves
// the mirror, and the new resume point is stored with what it covers.
func TestResumeCatchesUp(t *testing.T) {
	src := &resumeSource{watches: make(chan *watch.FakeWatcher, 4)}
	w, store := resumeFixture(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-w.done }()
	go w.run(ctx, "")

	fw := nextWatch(t, src)
	fw.Delete(object("a", "60"))
	fw.Add(object("c", "70"))
	want := []db.ObjectKey{{UID: "b", ResourceVersion: "20"}, {UID: "c", ResourceVersion: "70"}}
	waitFor(t, 10*time.Second, func() error {
		if diff := cmp.Diff(want, mirrored(t, store, w.res.ID)); diff != "" {
			return fmt.Errorf("mirror (-want +got):\n%s", diff)
		}
		return nil
	})
	if w.synced.Load() {
		t.Fatal("synced before the watch reached the collection's resourceVersion at start")
	}
	fw.Action(watch.Bookmark, object("", "100"))
	waitFor(t, 10*time.Second, func() error {
		if !w.synced.Load() {
			return errors.New("not synced after a bookmark at the collection's resourceVersion")
		}
		return nil
	})
	if rv, err := store.Mirror().ResumeVersion(ctx, w.res.ID); err != nil || rv != "100" {
		t.Errorf("stored resume point %q, %v; want 100", rv, err)
	}
	if n := src.listCount(); n != 0 {
		t.Errorf("%d lists, want none", n)
	}
	if got := testutil.ToFloat64(w.metrics.resumes.WithLabelValues("configmaps")); got != 1 {
		t.Errorf("resumes_total = %v, want 1", got)
	}
	src.mu.Lock()
	from := slices.Clone(src.from)
	src.mu.Unlock()
	if len(from) == 0 || from[0] != "50" {
		t.Errorf("watches from %v, want the first from the stored 50", from)
	}
}

// TestResumeExpiredLists: a stored resume point the API server no longer
// has (410) gives way to a list, counted as expired, which removes the
// objects deleted meanwhile.
func TestResumeExpiredLists(t *testing.T) {
	src := &resumeSource{watches: make(chan *watch.FakeWatcher, 4), listed: []runtime.Object{object("b", "20")}}
	w, store := resumeFixture(t, src)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-w.done }()
	go w.run(ctx, "")

	fw := nextWatch(t, src)
	fw.Error(&apierrors.NewResourceExpired("too old resource version: 50 (90)").ErrStatus)
	waitFor(t, 10*time.Second, func() error {
		if !w.synced.Load() {
			return errors.New("not synced after the list")
		}
		return nil
	})
	if diff := cmp.Diff([]db.ObjectKey{{UID: "b", ResourceVersion: "20"}}, mirrored(t, store, w.res.ID)); diff != "" {
		t.Errorf("mirror after the list (-want +got):\n%s", diff)
	}
	if n := src.listCount(); n != 1 {
		t.Errorf("%d lists, want 1", n)
	}
	if got := testutil.ToFloat64(w.metrics.relists.WithLabelValues("configmaps", "expired")); got != 1 {
		t.Errorf("relists_total{reason=expired} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(w.metrics.resumes.WithLabelValues("configmaps")); got != 0 {
		t.Errorf("resumes_total = %v, want 0", got)
	}
}

// TestResumeWithoutProgressLists: watches that end without ever reaching
// the collection's resourceVersion never put the resource in sync. Two in
// a row without a bookmark, as from an API server without its watch cache,
// give way to a list at once; bookmarks short of the target, after the
// catch-up timeout.
func TestResumeWithoutProgressLists(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		deliver func(*watch.FakeWatcher)
	}{
		{"no bookmarks", 0, func(fw *watch.FakeWatcher) { fw.Add(object("b", "20")) }},
		{"bookmarks short of the target", 500 * time.Millisecond, func(fw *watch.FakeWatcher) { fw.Action(watch.Bookmark, object("", "90")) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &resumeSource{watches: make(chan *watch.FakeWatcher, 64), listed: []runtime.Object{object("b", "20")}}
			w, store := resumeFixture(t, src)
			w.catchUpTimeout = tt.timeout
			ctx, cancel := context.WithCancel(context.Background())
			defer func() { cancel(); <-w.done }()
			go w.run(ctx, "")

			// Each watch delivers and times out, until the list.
			deadline := time.Now().Add(10 * time.Second)
			for src.listCount() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no list")
				}
				select {
				case fw := <-src.watches:
					// synced first: the list counts itself before it syncs.
					if w.synced.Load() && src.listCount() == 0 {
						t.Fatal("synced by a watch that never reached the collection's resourceVersion")
					}
					tt.deliver(fw)
					fw.Stop()
				case <-time.After(50 * time.Millisecond):
				}
			}
			waitFor(t, 10*time.Second, func() error {
				if !w.synced.Load() {
					return errors.New("not synced after the list")
				}
				return nil
			})
			if diff := cmp.Diff([]db.ObjectKey{{UID: "b", ResourceVersion: "20"}}, mirrored(t, store, w.res.ID)); diff != "" {
				t.Errorf("mirror after the list (-want +got):\n%s", diff)
			}
			if got := testutil.ToFloat64(w.metrics.relists.WithLabelValues("configmaps", "resume-stalled")); got != 1 {
				t.Errorf("relists_total{reason=resume-stalled} = %v, want 1", got)
			}
		})
	}
}

// TestResumeAtCurrentVersion: a stored point equal to the collection's
// resourceVersion needs no catching up.
func TestResumeAtCurrentVersion(t *testing.T) {
	src := &resumeSource{watches: make(chan *watch.FakeWatcher, 4)}
	w, _ := resumeFixture(t, src)
	w.stored = "100"
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-w.done }()
	go w.run(ctx, "")
	nextWatch(t, src)
	if !w.synced.Load() {
		t.Error("not synced with the mirror at the collection's resourceVersion")
	}
	if n := src.listCount(); n != 0 {
		t.Errorf("%d lists, want none", n)
	}
}

func TestSameCluster(t *testing.T) {
	for _, tt := range []struct {
		mirrored, live string
		want           bool
	}{
		{"u1", "u1", true},
		{"u1", "u2", false},
		{"", "u1", false}, // no kube-system in the mirror: never synced, or not this cluster's
		{"u1", "", false}, // the cluster could not be asked
		{"", "", false},
	} {
		if got := sameCluster(tt.mirrored, tt.live); got != tt.want {
			t.Errorf("sameCluster(%q, %q) = %v, want %v", tt.mirrored, tt.live, got, tt.want)
		}
	}
}

// TestForeignMirrorLists: a database whose kube-system namespace is not
// the cluster's mirrors another cluster; its resume points are forgotten,
// so every resource is listed and the other cluster's objects leave.
func TestForeignMirrorLists(t *testing.T) {
	cluster := controlPlane(t)
	ctx := context.Background()
	kubeSystem, err := kubernetes.NewForConfigOrDie(cluster.Config).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name        string
		mirroredUID string
		want        string
	}{
		{"this cluster", string(kubeSystem.UID), "50"},
		{"another cluster", "00000000-0000-0000-0000-00000000beef", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := dbtest.Open(t)
			id, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"})
			if err != nil {
				t.Fatal(err)
			}
			epoch, err := store.Mirror().BeginList(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			ns := &db.Object{UID: tt.mirroredUID, APIVersion: "v1", Kind: "Namespace", Name: "kube-system", ResourceVersion: "7"}
			if err := store.Mirror().WriteListPage(ctx, id, epoch, []*db.Object{ns}); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Mirror().FinishList(ctx, id, epoch, "50"); err != nil {
				t.Fatal(err)
			}
			ing, err := New(Options{Config: cluster.Config, DB: store.Mirror(), Registerer: prometheus.NewRegistry(),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := ing.forgetForeignResumePoints(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := store.Mirror().ResumeVersion(ctx, id); err != nil || got != tt.want {
				t.Errorf("resume point %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
