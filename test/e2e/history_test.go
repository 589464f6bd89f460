package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegcd/kubegcd/internal/api"
)

type historyJSON struct {
	Target *api.Target `json:"target"`
	Items  []struct {
		Time            time.Time `json:"time"`
		Event           string    `json:"event"`
		OwnerReferences []struct {
			UID string `json:"uid"`
		} `json:"ownerReferences"`
		Finalizers        []string   `json:"finalizers"`
		DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	} `json:"items"`
	Audit []api.AuditEntry `json:"audit"`
}

// events lists a history as "event owner,owner…" lines.
func (h historyJSON) events() []string {
	var out []string
	for _, it := range h.Items {
		var owners []string
		for _, r := range it.OwnerReferences {
			owners = append(owners, r.UID)
		}
		out = append(out, it.Event+" "+strings.Join(owners, ","))
	}
	return out
}

// TestObjectHistory follows a ConfigMap whose owner changes twice and which
// is then deleted: /objects/{uid}/history shows the four entries in order,
// also once it is gone, and /graph?uid=&at= draws its owner as it was at
// each time. Dry-run (the default), so it may run beside the others.
func TestObjectHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "history-"+string(uuid.NewUUID())[:8])
	cms := kube.CoreV1().ConfigMaps(ns)
	create := func(name string, owners ...metav1.OwnerReference) types.UID {
		t.Helper()
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		return cm.UID
	}
	ref := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid}
	}
	o1, o2, o3 := create("owner-1"), create("owner-2"), create("owner-3")
	dep := create("dep", ref("owner-1", o1))
	// A dependent of an owner that never existed: ownergc (dry-run) decides
	// to delete it, and that audit row belongs to its history.
	orphan := create("orphan", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID()})

	d := daemons.Start(t, "", "--resync-period=1s", "--discovery-interval=2s")

	historyPath := func(uid types.UID) string { return "/objects/" + string(uid) + "/history" }
	// waitHistory polls until uid's history has n entries and returns it.
	waitHistory := func(uid types.UID, n int) historyJSON {
		t.Helper()
		var h historyJSON
		eventually(t, 60*time.Second, func() error {
			code, body, err := d.Get(historyPath(uid))
			if err != nil || (code != http.StatusOK && code != http.StatusNotFound) {
				return stopError{Err: fmt.Errorf("GET %s: %d %s %v", historyPath(uid), code, body, err)}
			}
			h = historyJSON{}
			if code == http.StatusOK {
				if err := json.Unmarshal(body, &h); err != nil {
					return stopError{Err: fmt.Errorf("GET %s: %v: %s", historyPath(uid), err, body)}
				}
			}
			if len(h.Items) < n {
				return fmt.Errorf("history of %s has %d of %d entries: %v", uid, len(h.Items), n, h.events())
			}
			return nil
		})
		return h
	}
	patchOwner := func(name string, uid types.UID) {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q}]}}`, name, uid)
		if _, err := cms.Patch(ctx, "dep", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patching dep's owner to %s: %v", name, err)
		}
	}

	waitHistory(dep, 1)
	// A change that touches no ownership fact writes no history.
	if _, err := cms.Patch(ctx, "dep", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	patchOwner("owner-2", o2)
	waitHistory(dep, 2)
	patchOwner("owner-3", o3)
	waitHistory(dep, 3)
	if err := cms.Delete(ctx, "dep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h := waitHistory(dep, 4)

	want := []string{"created " + string(o1), "owners-changed " + string(o2), "owners-changed " + string(o3), "deleted " + string(o3)}
	if got := h.events(); !slices.Equal(got, want) {
		t.Fatalf("history of dep = %q, want %q", got, want)
	}
	for i := 1; i < len(h.Items); i++ {
		if h.Items[i].Time.Before(h.Items[i-1].Time) {
			t.Errorf("history of dep out of time order: %v before %v", h.Items[i].Time, h.Items[i-1].Time)
		}
	}
	if h.Target == nil || h.Target.Name != "dep" || h.Target.Namespace != ns || h.Target.Kind != "ConfigMap" || h.Target.UID != string(dep) {
		t.Errorf("history target %+v, want ConfigMap %s/dep", h.Target, ns)
	}

	t.Run("graph at", func(t *testing.T) {
		graphAt := func(uid types.UID, at time.Time) graphJSON {
			t.Helper()
			path := "/graph?uid=" + string(uid) + "&at=" + url.QueryEscape(at.Format(time.RFC3339Nano))
			var g graphJSON
			d.GetJSON(t, path, http.StatusOK, &g)
			return g
		}
		edges := func(g graphJSON) []string {
			var out []string
			for _, e := range g.Edges {
				out = append(out, e.Dependent+"->"+e.Owner)
			}
			return out
		}
		for _, tc := range []struct {
			name string
			uid  types.UID
			at   time.Time
			want []string
		}{
			{"dep when created", dep, h.Items[0].Time, []string{string(dep) + "->" + string(o1)}},
			{"dep after the first change", dep, h.Items[1].Time, []string{string(dep) + "->" + string(o2)}},
			{"dep just before the second change", dep, h.Items[2].Time.Add(-time.Microsecond), []string{string(dep) + "->" + string(o2)}},
			{"dep after the second change", dep, h.Items[2].Time, []string{string(dep) + "->" + string(o3)}},
			{"dep once gone", dep, h.Items[3].Time, nil},
			{"what owner-1 owned at first", o1, h.Items[0].Time, []string{string(dep) + "->" + string(o1)}},
			{"what owner-1 owned later", o1, h.Items[1].Time, nil},
			{"what owner-3 owned when dep went", o3, h.Items[3].Time.Add(-time.Microsecond), []string{string(dep) + "->" + string(o3)}},
		} {
			if got := edges(graphAt(tc.uid, tc.at)); !slices.Equal(got, tc.want) {
				t.Errorf("%s: edges %v, want %v", tc.name, got, tc.want)
			}
		}
		// The same graph in DOT, as /graph gives it.
		code, body, err := d.Get("/graph?format=dot&uid=" + string(dep) + "&at=" + url.QueryEscape(h.Items[0].Time.Format(time.RFC3339Nano)))
		if err != nil || code != http.StatusOK || !strings.Contains(string(body), fmt.Sprintf("%q -> %q;", dep, o1)) {
			t.Errorf("DOT graph at creation: %d %s %v", code, body, err)
		}
	})

	t.Run("audit", func(t *testing.T) {
		hist := waitHistory(orphan, 1)
		eventually(t, 60*time.Second, func() error {
			hist = waitHistory(orphan, 1)
			if len(hist.Audit) == 0 {
				return fmt.Errorf("no audit rows in the history of orphan yet")
			}
			return nil
		})
		if a := hist.Audit[0]; a.Target.UID != string(orphan) || a.Controller != "ownergc" || a.Action != "delete" || !a.DryRun {
			t.Errorf("audit row of orphan %+v, want ownergc's dry-run delete", a)
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			code int
			want string
		}{
			{"/graph?uid=" + string(dep) + "&at=yesterday", http.StatusBadRequest, `invalid at "yesterday"`},
			{"/graph?at=2026-01-02T15:04:05Z", http.StatusBadRequest, "at needs uid"},
			{"/graph?namespace=" + ns + "&uid=" + string(dep) + "&at=2026-01-02T15:04:05Z", http.StatusBadRequest, "at needs uid"},
			{"/graph?uid=" + string(uuid.NewUUID()) + "&at=2026-01-02T15:04:05Z", http.StatusNotFound, "history knows no such object"},
			{historyPath(dep) + "?limit=5", http.StatusBadRequest, `unknown query parameter "limit"`},
			{historyPath(uuid.NewUUID()), http.StatusNotFound, "neither history nor audit knows uid"},
		} {
			code, body, err := d.Get(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			var e struct{ Error string }
			if jerr := json.Unmarshal(body, &e); code != tc.code || jerr != nil || !strings.Contains(e.Error, tc.want) {
				t.Errorf("GET %s: %d %s, want %d with an error containing %q", tc.path, code, body, tc.code, tc.want)
			}
		}
	})
}

// TestHistoryOfObjectsGoneWhileStopped: objects deleted, or whose owner
// changed, while kubegcd was stopped get their rows from the relist at the
// next start, on the same database.
func TestHistoryOfObjectsGoneWhileStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "history-restart-"+string(uuid.NewUUID())[:8])
	cms := kube.CoreV1().ConfigMaps(ns)
	var uids []types.UID
	for _, name := range []string{"owner", "goes", "stays"} {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, cm.UID)
	}
	owner, goes, stays := uids[0], uids[1], uids[2]
	events := func(d *daemon, uid types.UID, n int) []string {
		t.Helper()
		var h historyJSON
		eventually(t, 60*time.Second, func() error {
			code, body, err := d.Get("/objects/" + string(uid) + "/history")
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("GET history of %s: %d %s %v", uid, code, body, err)
			}
			h = historyJSON{}
			if err := json.Unmarshal(body, &h); err != nil {
				return stopError{Err: err}
			}
			if len(h.Items) < n {
				return fmt.Errorf("history of %s: %v, want %d entries", uid, h.events(), n)
			}
			return nil
		})
		return h.events()
	}

	d := daemons.Start(t, "")
	events(d, goes, 1)
	events(d, stays, 1)
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited with %d", code)
	}
	if err := cms.Delete(ctx, "goes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":%q}]}}`, owner)
	if _, err := cms.Patch(ctx, "stays", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	d2 := daemons.Start(t, d.DBPath)
	if got, want := events(d2, goes, 2), []string{"created ", "deleted "}; !slices.Equal(got, want) {
		t.Errorf("history of the object deleted while stopped = %q, want %q", got, want)
	}
	if got, want := events(d2, stays, 2), []string{"created ", "owners-changed " + string(owner)}; !slices.Equal(got, want) {
		t.Errorf("history of the object changed while stopped = %q, want %q", got, want)
	}
}

// TestHistoryRetentionFlag: a retention that is neither 0 nor at least an
// hour is refused at start with one line and exit code 2.
func TestHistoryRetentionFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ value, want string }{
		{"30m", "kubegcd: invalid --history-retention 30m0s: must be 0 (forever) or at least 1h"},
		{"-1h", "kubegcd: invalid --history-retention -1h0m0s: must be 0 (forever) or at least 1h"},
		{"7d", `kubegcd: invalid --history-retention "7d": want a duration such as 90s, 5m or 168h, whose largest unit is h (see 'kubegcd help run')`},
	} {
		code, _, stderr := runBinary(t, 30*time.Second, "run", "--kubeconfig", cluster.Kubeconfig,
			"--db", t.TempDir()+"/k.db", "--history-retention="+tc.value)
		if code != 2 || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("--history-retention=%s: exit %d, stderr %q; want exit 2 and %q", tc.value, code, stderr, tc.want)
		}
	}
	code, stdout, _ := runBinary(t, 30*time.Second, "help", "run")
	if code != 0 || !strings.Contains(stdout, "\n      --history-retention duration") {
		t.Errorf("kubegcd help run (exit %d) does not list --history-retention:\n%s", code, stdout)
	}
}

// TestLeaseHolderHistory changes a Lease's holder after it ran out, then
// releases it: /leases lists the three holders and the two gaps, the
// second still open. The times are the Lease's own, written by the test.
func TestLeaseHolderHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "lease-history-"+string(uuid.NewUUID())[:8])
	leases := kube.CoordinationV1().Leases(ns)
	t0 := time.Now().UTC().Truncate(time.Second)
	at := func(s int) *metav1.MicroTime { return new(metav1.NewMicroTime(t0.Add(time.Duration(s) * time.Second))) }
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new("a"), LeaseDurationSeconds: new(int32(1)), AcquireTime: at(0), RenewTime: at(0)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	d := daemons.Start(t, "")
	path := "/leases?namespace=" + ns
	type leaseJSON struct {
		HolderChanges []struct {
			Holder string     `json:"holder"`
			Since  *time.Time `json:"since"`
		} `json:"holderChanges"`
		Gaps []struct {
			From time.Time  `json:"from"`
			To   *time.Time `json:"to"`
		} `json:"gaps"`
	}
	// waitLease polls until the Lease has n holder changes and returns it.
	waitLease := func(n int) leaseJSON {
		t.Helper()
		var out struct{ Items []leaseJSON }
		eventually(t, 60*time.Second, func() error {
			out.Items = nil
			code, body, err := d.Get(path)
			if err != nil || code != http.StatusOK {
				return stopError{Err: fmt.Errorf("GET %s: %d %s %v", path, code, body, err)}
			}
			if err := json.Unmarshal(body, &out); err != nil {
				return stopError{Err: fmt.Errorf("GET %s: %v: %s", path, err, body)}
			}
			if len(out.Items) != 1 || len(out.Items[0].HolderChanges) < n {
				return fmt.Errorf("GET %s: want one lease with %d holder changes: %s", path, n, body)
			}
			return nil
		})
		return out.Items[0]
	}
	waitLease(1)
	// Taken over by b at 5s, after a's lease ran out at 1s.
	l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = new("b"), at(5), at(5)
	if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLease(2)
	// Renewed in time: no change. Then released at 20s.
	l.Spec.RenewTime = at(6)
	if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity, l.Spec.RenewTime = nil, at(20)
	if _, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitLease(3)

	var holders []string
	for _, c := range got.HolderChanges {
		holders = append(holders, fmt.Sprintf("%q since %s", c.Holder, c.Since.Sub(t0)))
	}
	if want := []string{`"a" since 0s`, `"b" since 5s`, `"" since 20s`}; !slices.Equal(holders, want) {
		t.Errorf("holder changes %v, want %v", holders, want)
	}
	var gaps []string
	for _, g := range got.Gaps {
		to := "now"
		if g.To != nil {
			to = g.To.Sub(t0).String()
		}
		gaps = append(gaps, g.From.Sub(t0).String()+".."+to)
	}
	if want := []string{"1s..5s", "20s..now"}; !slices.Equal(gaps, want) {
		t.Errorf("gaps %v, want %v", gaps, want)
	}

	// The Lease's own history has the same changes, and nothing for the
	// renewal.
	var h struct {
		Items []struct {
			Event  string  `json:"event"`
			Holder *string `json:"holder"`
		} `json:"items"`
	}
	d.GetJSON(t, "/objects/"+string(l.UID)+"/history", http.StatusOK, &h)
	var events []string
	for _, it := range h.Items {
		holder := "<none>"
		if it.Holder != nil {
			holder = *it.Holder
		}
		events = append(events, it.Event+" "+holder)
	}
	if want := []string{"created a", "holder-changed b", "holder-changed "}; !slices.Equal(events, want) {
		t.Errorf("history of the Lease %q, want %q", events, want)
	}
}
