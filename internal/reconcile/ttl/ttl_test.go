package ttl

import (
	"context"
	"encoding/json"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
	"github.com/kubegcd/kubegcd/internal/reconcile"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

const nodesResourceID = 7

// fakeStore is the mirror's nodes, as the TTL controller reads them.
type fakeStore struct {
	mu    sync.Mutex
	nodes []db.NodeTTL
	// errors make the named method fail.
	errors map[string]error
}

func (s *fakeStore) fail(method string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors[method]
}

func (s *fakeStore) ResourceID(ctx context.Context, group, version, resource string) (int64, error) {
	if group != "" || version != "v1" || resource != "nodes" {
		return 0, fmt.Errorf("no resource %s/%s %s", group, version, resource)
	}
	return nodesResourceID, s.fail("ResourceID")
}

func (s *fakeStore) NodeUIDs(ctx context.Context) ([]string, error) {
	if err := s.fail("NodeUIDs"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var uids []string
	for _, n := range s.nodes {
		uids = append(uids, n.UID)
	}
	return uids, nil
}

func (s *fakeStore) NodeTTLCounts(ctx context.Context) (map[string]int, error) {
	if err := s.fail("NodeTTLCounts"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := map[string]int{}
	for _, n := range s.nodes {
		if n.TTL != nil {
			counts[*n.TTL]++
		}
	}
	return counts, nil
}

// NodesNotAtTTL compares strings, as the mirror's query does.
func (s *fakeStore) NodesNotAtTTL(ctx context.Context, ttl string) ([]db.NodeTTL, error) {
	if err := s.fail("NodesNotAtTTL"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []db.NodeTTL
	for _, n := range s.nodes {
		if n.TTL == nil || *n.TTL != ttl {
			out = append(out, n)
		}
	}
	return out, nil
}

// set replaces the mirror's copy of a node, or adds it.
func (s *fakeStore) set(n db.NodeTTL) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.nodes {
		if s.nodes[i].UID == n.UID {
			s.nodes[i] = n
			return
		}
	}
	s.nodes = append(s.nodes, n)
}

// harness is a controller on a fake store and a fake clientset, with an
// applier on a database of its own.
type harness struct {
	t       *testing.T
	store   *fakeStore
	ledger  *db.DB
	client  *fake.Clientset
	applier *reconcile.Applier
	passes  *reconcile.Passes
	reg     *prometheus.Registry
	c       *Controller
	// synced is what Synced answers, live what ResourceSynced answers
	// about nodes.
	synced, live bool
}

type harnessOptions struct {
	dryRun   bool
	mayWrite func() error
}

func newHarness(t *testing.T, nodes []db.NodeTTL, o harnessOptions) *harness {
	t.Helper()
	ledger := dbtest.Open(t)
	var objects []runtime.Object
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: types.UID(n.UID), ResourceVersion: n.ResourceVersion}}
		if n.TTL != nil {
			node.Annotations = map[string]string{corev1.ObjectTTLAnnotationKey: *n.TTL}
		}
		objects = append(objects, node)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	applier, err := reconcile.NewApplier(reconcile.ApplierOptions{DB: ledger.Ledger(), Instance: "test", Logger: log, DryRun: o.dryRun,
		MayWrite: o.mayWrite, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	passes := reconcile.NewPasses(prometheus.NewRegistry())
	h := &harness{t: t, store: &fakeStore{nodes: slices.Clone(nodes)}, ledger: ledger, client: fake.NewClientset(objects...),
		applier: applier, passes: passes, reg: prometheus.NewRegistry(), synced: true, live: true}
	h.c, err = New(Options{
		ControllerOptions: reconcile.ControllerOptions{Applier: applier, Logger: log, Synced: func() bool { return h.synced }, Passes: passes, Registerer: h.reg}, DB: h.store, Client: h.client,
		ResourceSynced: func(group, resource string) bool { return h.live && group == "" && resource == "nodes" }, Workers: 2, ResyncPeriod: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) reconcile() {
	h.t.Helper()
	if err := h.c.Reconcile(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// patched returns each node patched so far and the annotation its patch set.
func (h *harness) patched() map[string]string {
	h.t.Helper()
	out := map[string]string{}
	for _, a := range h.client.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok {
			continue
		}
		if p.GetPatchType() != types.MergePatchType {
			h.t.Fatalf("patch of type %s", p.GetPatchType())
		}
		var body struct {
			Metadata struct {
				UID         string            `json:"uid"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			h.t.Fatal(err)
		}
		if body.Metadata.UID != "uid-"+p.GetName() {
			h.t.Errorf("the patch of %s names UID %q", p.GetName(), body.Metadata.UID)
		}
		out[p.GetName()] = body.Metadata.Annotations[corev1.ObjectTTLAnnotationKey]
	}
	return out
}

// pending returns the names of the nodes pending, by rule.
func (h *harness) pending() map[string][]string {
	h.t.Helper()
	rows, _, err := h.ledger.Decisions().ListPending(context.Background(), db.PendingFilter{Controller: api.ControllerTTL})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range rows {
		out[r.Rule] = append(out[r.Rule], r.Target.Name)
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

func nodesOf(n int, ttl *string) []db.NodeTTL {
	var out []db.NodeTTL
	for i := range n {
		out = append(out, node(fmt.Sprintf("n%04d", i), ttl))
	}
	return out
}

func TestReconcileAnnotatesNodesNotAtTheBandsTTL(t *testing.T) {
	nodes := []db.NodeTTL{node("absent", nil), node("fifteen", ptr("15")), node("zero", ptr("0")),
		node("zero-padded", ptr("00")), node("garbled", ptr("x"))}
	h := newHarness(t, nodes, harnessOptions{})
	h.reconcile()
	want := map[string]string{"absent": "0", "fifteen": "0", "garbled": "0"}
	if diff := cmp.Diff(want, h.patched()); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
	if got := testutil.Metric(h.t, h.reg, "kubegcd_ttl_patches_total"); got != 3 {
		t.Errorf("patches_total %v, want 3", got)
	}
	if got := testutil.Metric(h.t, h.reg, "kubegcd_ttl_nodes"); got != 5 {
		t.Errorf("nodes %v, want 5", got)
	}
	if got := testutil.Metric(h.t, h.reg, "kubegcd_ttl_seconds"); got != 0 {
		t.Errorf("seconds %v, want 0", got)
	}
	for _, name := range []string{"absent", "fifteen", "garbled"} {
		n, err := h.client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Annotations[corev1.ObjectTTLAnnotationKey]; got != "0" {
			t.Errorf("node %s carries %q, want 0", name, got)
		}
	}

	// The mirror has not caught up: the nodes written at those versions
	// are not patched again.
	h.client.ClearActions()
	h.reconcile()
	if got := h.patched(); len(got) != 0 {
		t.Errorf("patched again before the mirror caught up: %v", got)
	}
	// A node changed meanwhile, at another version, is patched again.
	h.store.set(db.NodeTTL{Object: db.Object{UID: "uid-fifteen", APIVersion: "v1", Kind: "Node", Name: "fifteen", ResourceVersion: "rv-2"},
		TTL: ptr("15")})
	h.reconcile()
	if diff := cmp.Diff(map[string]string{"fifteen": "0"}, h.patched()); diff != "" {
		t.Errorf("patches (-want +got):\n%s", diff)
	}
}

// TestReconcileDryRunPending: dry-run patches nothing and holds each node
// to annotate pending under its band's rule; a node the mirror shows at
// the TTL leaves the pending rows.
func TestReconcileDryRunPending(t *testing.T) {
	nodes := append(nodesOf(120, ptr("15")), node("absent", nil), node("zero", ptr("0")))
	h := newHarness(t, nodes, harnessOptions{dryRun: true})
	h.reconcile()
	if got := h.patched(); len(got) != 0 {
		t.Errorf("dry-run patched %v", got)
	}
	if diff := cmp.Diff(map[string][]string{"BR-19-02": {"absent", "zero"}}, h.pending()); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	h.store.set(node("zero", ptr("015")))
	h.reconcile()
	if diff := cmp.Diff(map[string][]string{"BR-19-02": {"absent"}}, h.pending()); diff != "" {
		t.Errorf("pending once zero reads 015 (-want +got):\n%s", diff)
	}
	if got := testutil.Metric(h.t, h.reg, "kubegcd_ttl_patches_total"); got != 0 {
		t.Errorf("patches_total %v in dry-run", got)
	}
	if got := testutil.Metric(h.t, h.reg, "kubegcd_ttl_seconds"); got != 15 {
		t.Errorf("seconds %v, want 15", got)
	}
}

// TestReconcileFollowsTheBand: node changes move the band by hysteresis
// (BR-19-06), and the next reconcile brings every node to its TTL.
func TestReconcileFollowsTheBand(t *testing.T) {
	h := newHarness(t, nodesOf(100, ptr("0")), harnessOptions{dryRun: true})
	h.c.nodesResource.Store(nodesResourceID)
	h.reconcile()
	if got := h.pending(); len(got) != 0 {
		t.Fatalf("100 nodes at 0: pending %v", got)
	}
	// One more node: past band 0's sizeMax of 100.
	extra := node("n0100", nil)
	h.store.set(extra)
	h.c.OnChange([]db.Change{{Type: db.ChangeUpserted, ResourceID: nodesResourceID, UID: extra.UID, TypedChanged: true},
		{Type: db.ChangeUpserted, ResourceID: nodesResourceID + 1, UID: "not-a-node", TypedChanged: true}})
	h.reconcile()
	if band, n := h.c.tracker.current(); band != 1 || n != 101 {
		t.Fatalf("band %d at %d nodes, want 1 at 101", band, n)
	}
	if got := len(h.pending()["BR-19-02"]); got != 101 {
		t.Errorf("%d nodes pending under BR-19-02, want 101", got)
	}
	// Back to 95: band 1 holds (hysteresis), so nothing changes.
	var gone []db.Change
	for i := 95; i <= 100; i++ {
		gone = append(gone, db.Change{Type: db.ChangeDeleted, ResourceID: nodesResourceID, UID: fmt.Sprintf("uid-n%04d", i)})
	}
	h.c.OnChange(gone)
	h.reconcile()
	if band, n := h.c.tracker.current(); band != 1 || n != 95 {
		t.Fatalf("band %d at %d nodes, want 1 at 95", band, n)
	}
	// Changes to other resources move nothing and wake nothing.
	<-h.c.wake
	h.c.OnChange([]db.Change{{Type: db.ChangeDeleted, ResourceID: nodesResourceID + 1, UID: "uid-n0000"}})
	select {
	case <-h.c.wake:
		t.Error("a change to another resource woke the controller")
	default:
	}
	// A node's status update that leaves its typed row as it was wakes
	// nothing; one that changes it (its TTL annotation, say) does.
	h.c.OnChange([]db.Change{{Type: db.ChangeUpserted, ResourceID: nodesResourceID, UID: "uid-n0001"}})
	select {
	case <-h.c.wake:
		t.Error("a node's status update that changed nothing woke the controller")
	default:
	}
	h.c.OnChange([]db.Change{{Type: db.ChangeUpserted, ResourceID: nodesResourceID, UID: "uid-n0001", TypedChanged: true}})
	select {
	case <-h.c.wake:
	default:
		t.Error("a node whose typed row changed did not wake the controller")
	}
}

func TestReconcileSkippedWhileNodesAreNotLive(t *testing.T) {
	h := newHarness(t, []db.NodeTTL{node("absent", nil)}, harnessOptions{})
	h.live = false
	h.reconcile()
	if got := h.patched(); len(got) != 0 {
		t.Errorf("patched %v while the mirror of nodes is not live", got)
	}
	st := h.passes.Status()
	if len(st) != 1 || !st[0].Skipping || st[0].SkipReason != reconcile.SkipMirrorNotSynced {
		t.Errorf("pass status %+v, want skipping (%s)", st, reconcile.SkipMirrorNotSynced)
	}
	h.live = true
	h.reconcile()
	if diff := cmp.Diff(map[string]string{"absent": "0"}, h.patched()); diff != "" {
		t.Errorf("patches once live (-want +got):\n%s", diff)
	}
}

func TestReconcileStoreErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, method := range []string{"NodeUIDs", "NodeTTLCounts", "NodesNotAtTTL"} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t, []db.NodeTTL{node("absent", nil)}, harnessOptions{})
			h.store.errors = map[string]error{method: boom}
			if err := h.c.Reconcile(context.Background()); !errors.Is(err, boom) {
				t.Fatalf("Reconcile: %v, want %v", err, boom)
			}
			if got := h.patched(); len(got) != 0 {
				t.Errorf("patched %v after a failed read", got)
			}
			h.store.mu.Lock()
			h.store.errors = nil
			h.store.mu.Unlock()
			h.reconcile()
			if diff := cmp.Diff(map[string]string{"absent": "0"}, h.patched()); diff != "" {
				t.Errorf("patches at the next reconcile (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconcileWriteFailures: a refused patch is not counted and is tried
// again at the next reconcile; a pause sends nothing.
func TestReconcileWriteFailures(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		h := newHarness(t, []db.NodeTTL{node("absent", nil)}, harnessOptions{})
		h.client.PrependReactor("patch", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("refused")
		})
		h.reconcile()
		h.reconcile()
		if got := len(h.client.Actions()); got != 2 {
			t.Errorf("%d patches sent, want 2 (one per reconcile)", got)
		}
		if got := testutil.Metric(h.t, h.reg, "kubegcd_ttl_patches_total"); got != 0 {
			t.Errorf("patches_total %v after refusals", got)
		}
		if diff := cmp.Diff(map[string][]string{"BR-19-01": {"absent"}}, h.pending()); diff != "" {
			t.Errorf("pending (-want +got):\n%s", diff)
		}
	})
	t.Run("paused", func(t *testing.T) {
		h := newHarness(t, []db.NodeTTL{node("absent", nil)}, harnessOptions{mayWrite: func() error { return reconcile.ErrPaused }})
		h.reconcile()
		if got := len(h.client.Actions()); got != 0 {
			t.Errorf("%d writes sent while paused", got)
		}
	})
}

// TestRun: Run waits for the mirror, annotates, wakes on node changes and
// stops with its context.
func TestRun(t *testing.T) {
	h := newHarness(t, []db.NodeTTL{node("a", nil)}, harnessOptions{})
	stop := testutil.Start(t, h.c.Run)
	waitPatched := func(want map[string]string) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, func() error {
			if got := h.patched(); !cmp.Equal(want, got) {
				return fmt.Errorf("patches %v, want %v", got, want)
			}
			return nil
		})
	}
	waitPatched(map[string]string{"a": "0"})
	if got := h.c.nodesResource.Load(); got != nodesResourceID {
		t.Errorf("nodes resource %d, want %d", got, nodesResourceID)
	}
	b := node("b", ptr("15"))
	h.store.set(b)
	h.c.OnChange([]db.Change{{Type: db.ChangeUpserted, ResourceID: nodesResourceID, UID: b.UID, TypedChanged: true}})
	waitPatched(map[string]string{"a": "0", "b": "0"})
	stop()
}

// TestRunNeverSynced: Run decides nothing before the mirror is complete.
func TestRunNeverSynced(t *testing.T) {
	h := newHarness(t, []db.NodeTTL{node("a", nil)}, harnessOptions{})
	h.synced = false
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := h.c.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}
	if got := h.patched(); len(got) != 0 {
		t.Errorf("patched %v before the mirror synced", got)
	}
}
