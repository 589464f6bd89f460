package e2efaults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// compaction is held by each test that compacts etcd, for the whole
// test. A compaction expires the resourceVersions of every daemon on the
// cluster: one test's compaction would make another's daemon relist when
// that test counts the relists.
var compaction sync.Mutex

// holdCompaction keeps the other tests from compacting etcd until t ends.
func holdCompaction(t *testing.T) {
	compaction.Lock()
	t.Cleanup(compaction.Unlock)
}

// compactEtcd compacts etcd up to its current revision, through its JSON
// gateway: every watch from an older resourceVersion then expires.
func compactEtcd(t *testing.T) {
	t.Helper()
	post := func(path, body string) map[string]any {
		resp, err := http.Post(cluster.EtcdURL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("etcd %s: HTTP %d %v %v", path, resp.StatusCode, out, err)
		}
		return out
	}
	header, _ := post("/v3/kv/range", `{"key": "AA=="}`)["header"].(map[string]any)
	rev, err := strconv.ParseInt(fmt.Sprint(header["revision"]), 10, 64)
	if err != nil {
		t.Fatalf("etcd's revision: %v", err)
	}
	body, _ := json.Marshal(map[string]any{"revision": rev, "physical": true})
	post("/v3/kv/compaction", string(body))
}

// TestExpiredWatchRelists cuts one kubegcd off while the cluster changes
// and etcd is compacted past every resourceVersion it knows: its watches
// resume into 410 Gone and it must relist. Meanwhile an owner was deleted
// and re-created under the same name, one of the old owner's dependents was
// moved to the new owner and another made for it. A decision from the
// stale view would delete them for an owner that seems gone; only the old
// owner's remaining dependent is garbage.
func TestExpiredWatchRelists(t *testing.T) {
	t.Parallel()
	holdCompaction(t)
	ctx := context.Background()
	ns := namespaces.New(t, "expiry")
	s := newOwnerSwap(t, ns)

	p := newProxy(t)
	d := daemons.WithKubeconfig(p.Kubeconfig(confinedToken(t, ns))).Start(t, "", enforcing...)
	eventually(t, 30*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d.DB(t), meta, ns) })
	relists := func() float64 {
		return d.Metric(t, "kubegcd_ingest_relists_total", "resource=configmaps", "reason=expired")
	}
	before := relists()

	p.Cut()
	d.WaitUnready(t, 30*time.Second, "mirror not synced")
	s.swap(t)
	compactEtcd(t)
	p.Restore()
	noDecisionUntilSynced(t, d, ns, 60*time.Second)

	eventually(t, 60*time.Second, func() error {
		if n := relists(); n <= before {
			return fmt.Errorf("no relist after an expired watch of configmaps yet (%v)", n)
		}
		return nil
	})
	if !strings.Contains(d.Logs.String(), "watch expired, relisting") {
		t.Errorf("the log does not say that a watch expired")
	}
	d.WaitReady(t, 60*time.Second)
	eventually(t, 30*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d.DB(t), meta, ns) })
	eventually(t, 60*time.Second, func() error {
		if cmExists(t, ns, "dep-old", s.garbage.UID) {
			return fmt.Errorf("dep-old, whose owner is gone, is still there")
		}
		return nil
	})
	noDecisionAbout(t, d, ns, s.survivors(), 5*time.Second)
}

// TestRestartFromCompactedVersionRelists stops kubegcd, changes the
// cluster and compacts etcd past every resourceVersion its database
// stored: at the next start its watches cannot resume (410 Gone) and it
// must list again, leaving no ghost of what was deleted meanwhile. Garbage
// made while it was down is collected; what has a live owner, the owner
// re-created under the same name included, is never decided on.
func TestRestartFromCompactedVersionRelists(t *testing.T) {
	t.Parallel()
	holdCompaction(t)
	ctx := context.Background()
	ns := namespaces.New(t, "restart-expiry")
	s := newOwnerSwap(t, ns)
	live := createCM(t, ns, "live-owner")
	keep := createCM(t, ns, "keep", ref("live-owner", live.UID))

	config := kubeconfig(t, cluster.Config.Host, confinedToken(t, ns))
	d := daemons.WithKubeconfig(config).Start(t, "", enforcing...)
	eventually(t, 30*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d.DB(t), meta, ns) })
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited with %d", code)
	}

	s.swap(t)
	dangling := createCM(t, ns, "dep-dangling", ref("never-existed", "00000000-0000-0000-0000-00000000dead"))
	compactEtcd(t)

	d2 := e2eutil.DaemonOptions{Kubeconfig: config}.Start(t, d.DBPath, enforcing...)
	noDecisionUntilSynced(t, d2, ns, 60*time.Second)
	// The stored resume point expired: the start lists, once. A watch that
	// expires later relists again, and the metric counts both, as it
	// should: the API server's watch cache may expire one under load.
	if n := d2.Metric(t, "kubegcd_ingest_relists_total", "resource=configmaps", "reason=expired"); n < 1 {
		t.Errorf("configmaps relisted %v times for an expired resourceVersion, want at least 1", n)
	}
	if n := logLines(d2, "stored resourceVersion expired, listing", "resource=configmaps"); n != 1 {
		t.Errorf("the start listed configmaps %d times for an expired stored resourceVersion, want 1", n)
	}
	if n := d2.Metric(t, "kubegcd_ingest_resumes_total", "resource=configmaps"); n != 0 {
		t.Errorf("configmaps resumed %v times from a compacted resourceVersion", n)
	}
	eventually(t, 60*time.Second, func() error {
		for name, uid := range map[string]types.UID{"dep-old": s.garbage.UID, "dep-dangling": dangling.UID} {
			if cmExists(t, ns, name, uid) {
				return fmt.Errorf("%s, whose owner is gone, is still there", name)
			}
		}
		return nil
	})
	eventually(t, 30*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d2.DB(t), meta, ns) })
	survivors := s.survivors()
	survivors["keep"], survivors["live-owner"] = keep.UID, live.UID
	noDecisionAbout(t, d2, ns, survivors, 3*time.Second)
}

// logLines counts the lines of the log of d that hold every one of subs.
func logLines(d *e2eutil.Daemon, subs ...string) int {
	n := 0
	for line := range strings.Lines(d.Logs.String()) {
		if !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(line, s) }) {
			n++
		}
	}
	return n
}

// ownerSwap is how both tests change the cluster while kubegcd does not
// see it: three ConfigMaps deleted, an owner deleted and re-created under
// its name, one of its two dependents moved to the new owner and another
// made for it. The old owner's other dependent is then garbage.
type ownerSwap struct {
	ns                           string
	garbage, moved, fresh, owner *corev1.ConfigMap
}

// newOwnerSwap creates the owner, its two dependents and the three
// ConfigMaps to delete.
func newOwnerSwap(t *testing.T, ns string) *ownerSwap {
	t.Helper()
	old := createCM(t, ns, "owner")
	s := &ownerSwap{ns: ns, garbage: createCM(t, ns, "dep-old", ref("owner", old.UID)),
		moved: createCM(t, ns, "dep-moved", ref("owner", old.UID))}
	for i := range 3 {
		createCM(t, ns, fmt.Sprintf("doomed-%d", i))
	}
	return s
}

// swap makes the changes.
func (s *ownerSwap) swap(t *testing.T) {
	t.Helper()
	for i := range 3 {
		deleteCM(t, s.ns, fmt.Sprintf("doomed-%d", i))
	}
	deleteCM(t, s.ns, "owner")
	s.owner = createCM(t, s.ns, "owner")
	s.moved.OwnerReferences = []metav1.OwnerReference{ref("owner", s.owner.UID)}
	moved, err := kube.CoreV1().ConfigMaps(s.ns).Update(context.Background(), s.moved, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.moved = moved
	s.fresh = createCM(t, s.ns, "dep-new", ref("owner", s.owner.UID))
}

// survivors are the ConfigMaps whose owner exists after the swap, by name.
func (s *ownerSwap) survivors() map[string]types.UID {
	return map[string]types.UID{"dep-moved": s.moved.UID, "dep-new": s.fresh.UID, "owner": s.owner.UID}
}

// noDecisionAbout fails the test if one of survivors (by name, with their
// UIDs) in namespace ns is deleted within the next period, or if d has
// decided about one of them.
func noDecisionAbout(t *testing.T, d *e2eutil.Daemon, ns string, survivors map[string]types.UID, period time.Duration) {
	t.Helper()
	stable(t, period, func() error {
		for name, uid := range survivors {
			if !cmExists(t, ns, name, uid) {
				return fmt.Errorf("%s, whose owner exists, was deleted", name)
			}
		}
		return nil
	})
	for _, r := range auditOf(t, d, ns) {
		if _, ok := survivors[r.Target.Name]; ok {
			t.Errorf("a decision about %s, whose owner exists: %+v", r.Target.Name, r)
		}
	}
}
