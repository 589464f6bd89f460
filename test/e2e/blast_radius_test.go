package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// waitCapPaused waits until the blast-radius cap (limit writes a minute)
// holds back every decision of ns still to carry out (left, at least
// one): the daemon decided, and the cap refused the writes. Every write
// counts, wherever it goes, so the cap is checked on all the daemon's
// rows (an earlier test may have left garbage elsewhere).
func waitCapPaused(t *testing.T, d *daemon, ns string, limit int, left func() int) enforcement {
	t.Helper()
	var st enforcement
	eventually(t, 30*time.Second, func() error {
		st = enforcementOf(t, d)
		if !st.Paused || !strings.Contains(st.PausedReason, "--max-deletions-per-minute=") {
			return fmt.Errorf("not paused by the cap, %d of the namespace's decisions left to carry out: %+v", left(), st)
		}
		if n := len(appliedRows(t, d, "")); n != limit {
			return fmt.Errorf("%d writes recorded, want the cap, %d", n, limit)
		}
		var p pendingPage
		d.GetJSON(t, "/pending?namespace="+ns, http.StatusOK, &p)
		held := 0
		for _, it := range p.Items {
			if strings.HasPrefix(it.Reason, "paused by the blast-radius cap") {
				held++
			}
		}
		if n := left(); held != n || n == 0 {
			return fmt.Errorf("%d decisions held back by the cap, %d left to carry out", held, n)
		}
		return nil
	})
	return st
}

// A restart within the minute keeps the count: the window comes back from
// the audit history, so the next write waits for the minute to pass.
func TestBlastRadiusCountSurvivesRestart(t *testing.T) {
	ns := namespaces.New(t, "cap-restart")
	leaveNoGarbage(t, ns)
	args := enforcing("--max-deletions-per-minute=5")
	d := daemons.Start(t, "", args...)
	d.WaitReady(t, 60*time.Second)
	uids := garbage(t, ns, 6)
	left := func() int { return remaining(t, ns, uids) }
	waitCapPaused(t, d, ns, 5, left)
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited with %d", code)
	}

	d = daemons.Start(t, d.DBPath, args...)
	d.WaitReady(t, 60*time.Second)
	if st := waitCapPaused(t, d, ns, 5, left); st.WritesLastMinute != 5 {
		t.Errorf("after the restart: %d writes in the last minute, want 5", st.WritesLastMinute)
	}
	eventually(t, 100*time.Second, func() error { return oneRowPerWrite(t, d, ns, uids) })
	rows := appliedRows(t, d, "")
	if gap := rows[5].Time.Sub(rows[0].Time); gap < time.Minute {
		t.Fatalf("the sixth write came %s after the first, within the minute: the restart reset the cap", gap)
	}
}

// Patches count against the cap, as deletes do.
func TestBlastRadiusCountsPatches(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "cap-patches")
	cms := kube.CoreV1().ConfigMaps(ns)
	leaveNoGarbage(t, ns)
	d := daemons.Start(t, "", enforcing("--max-deletions-per-minute=3")...)
	d.WaitReady(t, 60*time.Second)
	keep, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Each keeps its owner and loses a dangling reference: a patch.
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("dep-%d", i),
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: keep.Name, UID: keep.UID},
				{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))},
			},
		}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	unpatched := func() int {
		list, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "dep-") && len(cm.OwnerReferences) == 2 {
				n++
			}
		}
		return n
	}
	waitCapPaused(t, d, ns, 3, unpatched)
	patches := appliedRows(t, d, ns)
	for _, e := range patches {
		if e.Action != "remove-owner-refs" {
			t.Errorf("unexpected write %+v", e)
		}
	}
	if len(patches) == 0 || len(patches) != 5-unpatched() {
		t.Fatalf("%d patches recorded, %d of 5 objects patched: want at least one, and the same", len(patches), 5-unpatched())
	}
}

// With --blast-radius-resume=manual the cap holds past the minute and
// across a restart, until `kubegcd release`, which the audit history
// records.
func TestBlastRadiusManualResume(t *testing.T) {
	ns := namespaces.New(t, "cap-manual")
	leaveNoGarbage(t, ns)
	args := enforcing("--max-deletions-per-minute=2", "--blast-radius-resume=manual")
	d := daemons.Start(t, "", args...)
	d.WaitReady(t, 60*time.Second)
	uids := garbage(t, ns, 4)
	left := func() int { return remaining(t, ns, uids) }
	st := waitCapPaused(t, d, ns, 2, left)
	if st.BlastRadiusResume != "manual" || len(st.PausedBy) != 1 || st.PausedBy[0] != "blast-radius" ||
		!strings.Contains(st.PausedReason, "kubegcd release") {
		t.Errorf("status while held: %+v", st)
	}
	rows := appliedRows(t, d, "")
	held := left()
	// Past the minute, and the retries after it (every 5 s), nothing more.
	eventually(t, 90*time.Second, func() error {
		if wait := time.Until(rows[1].Time.Add(time.Minute + 10*time.Second)); wait > 0 {
			return fmt.Errorf("the minute and its retries are not over: %s to go", wait.Round(time.Second))
		}
		return nil
	})
	if n := left(); n != held || !enforcementOf(t, d).Paused {
		t.Fatalf("past the minute: %d of 4 left (%d before) and paused=%v, want them held", n, held, enforcementOf(t, d).Paused)
	}
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited with %d", code)
	}

	d = daemons.Start(t, d.DBPath, args...)
	d.WaitReady(t, 60*time.Second)
	waitCapPaused(t, d, ns, 2, left)
	consistently(t, 6*time.Second, func() error {
		if n := left(); n != held {
			return fmt.Errorf("%d of 4 left after the restart, want the %d held", n, held)
		}
		return nil
	})

	code, stdout, stderr := runBinary(t, 30*time.Second, "release", "--server", d.ClientURL(), "--reason", "e2e: checked the garbage")
	if code != 0 || strings.TrimSpace(stdout) != "enforcement released" {
		t.Fatalf("kubegcd release: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	eventually(t, 30*time.Second, func() error { return oneRowPerWrite(t, d, ns, uids) })
	var page auditPage
	d.GetJSON(t, "/audit?controller=operator", http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].Action != "release" || page.Items[0].Reason != "e2e: checked the garbage" {
		t.Fatalf("release in /audit: %+v", page.Items)
	}
	var facts struct{ By string }
	if err := json.Unmarshal(page.Items[0].Facts, &facts); err != nil || !strings.Contains(facts.By, "127.0.0.1") {
		t.Errorf("release facts %s: who released is not recorded", page.Items[0].Facts)
	}
	d.GetJSON(t, "/audit?controller=kubegcd", http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].Action != "pause" {
		t.Errorf("hold in /audit: %+v", page.Items)
	}
	if !strings.Contains(d.Logs.String(), "enforcement released by an operator") {
		t.Error("the release was not logged")
	}
	// Nothing is held any more: a second release is refused.
	code, _, stderr = runBinary(t, 30*time.Second, "release", "--server", d.ClientURL())
	if code != 1 || !strings.Contains(stderr, "409 Conflict: enforcement is not held") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("second release: exit %d, stderr %q", code, stderr)
	}
}
