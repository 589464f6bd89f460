package svgc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	v1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

const (
	leasesResourceID          = 3
	storageVersionsResourceID = 4
)

// fakeStore answers what svgc reads of the mirror from the lists it is
// given.
type fakeStore struct {
	mu              sync.Mutex
	serversNoLease  []string
	svsNoLease      []api.Target
	storageVersions map[string][]string // by server
	errors          map[string]error    // by method
}

func (s *fakeStore) fail(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors[method]
}

func (s *fakeStore) setErrors(errs map[string]error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = errs
}

func (s *fakeStore) ResourceID(ctx context.Context, group, version, resource string) (int64, error) {
	if err := s.fail("ResourceID"); err != nil {
		return 0, err
	}
	switch group + "/" + version + "/" + resource {
	case "coordination.k8s.io/v1/leases":
		return leasesResourceID, nil
	case "internal.apiserver.k8s.io/v1alpha1/storageversions":
		return storageVersionsResourceID, nil
	}
	return 0, fmt.Errorf("no resource %s/%s %s", group, version, resource)
}

func (s *fakeStore) ServersWithoutLease(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.serversNoLease), s.errors["ServersWithoutLease"]
}

func (s *fakeStore) StorageVersionsWithoutLease(ctx context.Context) ([]api.Target, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.svsNoLease), s.errors["StorageVersionsWithoutLease"]
}

func (s *fakeStore) StorageVersionsOf(ctx context.Context, serverID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.storageVersions[serverID]), s.errors["StorageVersionsOf"]
}

// harness is a controller on a fake store and a fake clientset, with an
// applier on a database of its own and a fixed clock.
type harness struct {
	t      *testing.T
	store  *fakeStore
	ledger *db.DB
	client *fake.Clientset
	reg    *prometheus.Registry
	c      *Controller
	// unsynced makes Synced answer false.
	unsynced atomic.Bool
}

func newHarness(t *testing.T, dryRun bool, objects ...runtime.Object) *harness {
	t.Helper()
	ledger := dbtest.Open(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: ledger.Ledger(), Instance: "test", Logger: log, DryRun: dryRun,
		Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: &fakeStore{}, ledger: ledger, client: fake.NewClientset(objects...), reg: prometheus.NewRegistry()}
	h.c, err = New(Options{
		ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Synced: func() bool { return !h.unsynced.Load() },
			Registerer: h.reg, Now: func() time.Time { return t1 }},
		DB: h.store, Client: h.client, ResyncPeriod: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// writes returns the writes sent to StorageVersions, as "verb name".
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource != "storageversions" || a.GetVerb() == "get" {
			continue
		}
		switch a := a.(type) {
		case k8stesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		case k8stesting.UpdateAction:
			out = append(out, a.GetVerb()+"/"+a.GetSubresource()+" "+a.GetObject().(*v1alpha1.StorageVersion).Name)
		}
	}
	return out
}

func (h *harness) get(name string) (*v1alpha1.StorageVersion, error) {
	return h.client.InternalV1alpha1().StorageVersions().Get(context.Background(), name, metav1.GetOptions{})
}

// TestProcessStorageVersion runs the StorageVersion path against a fake
// API server, enforcing: entries go through the status subresource, an
// empty StorageVersion is deleted with preconditions, and nothing is
// written when every server has its Lease.
func TestProcessStorageVersion(t *testing.T) {
	ctx := context.Background()
	t.Run("remove-entries", func(t *testing.T) {
		sv := storageVersion("a=apps/v1", "b=apps/v2")
		h := newHarness(t, false, sv, lease("a", t1, identity))
		if err := h.c.processStorageVersion(ctx, sv.Name); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"update/status apps.deployments"}, h.writes()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		got, err := h.get(sv.Name)
		if err != nil {
			t.Fatal(err)
		}
		want := withStatus(storageVersion("a=apps/v1"), "apps/v1", v1alpha1.ConditionTrue, t1).Status
		if diff := cmp.Diff(want, got.Status); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
		if n := testutil.Metric(h.t, h.reg, "kubegcd_svgc_writes_total", "action", "remove-entries"); n != 1 {
			t.Errorf("writes_total{action=remove-entries} %v, want 1", n)
		}
	})
	t.Run("delete", func(t *testing.T) {
		sv := storageVersion("a=apps/v1", "b=apps/v1")
		h := newHarness(t, false, sv, lease("b", t1, nil))
		if err := h.c.processStorageVersion(ctx, sv.Name); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"delete apps.deployments"}, h.writes()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		for _, a := range h.client.Actions() {
			if d, ok := a.(k8stesting.DeleteAction); ok {
				p := d.GetDeleteOptions().Preconditions
				if p == nil || p.UID == nil || *p.UID != "uid-sv" || p.ResourceVersion == nil || *p.ResourceVersion != "5" {
					t.Errorf("delete preconditions %+v, want the UID and resourceVersion", p)
				}
			}
		}
		if _, err := h.get(sv.Name); !apierrors.IsNotFound(err) {
			t.Errorf("the StorageVersion is still there: %v", err)
		}
		if n := testutil.Metric(h.t, h.reg, "kubegcd_svgc_writes_total", "action", "delete"); n != 1 {
			t.Errorf("writes_total{action=delete} %v, want 1", n)
		}
	})
	t.Run("every Lease there", func(t *testing.T) {
		sv := storageVersion("a=apps/v1", "b=apps/v1")
		h := newHarness(t, false, sv, lease("a", t1, identity), lease("b", t0, identity))
		if err := h.c.processStorageVersion(ctx, sv.Name); err != nil {
			t.Fatal(err)
		}
		if got := h.writes(); len(got) != 0 {
			t.Errorf("writes %v", got)
		}
	})
	t.Run("the StorageVersion is gone", func(t *testing.T) {
		h := newHarness(t, false)
		if err := h.c.processStorageVersion(ctx, "gone"); err != nil {
			t.Errorf("processStorageVersion: %v, want nil", err)
		}
	})
	t.Run("the StorageVersion lookup fails", func(t *testing.T) {
		h := newHarness(t, false, storageVersion("a=apps/v1"))
		h.client.PrependReactor("get", "storageversions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("down")
		})
		if err := h.c.processStorageVersion(ctx, "apps.deployments"); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("processStorageVersion: %v, want the lookup's error", err)
		}
	})
	t.Run("a Lease lookup fails: retried, nothing written", func(t *testing.T) {
		sv := storageVersion("a=apps/v1", "b=apps/v1")
		h := newHarness(t, false, sv)
		h.client.PrependReactor("get", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.(k8stesting.GetAction).GetName() == "b" {
				return true, nil, apierrors.NewTimeoutError("slow", 1)
			}
			return false, nil, nil
		})
		err := h.c.processStorageVersion(ctx, sv.Name)
		if !apierrors.IsTimeout(err) {
			t.Errorf("processStorageVersion: %v, want the lookup's timeout", err)
		}
		if got := h.writes(); len(got) != 0 {
			t.Errorf("writes %v after a failed lookup", got)
		}
	})
	t.Run("a refused write is returned and not counted", func(t *testing.T) {
		sv := storageVersion("a=apps/v1", "b=apps/v1")
		h := newHarness(t, false, sv, lease("a", t1, identity))
		h.client.PrependReactor("update", "storageversions", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}, sv.Name, errors.New("stale"))
		})
		if err := h.c.processStorageVersion(ctx, sv.Name); !apierrors.IsConflict(err) {
			t.Errorf("processStorageVersion: %v, want a conflict", err)
		}
		if n := testutil.Metric(h.t, h.reg, "kubegcd_svgc_writes_total", "action", "remove-entries"); n != 0 {
			t.Errorf("writes_total{action=remove-entries} %v after a conflict", n)
		}
	})
	t.Run("dry-run writes nothing and holds the decision pending", func(t *testing.T) {
		sv := storageVersion("a=apps/v1")
		h := newHarness(t, true, sv)
		if err := h.c.processStorageVersion(ctx, sv.Name); err != nil {
			t.Fatal(err)
		}
		if got := h.writes(); len(got) != 0 {
			t.Errorf("dry-run wrote %v", got)
		}
		rows, _, err := h.ledger.Decisions().ListPending(ctx, db.PendingFilter{Controller: api.ControllerSVGC})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Rule != "KG-06-02" || rows[0].Action != "delete" || rows[0].Target.UID != "uid-sv" {
			t.Errorf("pending %+v, want one KG-06-02 delete", rows)
		}
		if n := testutil.Metric(h.t, h.reg, "kubegcd_svgc_writes_total", "action", "delete"); n != 0 {
			t.Errorf("writes_total{action=delete} %v in dry-run", n)
		}
	})
}

// TestProcessLease runs the lease path: a Lease gone queues every
// StorageVersion naming its server; one re-created queues nothing; a
// failed lookup is retried.
func TestProcessLease(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		objects   []runtime.Object
		reactor   k8stesting.ReactionFunc
		storeErr  error
		wantQueue []string
		wantErr   bool
	}{
		{name: "gone: its StorageVersions are queued", wantQueue: []string{"apps.deployments", "v1.pods"}},
		{name: "re-created meanwhile: nothing queued", objects: []runtime.Object{lease("a", t1, identity)}},
		{name: "the lookup fails: retried", wantErr: true,
			reactor: func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewTimeoutError("slow", 1)
			}},
		{name: "the mirror fails: retried", storeErr: errors.New("disk"), wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, false, c.objects...)
			h.store.storageVersions = map[string][]string{"a": {"apps.deployments", "v1.pods"}, "b": {"other"}}
			h.store.setErrors(map[string]error{"StorageVersionsOf": c.storeErr})
			if c.reactor != nil {
				h.client.PrependReactor("get", "leases", c.reactor)
			}
			err := h.c.processLease(ctx, "a")
			if (err != nil) != c.wantErr {
				t.Fatalf("processLease: %v, want an error: %v", err, c.wantErr)
			}
			if diff := cmp.Diff(c.wantQueue, drain(h.c.storageVersions)); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
		})
	}
}

// drain returns the items of q, sorted.
func drain(q workqueue.TypedRateLimitingInterface[string]) []string {
	var out []string
	for q.Len() > 0 {
		k, _ := q.Get()
		out = append(out, k)
		q.Done(k)
	}
	slices.Sort(out)
	return out
}

func TestScanOnce(t *testing.T) {
	ctx := context.Background()
	t.Run("queues what the mirror shows without a Lease", func(t *testing.T) {
		h := newHarness(t, false)
		h.store.serversNoLease = []string{"a", "b"}
		h.store.svsNoLease = []api.Target{{Name: "apps.deployments", UID: "uid-1"}, {Name: "v1.pods", UID: "uid-2"}}
		if err := h.c.scanOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a", "b"}, drain(h.c.leases)); diff != "" {
			t.Errorf("leases queued (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"apps.deployments", "v1.pods"}, drain(h.c.storageVersions)); diff != "" {
			t.Errorf("StorageVersions queued (-want +got):\n%s", diff)
		}
	})
	for _, method := range []string{"ServersWithoutLease", "StorageVersionsWithoutLease"} {
		t.Run(method+" fails", func(t *testing.T) {
			h := newHarness(t, false)
			boom := errors.New("boom")
			h.store.setErrors(map[string]error{method: boom})
			if err := h.c.scanOnce(ctx); !errors.Is(err, boom) {
				t.Errorf("scanOnce: %v, want %v", err, boom)
			}
		})
	}
}

// TestWork: an item that succeeds is forgotten, one that fails comes back
// after the queue's back-off and is counted, one paused comes back later
// uncounted.
func TestWork(t *testing.T) {
	h := newHarness(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	tries := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.c.work(ctx, q, func(_ context.Context, key string) error {
			mu.Lock()
			defer mu.Unlock()
			tries[key]++
			switch {
			case key == "fails" && tries[key] < 3:
				return errors.New("boom")
			case key == "paused" && tries[key] < 2:
				return reconcile.ErrPaused
			}
			return nil
		})
	}()
	q.Add("ok")
	q.Add("fails")
	testutil.WaitFor(t, 10*time.Second, "the failing item tried 3 times", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return tries["fails"] == 3 && tries["ok"] == 1
	})
	if n := testutil.Metric(h.t, h.reg, "kubegcd_svgc_errors_total"); n != 2 {
		t.Errorf("errors_total %v, want 2", n)
	}
	if n := q.NumRequeues("fails"); n != 0 {
		t.Errorf("the item that succeeded at last keeps %d requeues", n)
	}
	q.Add("paused")
	testutil.WaitFor(t, 10*time.Second, "the paused item tried once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return tries["paused"] == 1
	})
	if n := testutil.Metric(h.t, h.reg, "kubegcd_svgc_errors_total"); n != 2 {
		t.Errorf("errors_total %v after a pause, want 2", n)
	}
	q.ShutDown()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("work did not return once its queue shut down")
	}
}

func TestOnChange(t *testing.T) {
	for _, c := range []struct {
		name    string
		known   bool // Run has looked up the resources
		changes []db.Change
		want    bool
	}{
		{"before the resources are known, any change", false, []db.Change{{Type: db.ChangeUpserted, ResourceID: 99}}, true},
		{"a Lease deleted", true, []db.Change{{Type: db.ChangeDeleted, ResourceID: leasesResourceID}}, true},
		{"a Lease renewed", true, []db.Change{{Type: db.ChangeUpserted, ResourceID: leasesResourceID}}, false},
		{"a StorageVersion created or changed", true, []db.Change{{Type: db.ChangeUpserted, ResourceID: storageVersionsResourceID}}, true},
		{"a StorageVersion deleted", true, []db.Change{{Type: db.ChangeDeleted, ResourceID: storageVersionsResourceID}}, false},
		{"a relist", true, []db.Change{{Type: db.ChangeRelisted, ResourceID: 99}}, true},
		{"another resource", true, []db.Change{{Type: db.ChangeDeleted, ResourceID: 99}}, false},
		{"one change of many", true, []db.Change{{Type: db.ChangeUpserted, ResourceID: leasesResourceID},
			{Type: db.ChangeDeleted, ResourceID: leasesResourceID}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, false)
			if c.known {
				h.c.resources.leases.Store(leasesResourceID)
				h.c.resources.storageVersions.Store(storageVersionsResourceID)
			}
			h.c.OnChange(c.changes)
			select {
			case <-h.c.rescan:
				if !c.want {
					t.Error("woke for a rescan")
				}
			default:
				if c.want {
					t.Error("no rescan")
				}
			}
		})
	}
}

// TestRun: from the mirror's servers without a Lease, Run deletes the
// StorageVersion left with no entry, through the lease path and the
// StorageVersion path, and stops with its context.
func TestRun(t *testing.T) {
	sv := storageVersion("a=apps/v1")
	h := newHarness(t, false, sv)
	h.store.serversNoLease = []string{"a"}
	h.store.storageVersions = map[string][]string{"a": {sv.Name}}
	stop := testutil.Start(t, h.c.Run)
	testutil.WaitFor(t, 10*time.Second, "the StorageVersion deleted", func() bool {
		_, err := h.get(sv.Name)
		return apierrors.IsNotFound(err)
	})
	if got := h.c.resources.leases.Load(); got != leasesResourceID {
		t.Errorf("leases resource %d, want %d", got, leasesResourceID)
	}
	if got := h.c.resources.storageVersions.Load(); got != storageVersionsResourceID {
		t.Errorf("storageversions resource %d, want %d", got, storageVersionsResourceID)
	}
	stop()
}

// TestRunNeverSynced: Run decides nothing before the mirror is complete.
func TestRunNeverSynced(t *testing.T) {
	h := newHarness(t, false, storageVersion("a=apps/v1"))
	h.unsynced.Store(true)
	h.store.serversNoLease = []string{"a"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := h.c.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}
	if got := h.writes(); len(got) != 0 {
		t.Errorf("wrote %v before the mirror synced", got)
	}
}
