package e2efaults

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// outage is how long the API server stays unreachable: the two minutes
// the issue names, in real time, so that every timer kubegcd has (watch
// backoff, discovery, resync, retries) fires during it at least once.
const outage = 2 * time.Minute

// TestAPIServerUnreachable takes the API server away from one kubegcd for
// two minutes while the cluster changes behind its back: an owner deleted
// (its dependents become garbage), objects deleted (they must leave the
// mirror), an orphan created. While cut, kubegcd must say it is not ready
// and not synced, and decide nothing; once the API server is back, it must
// resync to exactly what the cluster holds and then collect the garbage,
// and nothing else.
func TestAPIServerUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "unreachable")
	owner := createCM(t, ns, "owner")
	var deps []types.UID
	for i := range 3 {
		deps = append(deps, createCM(t, ns, fmt.Sprintf("dep-%d", i), ref("owner", owner.UID)).UID)
	}
	keeper := createCM(t, ns, "keeper")
	kept := createCM(t, ns, "kept", ref("keeper", keeper.UID))
	for i := range 3 {
		createCM(t, ns, fmt.Sprintf("doomed-%d", i))
	}

	p := newProxy(t)
	d := daemons.WithKubeconfig(p.Kubeconfig(confinedToken(t, ns))).Start(t, "", enforcing...)
	eventually(t, 30*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d.DB(t), meta, ns) })

	p.Cut()
	cutAt := time.Now()
	d.WaitUnready(t, 30*time.Second, "mirror not synced")
	deleteCM(t, ns, "owner")
	for i := range 3 {
		deleteCM(t, ns, fmt.Sprintf("doomed-%d", i))
	}
	orphan := createCM(t, ns, "orphan", ref("never-was", uuid.NewUUID()))

	// Throughout the outage: not ready, not synced, and not one decision.
	for time.Since(cutAt) < outage {
		if code, body := readyz(t, d); code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz %d %s while the API server is unreachable", code, body)
		}
		if s := status(t, d); s.Synced {
			t.Fatalf("/status says synced while the API server is unreachable")
		}
		if rows := auditOf(t, d, ns); len(rows) > 0 {
			t.Fatalf("decisions while the API server is unreachable: %+v", rows)
		}
		if code, exited := d.Exited(); exited {
			t.Fatalf("kubegcd exited with %d during the outage", code)
		}
		time.Sleep(time.Second)
	}

	p.Restore()
	noDecisionUntilSynced(t, d, ns, 90*time.Second)
	d.WaitReady(t, 30*time.Second)
	eventually(t, 30*time.Second, func() error { return e2eutil.MirrorMatches(ctx, d.DB(t), meta, ns) })
	eventually(t, 60*time.Second, func() error {
		for i, uid := range deps {
			if cmExists(t, ns, fmt.Sprintf("dep-%d", i), uid) {
				return fmt.Errorf("dep-%d, whose owner was deleted during the outage, is still there", i)
			}
		}
		if cmExists(t, ns, "orphan", orphan.UID) {
			return fmt.Errorf("the orphan created during the outage is still there")
		}
		return nil
	})
	if !cmExists(t, ns, "kept", kept.UID) {
		t.Fatalf("kept, whose owner exists, was deleted")
	}
	for _, r := range auditOf(t, d, ns) {
		if r.Target.Name == "kept" {
			t.Fatalf("a decision about kept, whose owner exists: %+v", r)
		}
	}
}
