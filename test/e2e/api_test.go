package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
)

type pendingPage struct {
	Items []api.Pending `json:"items"`
	Next  string        `json:"next"`
}

type auditPage struct {
	Items []api.AuditEntry `json:"items"`
	Next  string           `json:"next"`
}

// TestPendingAndAuditAPI runs in dry-run, so it may run beside others.
func TestPendingAndAuditAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "api-history")
	// Dry-run on the shared cluster, this daemon also decides on the other
	// tests' garbage, each decision after a live read: a QPS that does not
	// queue this test's objects behind theirs.
	d := daemons.Start(t, "", "--resync-period=1s", "--kube-api-qps=200", "--kube-api-burst=400")
	d.WaitReady(t, 60*time.Second)

	const n = 5
	var uids []types.UID
	for i := range n {
		cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("garbage-%d", i),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "never",
				UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids = append(uids, cm.UID)
	}

	var pending pendingPage
	eventually(t, 60*time.Second, func() error {
		d.GetJSON(t, "/pending?controller=ownergc&namespace="+ns, http.StatusOK, &pending)
		if len(pending.Items) != n {
			return fmt.Errorf("%d pending, want %d", len(pending.Items), n)
		}
		return nil
	})
	for _, p := range pending.Items {
		if p.Controller != "ownergc" || p.Rule != "BR-21-01" || p.Action != "delete" || p.Reason == "" || p.Since.IsZero() ||
			p.Target.Namespace != ns || p.Target.Kind != "ConfigMap" || p.Target.APIVersion != "v1" || p.Target.UID == "" {
			t.Errorf("pending item %+v", p)
		}
	}
	d.GetJSON(t, "/pending?namespace="+ns+"&kind=Secret", http.StatusOK, &pending)
	if len(pending.Items) != 0 {
		t.Errorf("kind filter kept %d items", len(pending.Items))
	}
	d.GetJSON(t, "/pending?namespace="+ns+"&limit=2", http.StatusOK, &pending)
	if len(pending.Items) != 2 || pending.Next == "" {
		t.Errorf("limit=2 gave %d items, next %q", len(pending.Items), pending.Next)
	}
	d.GetJSON(t, "/pending?namespace="+ns+"&kind=configmaps", http.StatusOK, &pending)
	if len(pending.Items) != n {
		t.Errorf("kind=configmaps gave %d items, want %d", len(pending.Items), n)
	}
	// Paged two at a time by the cursor, either way: each decision once, in
	// since order.
	for _, order := range []string{"", "oldest", "newest"} {
		var seen []api.Pending
		cursor := ""
		for page := 0; ; page++ {
			var p pendingPage
			d.GetJSON(t, "/pending?limit=2&namespace="+ns+"&order="+order+"&cursor="+url.QueryEscape(cursor), http.StatusOK, &p)
			seen = append(seen, p.Items...)
			if p.Next == "" || page > n {
				break
			}
			cursor = p.Next
		}
		uids := map[string]bool{}
		for i, p := range seen {
			uids[p.Target.UID] = true
			if i > 0 && (order == "newest" && p.Since.After(seen[i-1].Since) || order != "newest" && p.Since.Before(seen[i-1].Since)) {
				t.Errorf("order %q: since %s after %s", order, p.Since, seen[i-1].Since)
			}
		}
		if len(seen) != n || len(uids) != n {
			t.Errorf("order %q: paged through %d decisions (%d distinct), want %d", order, len(seen), len(uids), n)
		}
	}

	// The audit history, paged two at a time, newest first.
	var seen []api.AuditEntry
	cursor := ""
	for page := 0; ; page++ {
		var p auditPage
		q := "/audit?limit=2&namespace=" + ns
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		d.GetJSON(t, q, http.StatusOK, &p)
		seen = append(seen, p.Items...)
		if p.Next == "" {
			break
		}
		if page > n {
			t.Fatal("paging does not end")
		}
		cursor = p.Next
	}
	if len(seen) != n {
		t.Fatalf("paged through %d audit rows, want %d", len(seen), n)
	}
	for i, e := range seen {
		if i > 0 && e.ID >= seen[i-1].ID {
			t.Errorf("audit not newest first: %d after %d", e.ID, seen[i-1].ID)
		}
		if !e.DryRun || e.Outcome != "dry-run" || e.Controller != "ownergc" || e.Instance == "" || e.Time.IsZero() {
			t.Errorf("audit row %+v", e)
		}
	}
	var one auditPage
	d.GetJSON(t, "/audit?uid="+string(uids[0]), http.StatusOK, &one)
	if len(one.Items) != 1 || one.Items[0].Target.UID != string(uids[0]) || !strings.Contains(string(one.Items[0].Facts), `"dangling"`) {
		t.Errorf("audit by uid: %+v", one.Items)
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	d.GetJSON(t, "/audit?namespace="+ns+"&since="+future, http.StatusOK, &one)
	if len(one.Items) != 0 {
		t.Errorf("since in the future gave %d rows", len(one.Items))
	}
	d.GetJSON(t, "/audit?namespace="+ns+"&until="+future+"&outcome=dry-run&controller=ownergc", http.StatusOK, &one)
	if len(one.Items) != n {
		t.Errorf("until/outcome/controller filters gave %d rows, want %d", len(one.Items), n)
	}

	// Kind in any case or by its plural, and rule in any case.
	for _, q := range []string{"kind=configmaps", "kind=configmap&rule=br-21-01", "rule=BR-21-01"} {
		d.GetJSON(t, "/audit?namespace="+ns+"&"+q, http.StatusOK, &one)
		if len(one.Items) != n {
			t.Errorf("%s gave %d rows, want %d", q, len(one.Items), n)
		}
	}
	for _, q := range []string{"kind=secrets", "rule=BR-21-03"} {
		d.GetJSON(t, "/audit?namespace="+ns+"&"+q, http.StatusOK, &one)
		if len(one.Items) != 0 {
			t.Errorf("%s gave %d rows, want none", q, len(one.Items))
		}
	}

	for _, bad := range []string{
		"/pending?controller=nope", "/pending?limit=0", "/pending?limit=x", "/pending?colour=blue",
		"/audit?outcome=maybe", "/audit?since=yesterday", "/audit?cursor=-3", "/audit?limit=100000",
		"/audit?since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z", "/audit?uid=a&uid=b",
		"/audit?kind=config%20map", "/audit?rule=BR-21-01%3B", "/audit?rule=a&rule=b",
		"/pending?order=random", "/pending?cursor=nope", "/pending?kind=a%2Fb",
	} {
		var e struct{ Error string }
		d.GetJSON(t, bad, http.StatusBadRequest, &e)
		if e.Error == "" {
			t.Errorf("%s: 400 without an error message", bad)
		}
	}
	// Dry-run: nothing was deleted.
	for _, uid := range uids {
		if _, err := d.DB(t).Objects().GetObject(ctx, string(uid)); err != nil {
			t.Errorf("dry-run garbage %s left the mirror: %v", uid, err)
		}
	}
}

// TestBlastRadiusCapPausesEnforcement enforces, so it runs alone (no
// t.Parallel).
func TestBlastRadiusCapPausesEnforcement(t *testing.T) {
	s := newScenario(t, "blast-radius", false, "--max-deletions-per-minute=2")
	leaveNoGarbage(t, s.ns)
	owner := s.cm("owner")
	var deps []obj
	for i := range 5 {
		deps = append(deps, s.cm(fmt.Sprintf("dep-%d", i), owner.ref(false)))
	}
	s.delete(owner, metav1.DeletePropagationBackground)

	var st struct {
		Enforcement struct {
			DryRun       bool
			Paused       bool
			PausedReason string
		}
	}
	eventually(t, gcTimeout, func() error {
		s.d.GetJSON(t, "/status", http.StatusOK, &st)
		if !st.Enforcement.Paused {
			return fmt.Errorf("not paused: %+v", st.Enforcement)
		}
		return nil
	})
	if st.Enforcement.DryRun || !strings.Contains(st.Enforcement.PausedReason, "--max-deletions-per-minute=2") {
		t.Errorf("enforcement status %+v", st.Enforcement)
	}
	var p pendingPage
	eventually(t, gcTimeout, func() error {
		s.d.GetJSON(t, "/pending?namespace="+s.ns, http.StatusOK, &p)
		if len(p.Items) != 3 {
			return fmt.Errorf("%d pending, want 3 held back", len(p.Items))
		}
		return nil
	})
	for _, it := range p.Items {
		if !strings.HasPrefix(it.Reason, "paused by the blast-radius cap") {
			t.Errorf("held-back item without the pause reason: %+v", it)
		}
	}
	left := 0
	for _, dep := range deps {
		if s.get(dep) != nil {
			left++
		}
	}
	if left != 3 {
		t.Fatalf("%d of 5 dependents left, want 3 (the cap is 2 a minute)", left)
	}
	if !strings.Contains(s.d.Logs.String(), "enforcement paused") {
		t.Error("the pause was not logged")
	}
}
