package podgc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// fakeStore is the mirror as PodGC reads it, in memory. It selects and
// orders pods with the decisions' own predicates, which
// TestDecideAgreesWithTheStore holds to the real store's queries.
type fakeStore struct {
	mu    sync.Mutex
	pods  []*db.Object
	nodes map[string]*db.Node // the nodes in the mirror, by name
	// fail makes a call fail: "count", "count:<namespace>", "terminated",
	// "out-of-service", "missing", "node:<name>", "unscheduled".
	fail map[string]error
	// limits are those TerminatedPods was called with.
	limits  []int
	cursors map[*db.PodCursor]int
	// onMissing, if set, runs at every MissingNodes.
	onMissing func()
}

func newFakeStore(pods ...*db.Object) *fakeStore {
	return &fakeStore{pods: pods, nodes: map[string]*db.Node{}, fail: map[string]error{}, cursors: map[*db.PodCursor]int{}}
}

func (s *fakeStore) sorted(keep func(*db.Object) bool) []*db.Object {
	var out []*db.Object
	for _, p := range s.pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, deletionOrder)
	return out
}

func (s *fakeStore) CountTerminatedPods(_ context.Context, f db.TerminatedFilter) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail["count"]; err != nil && f.Namespace == "" {
		return 0, err
	}
	if err := s.fail["count:"+f.Namespace]; err != nil && f.Namespace != "" {
		return 0, err
	}
	return len(s.sorted(func(p *db.Object) bool { return selects(f, p) })), nil
}

func (s *fakeStore) TerminatedPods(_ context.Context, f db.TerminatedFilter, after *db.PodCursor, limit int) ([]*db.Object, *db.PodCursor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = append(s.limits, limit)
	if err := s.fail["terminated"]; err != nil {
		return nil, nil, err
	}
	all := s.sorted(func(p *db.Object) bool { return selects(f, p) })
	start := 0
	if after != nil {
		start = s.cursors[after]
	}
	page := all[start:min(start+limit, len(all))]
	next := &db.PodCursor{}
	s.cursors[next] = start + len(page)
	return page, next, nil
}

func (s *fakeStore) TerminatingPodsOnOutOfServiceNodes(_ context.Context, outOfServiceKey string) ([]*db.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail["out-of-service"]; err != nil {
		return nil, err
	}
	if outOfServiceKey != corev1.TaintNodeOutOfService {
		return nil, fmt.Errorf("taint key %q", outOfServiceKey)
	}
	return s.sorted(func(p *db.Object) bool {
		n := s.nodes[p.Pod.NodeName]
		return p.DeletionTimestamp != nil && n != nil && outOfService(n)
	}), nil
}

func (s *fakeStore) MissingNodes(context.Context) ([]string, error) {
	if s.onMissing != nil {
		s.onMissing()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail["missing"]; err != nil {
		return nil, err
	}
	var out []string
	for _, p := range s.pods {
		if n := p.Pod.NodeName; n != "" && s.nodes[n] == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *fakeStore) PodsOnNode(_ context.Context, node string) ([]*db.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail["node:"+node]; err != nil {
		return nil, err
	}
	return s.sorted(func(p *db.Object) bool { return p.Pod.NodeName == node }), nil
}

func (s *fakeStore) UnscheduledTerminatingPods(context.Context) ([]*db.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail["unscheduled"]; err != nil {
		return nil, err
	}
	return s.sorted(func(p *db.Object) bool { return p.DeletionTimestamp != nil && p.Pod.NodeName == "" }), nil
}

func (s *fakeStore) set(f func(s *fakeStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// harness is a controller over a fake store and a fake API server, with a
// real audit ledger and a fake clock.
type harness struct {
	c       *Controller
	store   *fakeStore
	ledger  *db.DB
	applier *reconcile.Applier
	client  *fake.Clientset
	reg     *prometheus.Registry
	passes  *reconcile.Passes
	clock   *testingclock.FakeClock
}

// newHarness starts at t0, with the mirror synced. opts sets what the test
// needs; the rest is filled in.
func newHarness(t *testing.T, store *fakeStore, dryRun bool, opts Options) *harness {
	t.Helper()
	ledger := dbtest.Open(t)
	clock := testingclock.NewFakeClock(t0)
	ledger.Now = clock.Now
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: ledger.Ledger(), DryRun: dryRun, Instance: "test", Logger: log,
		Now: clock.Now, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{store: store, ledger: ledger, applier: applier, client: fake.NewClientset(), reg: prometheus.NewRegistry(),
		passes: reconcile.NewPasses(prometheus.NewRegistry()), clock: clock}
	opts.DB, opts.Applier, opts.Client, opts.Logger, opts.Passes = store, applier, h.client, log, h.passes
	opts.Synced = func() bool { return true }
	if opts.ResourceSynced == nil {
		opts.ResourceSynced = func(string, string) bool { return true }
	}
	opts.Registerer, opts.Now = h.reg, clock.Now
	if h.c, err = New(opts); err != nil {
		t.Fatal(err)
	}
	return h
}

// livePods adds the pods to the fake API server.
func (h *harness) livePods(t *testing.T, pods ...*db.Object) {
	t.Helper()
	for _, p := range pods {
		live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: types.UID(p.UID)},
			Status: corev1.PodStatus{Phase: corev1.PodPhase(p.Pod.Phase)}}
		if err := h.client.Tracker().Add(live); err != nil {
			t.Fatal(err)
		}
	}
}

// metric returns the value of a counter or gauge of the controller with
// the given label value ("" for none).
func (h *harness) metric(t *testing.T, name, label string) float64 {
	t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func (h *harness) pending(t *testing.T) map[string]db.Pending {
	t.Helper()
	rows, _, err := h.ledger.Decisions().ListPending(context.Background(), db.PendingFilter{Controller: api.ControllerPodGC})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]db.Pending{}
	for _, r := range rows {
		out[r.Target.Name] = r
	}
	return out
}

// writes lists the writes the fake API server received, as
// "verb namespace/name[/subresource]".
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		s := a.GetVerb() + " " + a.GetNamespace() + "/"
		switch a := a.(type) {
		case k8stesting.PatchAction:
			s += a.GetName()
		case k8stesting.DeleteAction:
			s += a.GetName()
		}
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		out = append(out, s)
	}
	return out
}

// collected runs one collection of a pass whose chosen pods are gathered
// instead of handled.
func (h *harness) collected(t *testing.T, gc func(context.Context, *pass) error) ([]job, *pass, error) {
	t.Helper()
	p := &pass{now: h.clock.Now(), seen: map[string]bool{}, jobs: make(chan job)}
	var jobs []job
	done := make(chan struct{})
	go func() {
		defer close(done)
		for j := range p.jobs {
			jobs = append(jobs, j)
		}
	}()
	err := gc(context.Background(), p)
	close(p.jobs)
	<-done
	return jobs, p, err
}

func rules(jobs []job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.pod.Name+":"+j.rule)
	}
	return out
}

// TestCollectPagesThroughTheStore: a threshold far below the count takes
// pods page by page, in deletion order, asking no more than it needs.
func TestCollectPagesThroughTheStore(t *testing.T) {
	var pods []*db.Object
	for i := range 1203 {
		pods = append(pods, pod(fmt.Sprintf("p%04d", i), "Succeeded", 0, createdAt(t0.Add(-time.Duration(i)*time.Second))))
	}
	pods = append(pods, pod("running", "Running", 5000))
	store := newFakeStore(pods...)
	h := newHarness(t, store, true, Options{TerminatedThreshold: 100})
	jobs, p, err := h.collected(t, h.c.gcTerminated)
	if err != nil || p.incomplete {
		t.Fatalf("err %v, incomplete %v", err, p.incomplete)
	}
	if len(jobs) != 1103 {
		t.Fatalf("%d pods chosen, want 1103", len(jobs))
	}
	for i, j := range jobs {
		if want := fmt.Sprintf("p%04d", 1202-i); j.pod.Name != want || j.rule != ruleTerminated {
			t.Fatalf("pod %d chosen: %s for %s, want %s for %s", i, j.pod.Name, j.rule, want, ruleTerminated)
		}
	}
	if want := []int{500, 500, 103}; !slices.Equal(store.limits, want) {
		t.Errorf("pages asked for %v, want %v", store.limits, want)
	}
	if got := h.metric(t, "kubegcd_podgc_terminated_pods", ""); got != 1203 {
		t.Errorf("terminated pods gauge %v, want 1203", got)
	}
}

// TestGCTerminatedChoosesAPodOnce: the sweeps run in their order, and a
// pod goes under the first rule that chooses it.
func TestGCTerminatedChoosesAPodOnce(t *testing.T) {
	store := newFakeStore(
		pod("a-old", "Succeeded", 50, inNamespace("a")), pod("a-mid", "Succeeded", 30, inNamespace("a")),
		pod("a-new", "Succeeded", 1, inNamespace("a")), pod("b-old", "Failed", 40, inNamespace("b")),
		pod("b-new", "Failed", 2, inNamespace("b")), pod("c-new", "Failed", 3, inNamespace("c")),
		pod("run", "Running", 99, inNamespace("a")))
	h := newHarness(t, store, true, Options{TerminatedThreshold: 5, MaxAge: 24 * time.Hour,
		NamespaceThresholds: map[string]int{"c": 0, "b": 1, "zz": 0}})
	jobs, _, err := h.collected(t, h.c.gcTerminated)
	if err != nil {
		t.Fatal(err)
	}
	// Namespace b holds one pod beyond its threshold: b-old, deleted
	// already for its age, so b-new stays.
	want := []string{"a-old:BR-24-01", "b-old:KG-24-02", "a-mid:KG-24-02", "c-new:KG-24-03"}
	if got := rules(jobs); !slices.Equal(got, want) {
		t.Errorf("chosen %q, want %q", got, want)
	}
}

// TestGCTerminatedListingFailures: a failed listing is an error of the pass
// and makes it incomplete; the sweeps that can still run do.
func TestGCTerminatedListingFailures(t *testing.T) {
	boom := errors.New("disk I/O error")
	pods := []*db.Object{pod("a1", "Succeeded", 50, inNamespace("a")), pod("a2", "Succeeded", 49, inNamespace("a")),
		pod("b1", "Failed", 48, inNamespace("b"))}
	tests := []struct {
		name string
		fail string
		want []string
	}{
		{name: "the cluster's count: no sweep runs", fail: "count"},
		{name: "a namespace's count: the others are swept", fail: "count:a", want: []string{"a1:BR-24-01", "b1:KG-24-03"}},
		{name: "a page", fail: "terminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore(pods...)
			store.fail[tt.fail] = boom
			h := newHarness(t, store, true, Options{TerminatedThreshold: 2, NamespaceThresholds: map[string]int{"a": 0, "b": 0}})
			jobs, p, err := h.collected(t, h.c.gcTerminated)
			if !errors.Is(err, boom) || !p.incomplete {
				t.Errorf("err %v, incomplete %v", err, p.incomplete)
			}
			if got := rules(jobs); !slices.Equal(got, tt.want) {
				t.Errorf("chosen %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGCTerminatingAndUnscheduled: the two collections hand over what
// their decisions choose, and a failed listing makes the pass incomplete.
func TestGCTerminatingAndUnscheduled(t *testing.T) {
	store := newFakeStore(pod("oos", "Running", 1, onNode("down"), deleting), pod("oos-alive", "Running", 1, onNode("down")),
		pod("up", "Running", 1, onNode("up"), deleting), pod("unbound", "Pending", 1, deleting), pod("unbound-alive", "Pending", 1))
	store.nodes["down"] = &db.Node{Ready: "False", Taints: []db.Taint{{Key: corev1.TaintNodeOutOfService, Effect: "NoExecute"}}}
	store.nodes["up"] = &db.Node{Ready: "True"}
	h := newHarness(t, store, true, Options{})
	for _, c := range []struct {
		gc   func(context.Context, *pass) error
		fail string
		want []string
	}{
		{h.c.gcTerminating, "out-of-service", []string{"oos:BR-24-02"}},
		{h.c.gcUnscheduledTerminating, "unscheduled", []string{"unbound:KG-24-01"}},
	} {
		jobs, p, err := h.collected(t, c.gc)
		if err != nil || p.incomplete {
			t.Errorf("%s: err %v, incomplete %v", c.fail, err, p.incomplete)
		}
		if got := rules(jobs); !slices.Equal(got, c.want) {
			t.Errorf("%s: chosen %q, want %q", c.fail, got, c.want)
		}
		boom := errors.New("disk I/O error")
		store.set(func(s *fakeStore) { s.fail[c.fail] = boom })
		jobs, p, err = h.collected(t, c.gc)
		if !errors.Is(err, boom) || !p.incomplete || len(jobs) != 0 {
			t.Errorf("%s failing: err %v, incomplete %v, chosen %q", c.fail, err, p.incomplete, rules(jobs))
		}
	}
}

// TestGCOrphanedAcrossPasses follows a node missing from the mirror through
// its quarantine and its live checks.
func TestGCOrphanedAcrossPasses(t *testing.T) {
	const q = 40 * time.Second
	store := newFakeStore(pod("a", "Running", 2, onNode("gone")), pod("b", "Succeeded", 1, onNode("gone")),
		pod("here", "Running", 1, onNode("here")))
	store.nodes["here"] = &db.Node{Ready: "True"}
	h := newHarness(t, store, true, Options{Quarantine: q})
	var live error // the answer of a live GET of node gone
	h.client.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if name := a.(k8stesting.GetAction).GetName(); name != "gone" {
			return true, nil, fmt.Errorf("node %s looked up", name)
		}
		if live != nil {
			return true, nil, live
		}
		return true, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, nil
	})
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "gone")
	quarantineWhy := "bound to node gone, which is missing from the mirror: in quarantine (--podgc-quarantine=40s), " +
		"then the node is looked up live"

	steps := []struct {
		name  string
		at    time.Duration // after t0
		live  error
		err   string
		jobs  []string
		until time.Duration // when the pending rows' quarantine ends, after t0
		since time.Duration // the node's missingSince after the pass, after t0
		check string        // the node check made, if any
	}{
		{name: "first seen missing", at: 0, until: q, since: 0},
		{name: "within the quarantine", at: 20 * time.Second, until: q, since: 0},
		{name: "the live check fails", at: q, live: errors.New("the API server is unreachable"),
			err: "checking node gone: the API server is unreachable", until: q, since: 0, check: "error"},
		{name: "the node is found: a new quarantine", at: 60 * time.Second, until: 60*time.Second + q, since: 60 * time.Second,
			check: "present"},
		{name: "not found: its pods go", at: 100 * time.Second, live: notFound, jobs: []string{"a:BR-24-03", "b:BR-24-03"},
			until: 60*time.Second + q, since: 60 * time.Second, check: "absent"},
	}
	checks := map[string]float64{}
	for _, s := range steps {
		h.clock.SetTime(t0.Add(s.at))
		live = s.live
		jobs, p, err := h.collected(t, h.c.gcOrphaned)
		if s.err == "" && err != nil || s.err != "" && (err == nil || err.Error() != s.err) {
			t.Errorf("%s: err %v, want %q", s.name, err, s.err)
		}
		if p.incomplete {
			t.Errorf("%s: incomplete", s.name)
		}
		if got := rules(jobs); !slices.Equal(got, s.jobs) {
			t.Errorf("%s: chosen %q, want %q", s.name, got, s.jobs)
		}
		for _, j := range jobs {
			if !j.condition || j.facts["nodeMissingSince"] != t0.Add(s.since) {
				t.Errorf("%s: %s: condition %v, facts %v", s.name, j.pod.Name, j.condition, j.facts)
			}
		}
		if !p.seen["uid-a"] || !p.seen["uid-b"] || p.seen["uid-here"] {
			t.Errorf("%s: seen %v", s.name, p.seen)
		}
		if since := h.c.missingSince["gone"]; !since.Equal(t0.Add(s.since)) {
			t.Errorf("%s: missing since %s, want %s", s.name, since, t0.Add(s.since))
		}
		rows := h.pending(t)
		for _, name := range []string{"a", "b"} {
			r, ok := rows[name]
			if !ok || r.Rule != ruleOrphaned || r.Reason != quarantineWhy || r.NotBefore == nil || !r.NotBefore.Equal(t0.Add(s.until)) {
				t.Errorf("%s: pending %s: %v %+v, want until +%s", s.name, name, ok, r, s.until)
			}
		}
		if s.check != "" {
			checks[s.check]++
		}
		for _, c := range []string{"present", "absent", "error"} {
			if got := h.metric(t, "kubegcd_podgc_node_checks_total", c); got != checks[c] {
				t.Errorf("%s: %s node checks %v, want %v", s.name, c, got, checks[c])
			}
		}
	}

	// The node is back in the mirror: it is forgotten, and the quarantine
	// starts afresh when it goes missing again.
	store.set(func(s *fakeStore) { s.nodes["gone"] = &db.Node{Ready: "True"} })
	if _, _, err := h.collected(t, h.c.gcOrphaned); err != nil || len(h.c.missingSince) != 0 {
		t.Errorf("node back: err %v, missing %v", err, h.c.missingSince)
	}
	store.set(func(s *fakeStore) { delete(s.nodes, "gone") })
	h.clock.SetTime(t0.Add(time.Hour))
	if jobs, _, err := h.collected(t, h.c.gcOrphaned); err != nil || len(jobs) != 0 || !h.c.missingSince["gone"].Equal(t0.Add(time.Hour)) {
		t.Errorf("missing again: err %v, chosen %q, since %s", err, rules(jobs), h.c.missingSince["gone"])
	}
}

// TestGCOrphanedListingFailures: a pass that could not list a missing
// node's pods is incomplete, whatever step the node was at.
func TestGCOrphanedListingFailures(t *testing.T) {
	boom := errors.New("disk I/O error")
	tests := []struct {
		name string
		fail string
		live error // of the live GET
		at   time.Duration
		want string
	}{
		{name: "the missing nodes", fail: "missing", want: "disk I/O error"},
		{name: "in quarantine", fail: "node:gone", want: "disk I/O error"},
		{name: "gone", fail: "node:gone", at: time.Minute, live: apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "gone"),
			want: "disk I/O error"},
		{name: "the check failed", fail: "node:gone", at: time.Minute, live: errors.New("timeout"),
			want: "checking node gone: timeout\nlisting the pods of node gone: disk I/O error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore(pod("a", "Running", 2, onNode("gone")))
			h := newHarness(t, store, true, Options{Quarantine: 40 * time.Second})
			h.client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.live
			})
			h.c.missingSince["gone"] = t0
			store.fail[tt.fail] = boom
			h.clock.SetTime(t0.Add(tt.at))
			jobs, p, err := h.collected(t, h.c.gcOrphaned)
			if err == nil || err.Error() != tt.want || !p.incomplete || len(jobs) != 0 {
				t.Errorf("err %v, incomplete %v, chosen %q; want %q", err, p.incomplete, rules(jobs), tt.want)
			}
		})
	}
}

// TestHandle: what one chosen pod gets from the API server, and what is
// counted.
func TestHandle(t *testing.T) {
	boom := apierrors.NewInternalError(errors.New("etcd is down"))
	tests := []struct {
		name    string
		pod     *db.Object
		orphan  bool
		dryRun  bool
		notLive bool
		failOn  string // the verb the API server fails
		writes  []string
		deletes float64
		errors  float64
		pending bool // a pending row stays
	}{
		{name: "a running pod is marked Failed, then deleted", pod: pod("p", "Running", 1),
			writes: []string{"patch ns/p/status", "delete ns/p"}, deletes: 1},
		{name: "an orphan too", pod: pod("p", "Pending", 1, onNode("gone")), orphan: true,
			writes: []string{"patch ns/p/status", "delete ns/p"}, deletes: 1},
		{name: "a terminated pod is deleted at once", pod: pod("p", "Succeeded", 1), writes: []string{"delete ns/p"}, deletes: 1},
		{name: "a failed patch: no delete", pod: pod("p", "Running", 1), failOn: "patch",
			writes: []string{"patch ns/p/status"}, deletes: 1, errors: 1, pending: true},
		{name: "a failed delete", pod: pod("p", "Failed", 1), failOn: "delete",
			writes: []string{"delete ns/p"}, deletes: 1, errors: 1, pending: true},
		{name: "gone already", pod: pod("p", "Running", 1), notLive: true, writes: []string{"patch ns/p/status"}, deletes: 1},
		{name: "dry-run: nothing written, nothing counted", pod: pod("p", "Running", 1), dryRun: true, pending: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newFakeStore(), tt.dryRun, Options{})
			if !tt.notLive {
				h.livePods(t, tt.pod)
			}
			if tt.failOn != "" {
				h.client.PrependReactor(tt.failOn, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, boom
				})
			}
			j := job{pod: tt.pod, rule: ruleTerminated, label: reasonTerminated, why: "why", condition: tt.orphan,
				facts: podFacts(tt.pod, nil)}
			ctx := context.Background()
			h.c.handle(ctx, t0, j)
			if got := h.writes(); !slices.Equal(got, tt.writes) {
				t.Errorf("writes %q, want %q", got, tt.writes)
			}
			for _, a := range h.client.Actions() {
				switch a := a.(type) {
				case k8stesting.PatchAction:
					patch := string(a.GetPatch())
					if a.GetPatchType() != types.StrategicMergePatchType || !strings.Contains(patch, `"phase":"Failed"`) ||
						strings.Contains(patch, "DisruptionTarget") != tt.orphan {
						t.Errorf("patch %s %s", a.GetPatchType(), patch)
					}
				case k8stesting.DeleteAction:
					o := a.GetDeleteOptions()
					if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != 0 || o.Preconditions == nil ||
						o.Preconditions.UID == nil || *o.Preconditions.UID != types.UID(tt.pod.UID) {
						t.Errorf("delete options %+v", o)
					}
				}
			}
			if got := h.metric(t, "kubegcd_podgc_force_delete_pods_total", reasonTerminated); got != tt.deletes {
				t.Errorf("deletes counted %v, want %v", got, tt.deletes)
			}
			if got := h.metric(t, "kubegcd_podgc_force_delete_pods_errors_total", reasonTerminated); got != tt.errors {
				t.Errorf("errors counted %v, want %v", got, tt.errors)
			}
			if _, ok := h.pending(t)["p"]; ok != tt.pending {
				t.Errorf("pending %v, want %v", ok, tt.pending)
			}
			if tt.writes == nil || tt.errors > 0 || tt.notLive {
				return
			}
			// Handed over again before the mirror shows the pod gone,
			// it is not deleted twice.
			h.client.ClearActions()
			h.c.handle(ctx, t0, job{pod: tt.pod, rule: ruleTerminated, label: reasonTerminated, why: "why", facts: podFacts(tt.pod, nil)})
			if got := h.writes(); len(got) != 0 {
				t.Errorf("handed over again: writes %q", got)
			}
		})
	}
}

// TestPass: a whole pass hands every collection's pods to the workers,
// which delete them; the pods it no longer holds are forgotten. It is
// skipped while the mirror of pods or nodes is not live.
func TestPass(t *testing.T) {
	pods := []*db.Object{
		pod("done", "Succeeded", 5), pod("done-new", "Succeeded", 1),
		pod("oos", "Running", 1, onNode("down"), deleting),
		pod("orphan", "Running", 1, onNode("gone")),
		pod("unbound", "Pending", 1, deleting),
		pod("alive", "Running", 1, onNode("down")),
	}
	store := newFakeStore(pods...)
	store.nodes["down"] = &db.Node{Ready: "False", Taints: []db.Taint{{Key: corev1.TaintNodeOutOfService, Effect: "NoExecute"}}}
	synced := true
	h := newHarness(t, store, false, Options{TerminatedThreshold: 1, Workers: 3,
		ResourceSynced: func(_, r string) bool { return synced || r != "nodes" }})
	h.livePods(t, pods...)
	h.client.PrependReactor("get", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "gone")
	})
	ctx := context.Background()

	synced = false
	if err := h.c.Pass(ctx); err != nil || len(h.client.Actions()) != 0 {
		t.Fatalf("a pass while nodes are not live: err %v, actions %v", err, h.client.Actions())
	}
	if s := h.passes.Status(); len(s) != 1 || !s[0].Skipping || s[0].SkipReason != reconcile.SkipMirrorNotSynced {
		t.Errorf("pass status %+v, want it skipped", s)
	}

	synced = true
	if err := h.c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, w := range h.writes() {
		if strings.HasPrefix(w, "delete ") {
			deleted = append(deleted, strings.TrimPrefix(w, "delete ns/"))
		}
	}
	slices.Sort(deleted)
	if want := []string{"done", "oos", "orphan", "unbound"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %q, want %q", deleted, want)
	}
	for label, want := range map[string]float64{reasonTerminated: 1, reasonOutOfService: 1, reasonOrphaned: 1, reasonUnscheduled: 1} {
		if got := h.metric(t, "kubegcd_podgc_force_delete_pods_total", label); got != want {
			t.Errorf("%s deletes counted %v, want %v", label, got, want)
		}
	}
}

// TestChooseStopsWithTheContext: with no worker free and the pass stopped,
// choose gives up, and the pass is incomplete.
func TestChooseStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &pass{now: t0, seen: map[string]bool{}, jobs: make(chan job)}
	j := job{pod: pod("p", "Failed", 1)}
	if err := p.choose(ctx, j); !errors.Is(err, context.Canceled) || !p.incomplete {
		t.Errorf("err %v, incomplete %v", err, p.incomplete)
	}
	// Chosen once, it is not handed over again in the same pass.
	if err := p.choose(ctx, j); err != nil {
		t.Errorf("chosen twice: %v", err)
	}
}

// TestRunPassesUntilStopped: Run makes a pass at once, and returns when its
// context ends.
func TestRunPassesUntilStopped(t *testing.T) {
	store := newFakeStore(pod("done", "Succeeded", 5))
	h := newHarness(t, store, true, Options{TerminatedThreshold: 1, Period: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	passes := 0
	store.onMissing = func() {
		passes++
		cancel()
	}
	done := make(chan error, 1)
	go func() { done <- h.c.Run(ctx) }()
	select {
	case err := <-done:
		if err != nil || passes != 1 {
			t.Errorf("Run returned %v after %d passes", err, passes)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return once its context ended")
	}
}
