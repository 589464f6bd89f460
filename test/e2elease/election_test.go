package e2elease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// The election's timings: short, for the test to be quick.
const (
	electionLease = 4 * time.Second
	electionRetry = 500 * time.Millisecond
	// controllerDelay is kube-apiserver's election controller's: it looks
	// at each coordinated Lease every 5 s, and waits 5 s for the answers
	// of the candidates it pinged.
	controllerDelay = 10 * time.Second
)

// TestCoordinatedElection runs two kubegcd processes of different versions
// with --leader-elect-coordinated. kube-apiserver names the holder: the
// newer one leads alone, and steps down (exit 1, as on any lost lease)
// once an older one stands and the API server prefers it; the older one holds the Lease and is the only
// one to write, also once the newer one is back. SIGKILLed, it hands over
// to the newer one within the lease duration plus the controller's delay.
// Stopped gracefully, that one releases the Lease and withdraws. Each
// process logs a warning of the API server once, whichever client got it.
func TestCoordinatedElection(t *testing.T) {
	ns := namespaces.New(t, "election")
	older, newer := buildKubegcd(t, "v0.1.0"), buildKubegcd(t, "v0.2.0")
	args := []string{"--dry-run=false", "--controllers=ownergc", "--leader-elect-coordinated", "--leader-elect-namespace=" + ns,
		"--leader-elect-lease-duration=" + electionLease.String(), "--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=" + electionRetry.String()}
	ctx := context.Background()
	leases := kube.CoordinationV1().Leases(ns)
	holder := func() string {
		l, err := leases.Get(ctx, "kubegcd", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var watch leaderWatch
	defer watch.stop(t)

	// The newer one alone: the API server elects it.
	started := time.Now()
	b := startProc(t, newer, "newer", "", args...)
	watch.add(b)
	bID := waitLeading(t, b, 60*time.Second)
	t.Logf("the newer one (%s) leads %s after its start", bID, time.Since(started).Round(time.Millisecond))

	// The older one stands: the API server prefers it, the newer one
	// gives the Lease up and exits, and the older one is elected.
	started = time.Now()
	a := startProc(t, older, "older", "", args...)
	watch.add(a)
	aID := a.identity(t)
	// First the API server names it the preferred holder, the newer one
	// still holding the Lease; then it holds it.
	preferred := false
	e2eutil.Eventually(t, 90*time.Second, func() error {
		l, err := leases.Get(ctx, "kubegcd", metav1.GetOptions{})
		if err != nil {
			return err
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		if h == bID && ptr.Deref(l.Spec.PreferredHolder, "") == aID {
			preferred = true
		}
		if h != aID {
			return fmt.Errorf("held by %q, preferred %q", h, ptr.Deref(l.Spec.PreferredHolder, ""))
		}
		return nil
	})
	if !preferred {
		t.Errorf("the Lease never named the older one, %s, its preferred holder while the newer one held it", aID)
	}
	waitLeading(t, a, 30*time.Second)
	t.Logf("the older one (%s) leads %s after its start", aID, time.Since(started).Round(time.Millisecond))
	e2eutil.Eventually(t, 30*time.Second, func() error {
		select {
		case <-b.proc.Done():
			return nil
		default:
			return errors.New("the newer one still runs, the older one preferred")
		}
	})
	// Its last line says to whom: the API server prefers the older one,
	// or has named it the holder already.
	last := e2eutil.Tail(b.log(), 1)
	lostTo := strings.HasPrefix(last, "kubegcd: the API server prefers "+aID+" as the holder of the Lease "+ns+"/kubegcd") ||
		strings.HasPrefix(last, "kubegcd: the API server named "+aID+" the holder of the Lease "+ns+"/kubegcd")
	if code := processExitCode(b.proc.Err()); code != 1 || !lostTo || !strings.HasSuffix(last, "lost the leader-election lease; "+
		"stopped every write and exiting so that a restart rejoins as a follower") {
		t.Fatalf("the newer one exited %d; want 1, saying it lost the lease to %s:\n%s", code, aID, e2eutil.Tail(b.log(), 30))
	}
	t.Logf("the newer one stepped down: %s", last)
	l, err := leases.Get(ctx, "kubegcd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.Strategy == nil || *l.Spec.Strategy != "OldestEmulationVersion" || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != aID {
		t.Fatalf("Lease spec %+v; want strategy OldestEmulationVersion and the older one, %s, holding it", l.Spec, aID)
	}

	// Restarted, as systemd would, the newer one follows.
	b2 := startProc(t, newer, "newer-again", b.db, args...)
	watch.add(b2)
	e2eutil.Eventually(t, 60*time.Second, func() error {
		st, err := b2.status()
		switch {
		case err != nil:
			return err
		case st.LeaderElection == nil || st.LeaderElection.Holder != aID:
			return fmt.Errorf("not following %s yet: %+v", aID, st.LeaderElection)
		}
		return nil
	})
	b2ID := b2.identity(t)
	// Both stand, as both /status answers show from their mirror.
	for _, in := range []*kubegcdProc{a, b2} {
		e2eutil.Eventually(t, 30*time.Second, func() error {
			st, err := in.status()
			if err != nil {
				return err
			}
			le := st.LeaderElection
			var names []string
			for _, c := range le.Candidates {
				names = append(names, c.Name+"@"+c.EmulationVersion)
			}
			slices.Sort(names)
			want := []string{aID + "@0.1.0", b2ID + "@0.2.0"}
			slices.Sort(want)
			if !le.Coordinated || le.Strategy != "OldestEmulationVersion" || !slices.Equal(names, want) {
				return fmt.Errorf("%s: coordinated %v, strategy %q, candidates %v; want true, OldestEmulationVersion, %v",
					in.name, le.Coordinated, le.Strategy, names, want)
			}
			return nil
		})
	}

	// Exactly one writes: the older one collects an orphan; the newer one
	// decides and records nothing.
	createOrphan(t, ns, "orphan-1")
	waitAudited(t, a, ns, "orphan-1")
	if rows := b2.audit(t, ns); len(rows) != 0 {
		t.Errorf("the follower recorded %d decisions, the first %+v; want none", len(rows), rows[0])
	}

	// SIGKILL of the holder: the newer one takes over.
	if err := a.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var elected time.Duration
	e2eutil.Eventually(t, 2*(electionLease+controllerDelay), func() error {
		if elected == 0 && holder() == b2ID {
			elected = time.Since(killed)
		}
		if st, err := b2.status(); err != nil || !st.Leader {
			return fmt.Errorf("not leading yet (%v)", err)
		}
		return nil
	})
	handover := time.Since(killed)
	t.Logf("hand-over after SIGKILL of the holder: the API server named %s after %s; it led after %s "+
		"(lease %s, the controller's delay %s, retry period %s)", b2ID, elected.Round(time.Millisecond),
		handover.Round(time.Millisecond), electionLease, controllerDelay, electionRetry)
	if limit := electionLease + controllerDelay + 2*electionRetry; handover > limit+time.Second {
		t.Errorf("hand-over took %s, more than the lease duration plus the controller's delay and the retries (%s)", handover, limit)
	}
	createOrphan(t, ns, "orphan-2")
	waitAudited(t, b2, ns, "orphan-2")
	watch.check(t)

	// A graceful stop releases the Lease and withdraws the candidate; the
	// SIGKILLed one's stays until it expires.
	if err := b2.proc.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping the holder: %v", err)
	}
	candidates := kube.CoordinationV1beta1().LeaseCandidates(ns)
	if _, err := candidates.Get(ctx, b2ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the stopped instance's LeaseCandidate: %v, want it deleted", err)
	}
	if _, err := candidates.Get(ctx, aID, metav1.GetOptions{}); err != nil {
		t.Errorf("the SIGKILLed instance's LeaseCandidate: %v, want it left to expire", err)
	}
	if h := holder(); h == b2ID {
		t.Errorf("the Lease still names the stopped instance %s", h)
	}
	// Every client of a process shares one record of the warnings logged.
	for _, in := range []*kubegcdProc{b, a, b2} {
		in.warnedOnce(t)
	}
}

// kubegcdProc is a kubegcd process of the test.
type kubegcdProc struct {
	name, url, db, logPath string
	proc                   *testcluster.Kubegcd
	// client checks each answer against the API's OpenAPI document.
	client *http.Client
}

func startProc(t *testing.T, bin, name, db string, args ...string) *kubegcdProc {
	t.Helper()
	dir := t.TempDir()
	if db == "" {
		db = filepath.Join(dir, "kubegcd.db")
	}
	addr := e2eutil.FreeAddr(t)
	in := &kubegcdProc{name: name, url: "http://" + addr, db: db, logPath: filepath.Join(dir, name+".log"),
		client: e2eutil.ValidatingClient(t, &http.Client{Timeout: 5 * time.Second})}
	p, err := testcluster.StartKubegcd(bin, in.logPath, append([]string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", db,
		"--listen", addr}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	in.proc = p
	t.Cleanup(func() {
		select {
		case <-p.Done():
		default:
			_ = p.Stop(30 * time.Second)
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, e2eutil.Tail(in.log(), 40))
		}
	})
	if err := p.WaitReady(context.Background(), in.url+"/healthz", 100*time.Millisecond, 60*time.Second); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, e2eutil.Tail(in.log(), 40))
	}
	return in
}

func (in *kubegcdProc) log() string {
	b, _ := os.ReadFile(in.logPath)
	return string(b)
}

func (in *kubegcdProc) get(path string, v any) error {
	resp, err := in.client.Get(in.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (in *kubegcdProc) status() (*api.Status, error) {
	var st api.Status
	if err := in.get("/status", &st); err != nil {
		return nil, err
	}
	if st.LeaderElection == nil {
		return nil, errors.New("/status without leaderElection")
	}
	return &st, nil
}

func (in *kubegcdProc) identity(t *testing.T) string {
	t.Helper()
	st, err := in.status()
	if err != nil {
		t.Fatal(err)
	}
	return st.LeaderElection.Identity
}

// audit is the instance's audit rows about the namespace, newest first.
func (in *kubegcdProc) audit(t *testing.T, ns string) []api.AuditEntry {
	t.Helper()
	rows, err := in.auditRows(ns)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func (in *kubegcdProc) auditRows(ns string) ([]api.AuditEntry, error) {
	var list api.AuditList
	err := in.get("/audit?namespace="+ns, &list)
	return list.Items, err
}

// warnedOnce fails the test if the log of in tells a warning of the API
// server twice.
func (in *kubegcdProc) warnedOnce(t *testing.T) {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range strings.Split(in.log(), "\n") {
		if !strings.Contains(line, `msg="the API server warns (said once)"`) {
			continue
		}
		var w string
		if m := warningAttr.FindStringSubmatch(line); m != nil {
			w = m[1]
		}
		if seen[w] {
			t.Errorf("%s logged the warning %s more than once", in.name, w)
		}
		seen[w] = true
	}
}

var warningAttr = regexp.MustCompile(`warning=("(\\.|[^"\\])*"|\S+)`)

// waitLeading waits until the kubegcdProc leads and the Lease names it, and
// returns its identity.
func waitLeading(t *testing.T, in *kubegcdProc, timeout time.Duration) string {
	t.Helper()
	var id string
	e2eutil.Eventually(t, timeout, func() error {
		st, err := in.status()
		if err != nil {
			return err
		}
		id = st.LeaderElection.Identity
		if !st.Leader || st.LeaderElection.Holder != id {
			return fmt.Errorf("%s does not lead: %+v", in.name, st.LeaderElection)
		}
		return nil
	})
	return id
}

// leaderWatch asks every kubegcdProc's /status every 100 ms whether it leads,
// and remembers any moment when two did. The answers of one round come
// one after another, so a round asks every instance twice (see atOnce).
type leaderWatch struct {
	mu        sync.Mutex
	instances []*kubegcdProc
	both      []string
	one       int // polls that found one leader
	done      chan struct{}
	wg        sync.WaitGroup
}

func (w *leaderWatch) add(in *kubegcdProc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.instances = append(w.instances, in)
	if w.done != nil {
		return
	}
	w.done = make(chan struct{})
	w.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			w.mu.Lock()
			ins := slices.Clone(w.instances)
			w.mu.Unlock()
			// Every instance in turn, and then again.
			asks := make([]bool, 2*len(ins))
			for i := range asks {
				st, err := ins[i%len(ins)].status()
				asks[i] = err == nil && st.Leader
			}
			leading := 0
			for _, l := range asks[:len(ins)] {
				if l {
					leading++
				}
			}
			pairs := atOnce(asks)
			w.mu.Lock()
			if leading == 1 {
				w.one++
			}
			for _, p := range pairs {
				w.both = append(w.both, time.Now().Format(time.StampMilli)+" "+ins[p[0]].name+", "+ins[p[1]].name)
			}
			w.mu.Unlock()
		}
	})
}

func (w *leaderWatch) stop(t *testing.T) {
	if w.done != nil {
		close(w.done)
		w.wg.Wait()
		w.done = nil
	}
}

// atOnce returns the pairs of instances that surely led at one moment.
// asks holds the answers of n instances asked in turn, twice (2n answers,
// in the order asked). An instance that leads at both its answers led all
// the time between them (nothing leads twice within a round), so another
// one that leads at an answer asked in between led at the same time.
// Answers of two instances that lead, one after the other, prove nothing:
// the first may have stepped down in between.
func atOnce(asks []bool) [][2]int {
	n := len(asks) / 2
	var pairs [][2]int
	for a := range n {
		if !asks[a] || !asks[n+a] {
			continue
		}
		for i := a + 1; i < n+a; i++ {
			if b := i % n; b != a && asks[i] {
				pairs = append(pairs, [2]int{a, b})
				break
			}
		}
	}
	return pairs
}

// check fails the test if two instances ever led at once.
func (w *leaderWatch) check(t *testing.T) {
	t.Helper()
	w.stop(t)
	if len(w.both) > 0 {
		t.Errorf("instances leading at once: %q", w.both)
	}
	if w.one == 0 {
		t.Errorf("the watch never saw a leader: it proves nothing")
	}
	t.Logf("%d polls of every /status found one leader, %d two", w.one, len(w.both))
}

// buildKubegcd builds kubegcd as version into the test's directory.
func buildKubegcd(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubegcd-"+version)
	cmd := exec.Command("go", "build", "-ldflags", "-X github.com/kubegcd/kubegcd/internal/app.Version="+version, "-o", bin,
		"github.com/kubegcd/kubegcd/cmd/kubegcd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kubegcd %s: %v\n%s", version, err, out)
	}
	return bin
}

// createOrphan creates a ConfigMap whose only owner never existed.
func createOrphan(t *testing.T, ns, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "never-was", UID: uuid.NewUUID()}}}}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAudited waits until the ConfigMap ns/name is gone and the newest
// row of the audit history of in is its deletion by in. The row is written
// after the DELETE returns, so it may follow the object's removal.
func waitAudited(t *testing.T, in *kubegcdProc, ns, name string) {
	t.Helper()
	id := in.identity(t)
	e2eutil.Eventually(t, 60*time.Second, func() error {
		_, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s/%s still there (%v)", ns, name, err)
		}
		rows, err := in.auditRows(ns)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return fmt.Errorf("%s/%s is gone; %s has no audit row of it yet", ns, name, in.name)
		}
		if r := rows[0]; r.Instance != id || r.Target.Name != name || r.Action != api.ActionDelete || r.Outcome != api.OutcomeApplied {
			return fmt.Errorf("%s/%s is gone; the newest audit row of %s is %+v, want its applied deletion of it by %s",
				ns, name, in.name, r, id)
		}
		return nil
	})
}

func processExitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}
