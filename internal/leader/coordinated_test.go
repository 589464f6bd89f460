package leader

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

// TestCandidateVersion: every version kubegcd may be built with becomes
// a version the API server accepts (strict semver) and the election
// reads (semver.ParseTolerant), releases by their number, builds without
// one before every release.
func TestCandidateVersion(t *testing.T) {
	tests := []struct{ version, want string }{
		{"v0.3.0", "0.3.0"},
		{"0.3.0", "0.3.0"},
		{"v1.2", "1.2.0"},
		{"v0.3.0-5-gabcdef1", "0.3.0-5-gabcdef1"},
		{"v0.3.0-5-gabcdef1-dirty", "0.3.0-5-gabcdef1-dirty"},
		{"v1.2.3+build.7", "1.2.3+build.7"},
		// git describe --always without a tag: a commit hash.
		{"df4908a-dirty", "0.0.0-dev+df4908a-dirty"},
		{"1234567", "0.0.0-dev+1234567"}, // not major version 1234567
		{"0123456-dirty", "0.0.0-dev+0123456-dirty"},
		{"dev", "0.0.0-dev+dev"},
		{"dev-e08c8c8a1b2c", "0.0.0-dev+dev-e08c8c8a1b2c"},
		{"", "0.0.0-dev"},
		{"my build/2..x", "0.0.0-dev+my-build-2.x"},
		{"v01.2.3", "1.2.3"}, // as the election reads it
		// go build's version of a module built from a commit.
		{"v0.0.0-20260101120000-abcdef123456", "0.0.0-20260101120000-abcdef123456"},
	}
	for _, tc := range tests {
		got := candidateVersion(tc.version)
		if got != tc.want {
			t.Errorf("candidateVersion(%q) = %q, want %q", tc.version, got, tc.want)
		}
		if _, err := semver.Parse(got); err != nil {
			t.Errorf("candidateVersion(%q) = %q, which the API server refuses: %v", tc.version, got, err)
		}
		if _, err := semver.ParseTolerant(got); err != nil {
			t.Errorf("candidateVersion(%q) = %q, which the election cannot read: %v", tc.version, got, err)
		}
	}
	// The order the election sees.
	order := []string{"dev", "v0.1.0", "v0.2.0-3-gabcdef1", "v0.2.0", "v0.10.0"}
	for i := 1; i < len(order); i++ {
		a, b := semver.MustParse(candidateVersion(order[i-1])), semver.MustParse(candidateVersion(order[i]))
		if !a.LT(b) {
			t.Errorf("%s (%s) does not sort before %s (%s)", order[i-1], a, order[i], b)
		}
	}
}

// TestInstanceIdentity: the identity is a valid LeaseCandidate name (the
// API server writes it as the Lease's holder), whatever the host name.
func TestInstanceIdentity(t *testing.T) {
	long := strings.Repeat("h", 300)
	tests := []struct{ host, want string }{
		{"node-1.example.com", "node-1.example.com_0a1b2c3d"},
		{"NODE_1", "NODE_1_0a1b2c3d"},
		{"", "kubegcd_0a1b2c3d"},
		{"héte rö/x", "h-te-r--x_0a1b2c3d"},
		{long, long[:244] + "_0a1b2c3d"},
	}
	for _, tc := range tests {
		got := identityOf(tc.host, "0a1b2c3d")
		if got != tc.want {
			t.Errorf("identityOf(%q) = %q, want %q", tc.host, got, tc.want)
		}
		if msgs := validation.IsConfigMapKey(got); len(msgs) > 0 {
			t.Errorf("identityOf(%q) = %q: not a LeaseCandidate name: %v", tc.host, got, msgs)
		}
	}
	a, b := NewIdentity(), NewIdentity()
	if a == b {
		t.Errorf("two instances share the identity %q", a)
	}
	if msgs := validation.IsConfigMapKey(a); len(msgs) > 0 {
		t.Errorf("NewIdentity() = %q: not a LeaseCandidate name: %v", a, msgs)
	}
}

// TestLeaseCoordinated: a Lease is coordinated when the API server gave it
// a strategy and a holder whose term runs.
func TestLeaseCoordinated(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	strategy := coordinationv1.OldestEmulationVersion
	spec := func(strategy *coordinationv1.CoordinatedLeaseStrategy, holder string, renewed time.Duration, seconds int32) coordinationv1.LeaseSpec {
		s := coordinationv1.LeaseSpec{Strategy: strategy, LeaseDurationSeconds: ptr.To(seconds),
			RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}}
		if holder != "" {
			s.HolderIdentity = ptr.To(holder)
		}
		return s
	}
	tests := []struct {
		name string
		spec coordinationv1.LeaseSpec
		want string // "": coordinated
	}{
		{"elected, renewed", spec(&strategy, "a", time.Second, 15), ""},
		{"no strategy: an uncoordinated elector holds it", spec(nil, "a", time.Second, 15), "it has no strategy"},
		{"empty strategy", spec(ptr.To(coordinationv1.CoordinatedLeaseStrategy("")), "a", time.Second, 15), "it has no strategy"},
		{"released", spec(&strategy, "", time.Second, 1), "it has a strategy but no holder"},
		{"a stale strategy, the holder long gone", spec(&strategy, "a", time.Hour, 15), `its holder "a" let it expire`},
		{"expired at this instant", spec(&strategy, "a", 15*time.Second, 15), `its holder "a" let it expire`},
		{"never renewed", coordinationv1.LeaseSpec{Strategy: &strategy, HolderIdentity: ptr.To("a")}, `its holder "a" let it expire`},
	}
	for _, tc := range tests {
		ok, why := leaseCoordinated(&coordinationv1.Lease{Spec: tc.spec}, now)
		if ok != (tc.want == "") || why != tc.want {
			t.Errorf("%s: leaseCoordinated = %v, %q; want %q", tc.name, ok, why, tc.want)
		}
	}
}

// TestCoordinationTimeout: two lease durations and twice the election
// controller's delay.
func TestCoordinationTimeout(t *testing.T) {
	for _, tc := range []struct{ lease, want time.Duration }{
		{15 * time.Second, 40 * time.Second},
		{4 * time.Second, 18 * time.Second},
	} {
		if got := coordinationTimeout(Config{LeaseDuration: tc.lease}); got != tc.want {
			t.Errorf("coordinationTimeout(lease %s) = %s, want %s", tc.lease, got, tc.want)
		}
	}
}

// TestCoordinate runs the start-up of --leader-elect-coordinated against
// a fake API server: refused in one line naming the gate and the
// runtime-config when LeaseCandidates are not served or the Lease is not
// coordinated in time; else the candidate stands, as it should, while
// the elector runs, and is withdrawn after.
func TestCoordinate(t *testing.T) {
	const ns, leaseName, self, ver = "kube-system", "kubegcd", "host_0a1b2c3d", "0.3.0"
	strategy := coordinationv1.OldestEmulationVersion
	lease := func(holder string, renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaseName},
			Spec: coordinationv1.LeaseSpec{Strategy: &strategy, HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](5),
				RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	served := []*metav1.APIResourceList{{GroupVersion: "coordination.k8s.io/v1beta1",
		APIResources: []metav1.APIResource{{Name: "leasecandidates", Namespaced: true, Kind: "LeaseCandidate"}}}}
	tests := []struct {
		name     string
		identity string
		served   []*metav1.APIResourceList
		lease    *coordinationv1.Lease // there at start
		elects   bool                  // a fake election controller names the candidate
		cancel   bool                  // the daemon stops while it waits
		forbid   bool                  // creating the candidate is forbidden
		wantErr  []string              // the refusal's words; nil: elect runs (or the stop)
		wantRun  bool
	}{
		{name: "not served", served: nil, wantErr: []string{"does not serve leasecandidates.coordination.k8s.io/v1beta1"}},
		{name: "the group served without LeaseCandidates",
			served:  []*metav1.APIResourceList{{GroupVersion: "coordination.k8s.io/v1beta1"}},
			wantErr: []string{"does not serve leasecandidates"}},
		{name: "served, but no election controller", served: served,
			wantErr: []string{"did not coordinate the Lease kube-system/kubegcd within 2s: it does not exist"}},
		{name: "the candidate cannot stand", served: served, forbid: true,
			wantErr: []string{`within 2s: this instance's LeaseCandidate host_0a1b2c3d does not stand`}},
		{name: "a stale strategy and holder, no election controller", served: served, lease: lease("gone_ffffffff", time.Now().Add(-time.Hour)),
			wantErr: []string{`its holder "gone_ffffffff" let it expire`}},
		{name: "elected by the API server", served: served, elects: true, wantRun: true},
		{name: "another candidate holds it", served: served, lease: lease("other_ffffffff", time.Now().Add(time.Hour)), wantRun: true},
		{name: "stopped while waiting", served: served, cancel: true},
		{name: "an identity no candidate may have", identity: "a b", served: served, wantErr: []string{`the identity "a b" is no LeaseCandidate name`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.Discovery().(*fakediscovery.FakeDiscovery).Resources = tc.served
			if tc.forbid {
				client.PrependReactor("create", "leasecandidates", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(coordinationv1beta1.Resource("leasecandidates"), "", errors.New("no rights"))
				})
			}
			if tc.lease != nil {
				if _, err := client.CoordinationV1().Leases(ns).Create(context.Background(), tc.lease, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			identity := self
			if tc.identity != "" {
				identity = tc.identity
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			candidates := client.CoordinationV1beta1().LeaseCandidates(ns)
			var stood atomic.Pointer[coordinationv1beta1.LeaseCandidate]
			// The API server's part: once the candidate stands, it is
			// elected (or the daemon stops).
			go func() {
				for ctx.Err() == nil {
					if c, err := candidates.Get(ctx, identity, metav1.GetOptions{}); err == nil {
						stood.Store(c)
						switch {
						case tc.cancel:
							cancel()
						case tc.elects:
							_, _ = client.CoordinationV1().Leases(ns).Create(ctx, lease(c.Name, time.Now()), metav1.CreateOptions{})
						}
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			e := New(Config{Enabled: true, Coordinated: true, Namespace: ns, Name: leaseName,
				LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 20 * time.Millisecond}, identity)
			var ran bool
			// Time for client-go's candidate to sync its cache and stand,
			// on a busy machine too.
			err := e.coordinate(ctx, client, ver, 2*time.Second, discard,
				func(context.Context) error {
					ran = true
					// The candidate stands while the elector runs.
					c, err := candidates.Get(ctx, identity, metav1.GetOptions{})
					if err != nil {
						t.Errorf("no LeaseCandidate while electing: %v", err)
						return nil
					}
					// Seen here if the elector returns before the poll above
					// sees it: the candidate is withdrawn at once.
					stood.Store(c)
					want := coordinationv1beta1.LeaseCandidateSpec{LeaseName: leaseName, BinaryVersion: ver, EmulationVersion: ver, Strategy: strategy}
					got := c.Spec
					got.RenewTime, got.PingTime = nil, nil
					if got != want {
						t.Errorf("candidate spec %+v, want %+v", got, want)
					}
					return nil
				})
			if ran != tc.wantRun {
				t.Errorf("elector ran: %v, want %v", ran, tc.wantRun)
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("coordinate: %v, want nil", err)
			case tc.wantErr != nil && err == nil:
				t.Errorf("coordinate: nil, want a refusal saying %q", tc.wantErr)
			case err != nil:
				msg := err.Error()
				want := tc.wantErr
				if !strings.HasPrefix(msg, "--leader-elect-coordinated: the identity") {
					want = append(want, "--feature-gates=CoordinatedLeaderElection=true", "--runtime-config=coordination.k8s.io/v1beta1=true")
				}
				for _, w := range want {
					if !strings.Contains(msg, w) {
						t.Errorf("refusal %q does not say %q", msg, w)
					}
				}
				if strings.Contains(msg, "\n") {
					t.Errorf("refusal of more than one line: %q", msg)
				}
			}
			// The candidate stood when it got that far, and is gone now.
			if tc.served != nil && len(tc.served[0].APIResources) > 0 && tc.identity == "" && !tc.forbid && stood.Load() == nil {
				t.Errorf("the candidate never stood")
			}
			if _, err := candidates.Get(context.Background(), identity, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the candidate is still there after coordinate returned: %v", err)
			}
		})
	}
}

// TestWithdrawBeforeRelease: under coordinated election the candidate is
// withdrawn once work has returned and before the lease is released, on a
// graceful stop as when work fails; else kube-apiserver could elect the
// releasing instance again at once.
func TestWithdrawBeforeRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workErr error // work fails with it; nil: the daemon stops
	}{
		{"graceful stop", nil},
		{"work failed", errors.New("ingest failed")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lock := &memoryLock{identity: "me"}
			// Not coordinated, so that the elector takes the lease itself.
			e := New(Config{Enabled: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
				RetryPeriod: 100 * time.Millisecond}, "me")
			withdrawn := 0
			e.beforeRelease = func() {
				withdrawn++
				lock.note("withdrawn")
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			started := make(chan struct{})
			work := func(ctx context.Context) error {
				close(started)
				if tc.workErr == nil {
					<-ctx.Done()
				}
				lock.note("work returned")
				return tc.workErr
			}
			done := make(chan error, 1)
			go func() {
				done <- e.elect(ctx, newFencedLock(lock, e.cfg.LeaseDuration, time.Now), discard, work)
			}()
			select {
			case <-started:
			case <-time.After(10 * time.Second):
				t.Fatalf("never led: %s", lock)
			}
			if tc.workErr == nil {
				stop()
			}
			select {
			case err := <-done:
				if !errors.Is(err, tc.workErr) {
					t.Fatalf("elect returned %v, want %v", err, tc.workErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("elect did not return: %s", lock)
			}
			var got []string
			for _, s := range lock.Log() {
				if s != "renew" {
					got = append(got, s)
				}
			}
			if want := []string{"create", "work returned", "withdrawn", "release"}; !slices.Equal(got, want) {
				t.Errorf("lease and work events, renewals left out: %q, want %q", got, want)
			}
			if withdrawn != 1 {
				t.Errorf("withdrawn %d times, want once", withdrawn)
			}
		})
	}
}

// TestLostTo: a lost Lease says whom the API server prefers or named, from
// the Lease as read before the release cleared it.
func TestLostTo(t *testing.T) {
	const self, lease = "new_0a1b2c3d", "kube-system/kubegcd"
	lost := ErrLostLease.Error()
	tests := []struct {
		name string
		read resourcelock.LeaderElectionRecord
		want string
	}{
		{name: "a preferred holder", read: resourcelock.LeaderElectionRecord{HolderIdentity: self, PreferredHolder: "old_ffffffff",
			Strategy: coordinationv1.OldestEmulationVersion},
			want: "the API server prefers old_ffffffff as the holder of the Lease kube-system/kubegcd (strategy OldestEmulationVersion): " + lost},
		{name: "another holder named", read: resourcelock.LeaderElectionRecord{HolderIdentity: "old_ffffffff"},
			want: "the API server named old_ffffffff the holder of the Lease kube-system/kubegcd: " + lost},
		{name: "still naming this instance", read: resourcelock.LeaderElectionRecord{HolderIdentity: self}, want: lost},
		{name: "naming this instance the preferred holder", read: resourcelock.LeaderElectionRecord{PreferredHolder: self}, want: lost},
		{name: "nothing read", want: lost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := lostTo(ErrLostLease, self, lease, tc.read)
			if err.Error() != tc.want || !errors.Is(err, ErrLostLease) {
				t.Errorf("lostTo = %q, want %q, wrapping ErrLostLease", err, tc.want)
			}
		})
	}

	// The fenced lock keeps what its last Get read, across the release.
	m := &memoryLock{identity: self}
	f := newFencedLock(m, 15*time.Second, time.Now)
	preferred := resourcelock.LeaderElectionRecord{HolderIdentity: self, PreferredHolder: "old_ffffffff"}
	if err := f.Create(context.Background(), preferred); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.Update(context.Background(), resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	if got := f.lastRead(); got.PreferredHolder != "old_ffffffff" || got.HolderIdentity != self {
		t.Errorf("lastRead after the release: %+v, want the record read before it, %+v", got, preferred)
	}
}
