package e2eui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// The Leases page under coordinated leader election: a Lease's strategy,
// preferred holder and candidates, opened from its row; the findings
// above the table; the candidates whose Lease does not exist below it.
func TestLeasesPageCoordinated(t *testing.T) {
	ns := namespaces.New(t, "ui-leases")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	micro := func(d time.Duration) *metav1.MicroTime {
		return new(metav1.NewMicroTime(now.Add(-d).Truncate(time.Microsecond)))
	}
	strategy := coordinationv1.OldestEmulationVersion
	// kcm: held by kcm-a while the election prefers kcm-b, after 3
	// transitions. sched: its one candidate expired; its holder does not
	// count transitions.
	for _, l := range []coordinationv1.LeaseSpec{
		{HolderIdentity: new("kcm-a"), PreferredHolder: new("kcm-b"), Strategy: &strategy, LeaseDurationSeconds: new(int32(1)), RenewTime: micro(0),
			LeaseTransitions: new(int32(3))},
		{HolderIdentity: new("sched-a"), Strategy: &strategy, LeaseDurationSeconds: new(int32(15)), RenewTime: micro(0)},
	} {
		name := strings.TrimSuffix(*l.HolderIdentity, "-a")
		if _, err := kube.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: l},
			metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Lease %s: %v", name, err)
		}
	}
	// Pinged after its last renewal, a minute ago or more, no candidate
	// answers the election's ping in time: the API server's election
	// changes no Lease and creates none.
	type spec struct {
		name, lease string
		renewed     time.Duration
	}
	create := func(c spec) error {
		_, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Create(ctx, &coordinationv1beta1.LeaseCandidate{
			ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: c.lease, BinaryVersion: "1.36.0", EmulationVersion: "1.35.0",
				Strategy: strategy, RenewTime: micro(c.renewed), PingTime: micro(c.renewed - 30*time.Second)},
		}, metav1.CreateOptions{})
		return err
	}
	expired := []spec{{"kcm-a", "kcm", 40 * time.Minute}, {"sched-a", "sched", 31 * time.Minute}}
	for _, c := range append([]spec{{"kcm-b", "kcm", time.Minute}, {"x", "gone", time.Minute}}, expired...) {
		if err := create(c); err != nil {
			t.Fatalf("creating LeaseCandidate %s: %v", c.name, err)
		}
	}
	// kube-apiserver's LeaseCandidate collector makes its first pass soon
	// after kube-apiserver starts: an expired candidate it deletes is
	// written again.
	keepExpired := func() error {
		for _, c := range expired {
			_, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Get(ctx, c.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				t.Logf("kube-apiserver's collector deleted %s: writing it again", c.name)
				err = create(c)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	d := daemons.Start(t, "")
	want := []string{"candidate-without-lease gone/x", "candidate-expired kcm/kcm-a", "holder-not-preferred kcm/",
		"candidate-expired sched/sched-a", "no-live-candidate sched/"}
	// Two renew periods (2s) after kubegcd saw kcm's preferred holder, the
	// holder-not-preferred finding comes.
	e2eutil.Eventually(t, 30*time.Second, func() error {
		if err := keepExpired(); err != nil {
			return err
		}
		var out api.LeaseList
		d.GetJSON(t, "/leases?namespace="+ns, 200, &out)
		var got []string
		for _, f := range out.Findings {
			got = append(got, string(f.Kind)+" "+f.Lease+"/"+f.Candidate)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("findings %q, want %q", got, want)
		}
		return nil
	})

	p := openPage(t, d)
	p.goTo("/leases?namespace=" + ns)
	if n := p.count("#findings li[data-kind]"); n != len(want) {
		t.Errorf("findings shown: %d, want %d", n, len(want))
	}
	if f := p.text("#findings"); !strings.Contains(f, "kcm-a holds the Lease, but the election prefers kcm-b") {
		t.Errorf("findings say %q, want the holder-not-preferred message", f)
	}
	var rows []string
	p.eval(`[...document.querySelectorAll('#rows tbody tr')].map((tr) => tr.textContent)`, &rows)
	if len(rows) != 2 {
		t.Fatalf("rows %q, want the Leases kcm and sched", rows)
	}
	var kcm string
	for _, r := range rows {
		if strings.HasPrefix(r, "Lease kcm") || strings.Contains(r, "kcm-b") {
			kcm = r
		}
	}
	for _, s := range []string{"kcm-a", "kcm-b", "not the holder", "OldestEmulationVersion", "2 candidates, 1 live", "holder-not-preferred"} {
		if !strings.Contains(kcm, s) {
			t.Errorf("kcm's row %q does not say %q", kcm, s)
		}
	}
	// The transitions column: kcm's count; sched's spec has none, which
	// the cell says rather than stay blank.
	type cell struct{ Text, Title string }
	var transitions map[string]cell
	p.eval(`Object.fromEntries([...document.querySelectorAll('#rows tbody tr')].map((tr) => {
		const td = tr.querySelector('td[data-label="transitions"]');
		return [tr.querySelector('td[data-label="lease"]').textContent.split('/').pop(), { text: td.textContent, title: (td.querySelector('[title]') || td).title }];
	}))`, &transitions)
	if c := transitions["kcm"]; c.Text != "3" {
		t.Errorf("kcm's transitions cell %+v, want 3", c)
	}
	if c := transitions["sched"]; c.Text != "—" || !strings.Contains(c.Title, "leaseTransitions") {
		t.Errorf("sched's transitions cell %+v, want — titled with why: its spec has no leaseTransitions", c)
	}
	// The candidates open from the row: each with its versions and state.
	if n := p.count("#rows details.candidates[open]"); n != 0 {
		t.Errorf("%d candidate lists open before a click, want none", n)
	}
	p.run(chromedpClick("#rows details.candidates summary"))
	p.waitJS(`!!document.querySelector('#rows details.candidates[open] li[data-candidate]')`)
	var candidates []string
	p.eval(`[...document.querySelectorAll('#rows details.candidates[open] li[data-candidate]')].map((li) => li.textContent)`, &candidates)
	if len(candidates) == 0 || !strings.Contains(strings.Join(candidates, "|"), "1.36.0, emulates 1.35.0") {
		t.Errorf("candidates shown %q, want them with their versions", candidates)
	}
	// Open every list for the screenshot.
	p.eval(`document.querySelectorAll('#rows details.candidates').forEach((d) => { d.open = true; }); true`, nil)
	if got := p.text("#candidates-without-lease tbody"); !strings.Contains(got, ns+"/x") || !strings.Contains(got, "gone") {
		t.Errorf("candidates without a Lease: %q, want %s/x naming gone", got, ns)
	}
	p.shot("leases-coordinated")
	p.phone()
	p.goTo("/leases?namespace=" + ns)
	var overflow int
	p.eval(`document.documentElement.scrollWidth - window.innerWidth`, &overflow)
	if overflow > 0 {
		t.Errorf("leases on a phone: the page is %d px wider than the screen", overflow)
	}
	p.shot("phone-leases-coordinated")
	p.desktop()
}

// wideLease creates a Lease whose row is as wide as the Leases table gets:
// a name like kube-apiserver's identity Leases, long identities, a
// strategy, a preferred holder that is not the holder, and a live
// candidate. It waits until kubegcd lists the Lease with its candidate.
func wideLease(t *testing.T, d *e2eutil.Daemon, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	micro := func(d time.Duration) *metav1.MicroTime {
		return new(metav1.NewMicroTime(now.Add(-d).Truncate(time.Microsecond)))
	}
	const (
		name      = "apiserver-abcdefghijklmnopqrstuvwxyz1234567"
		candidate = "candidate-zyxwvutsrqponmlkjihgfedcba7654321"
	)
	strategy := coordinationv1.OldestEmulationVersion
	if _, err := kube.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: new(name + "_0123abcd-4567-89ef-0123-456789abcdef"), PreferredHolder: new(candidate),
			Strategy: &strategy, LeaseDurationSeconds: new(int32(3600)), RenewTime: micro(0)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Lease %s: %v", name, err)
	}
	// Pinged after its renewal a minute ago, the candidate does not answer:
	// the API server's election leaves the Lease as it is.
	if _, err := kube.CoordinationV1beta1().LeaseCandidates(ns).Create(ctx, &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: candidate},
		Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: name, BinaryVersion: "1.36.0", EmulationVersion: "1.35.0",
			Strategy: strategy, RenewTime: micro(time.Minute), PingTime: micro(30 * time.Second)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating LeaseCandidate %s: %v", candidate, err)
	}
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var out api.LeaseList
		d.GetJSON(t, "/leases?namespace="+ns, 200, &out)
		if len(out.Items) != 1 || out.Items[0].Name != name || len(out.Items[0].Candidates) != 1 {
			return fmt.Errorf("leases of %s: %+v, want %s with its candidate", ns, out.Items, name)
		}
		return nil
	})
}
