package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
)

type lintFinding struct {
	Rule     string `json:"rule"`
	Name     string `json:"name"`
	Severity string `json:"severity"`
	Target   struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		UID       string `json:"uid"`
	} `json:"target"`
	OwnerReference struct {
		UID string `json:"uid"`
	} `json:"ownerReference"`
	Message string `json:"message"`
}

type lintReply struct {
	Items     []lintFinding  `json:"items"`
	Counts    map[string]int `json:"counts"`
	CountsAt  time.Time      `json:"countsAt"`
	Truncated bool           `json:"truncated"`
}

// found lists a reply's findings as "rule target-name", sorted.
func (r lintReply) found() []string {
	out := []string{}
	for _, f := range r.Items {
		out = append(out, f.Rule+" "+f.Target.Name)
	}
	slices.Sort(out)
	return out
}

// TestLint makes each ownerReference lint rule's case on purpose, against
// the real API server, and checks that /lint finds exactly those, that a
// clean namespace gives nothing, that the filters work, and that
// kubegcd_ownerref_findings agrees. Not parallel: the metric counts the
// whole mirror, which must not change between the scrape and /lint.
// Dry-run (the default), so ownergc collects none of the cases. With the
// default flags, the counts of a mirror this small are made for each
// request: they agree with the findings in the same answer.
func TestLint(t *testing.T) {
	ctx := context.Background()
	id := string(uuid.NewUUID())[:8]
	ns := namespaces.New(t, "lint-"+id)
	other := namespaces.New(t, "lint-other-"+id)
	clean := namespaces.New(t, "lint-clean-"+id)
	create := func(ns, name string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
		t.Helper()
		cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s/%s: %v", ns, name, err)
		}
		return cm
	}
	ref := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid}
	}
	controllerRef := func(name string, uid types.UID) metav1.OwnerReference {
		r := ref(name, uid)
		r.Controller, r.BlockOwnerDeletion = ptr.To(true), ptr.To(true)
		return r
	}

	// KG-LINT-01: an owner UID that does not exist.
	create(ns, "dangling", ref("gone", uuid.NewUUID()))
	// KG-LINT-02: the owner deleted and re-created under its name.
	first := create(ns, "owner-re")
	create(ns, "recreated", controllerRef("owner-re", first.UID))
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "owner-re", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second := create(ns, "owner-re")
	// KG-LINT-03: an owner in another namespace.
	foreign := create(other, "foreign")
	create(ns, "cross", ref("foreign", foreign.UID))
	// KG-LINT-04: a cluster-scoped object naming a namespaced kind.
	crName := "lint-" + id
	cr, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: crName,
		OwnerReferences: []metav1.OwnerReference{ref("some-configmap", uuid.NewUUID())}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(context.Background(), crName, metav1.DeleteOptions{}) })
	// KG-LINT-05: a kind nothing serves.
	create(ns, "unserved", metav1.OwnerReference{APIVersion: "gone.e2e.kubegcd.io/v1", Kind: "Vanished", Name: "v", UID: uuid.NewUUID()})
	// KG-LINT-06 cannot be made here: the API server refuses a second
	// controller reference (the rule is for objects written past that
	// check; its unit tests cover it).
	live := create(ns, "live-owner")
	_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two",
		OwnerReferences: []metav1.OwnerReference{controllerRef("live-owner", live.UID), controllerRef("owner-re", second.UID)}}},
		metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("creating an object with two controller references: %v, want Invalid", err)
	}
	// KG-LINT-07: blockOwnerDeletion on a live owner, not the controller
	// reference; beside it a controller reference that is fine.
	blocking := ref("live-owner", live.UID)
	blocking.BlockOwnerDeletion = ptr.To(true)
	create(ns, "blocked", blocking)
	create(ns, "ok", controllerRef("live-owner", live.UID))
	// A clean namespace: an owner and its dependent as controllers make them.
	cleanOwner := create(clean, "owner")
	create(clean, "dependent", controllerRef("owner", cleanOwner.UID))

	started := time.Now()
	// A count older than --lint-counts-max-age is answered while a recount
	// runs. The first count may be from before the mirror synced, so a
	// short maximum age lets the counts catch up with the findings.
	d := daemons.Start(t, "", "--lint-counts-max-age=1s")
	d.WaitReady(t, 60*time.Second)
	nsQuery := "/lint?namespace=" + url.QueryEscape(ns)
	want := []string{"KG-LINT-01 dangling", "KG-LINT-02 recreated", "KG-LINT-03 cross", "KG-LINT-05 unserved", "KG-LINT-07 blocked"}
	wantCounts := map[string]int{"KG-LINT-01": 1, "KG-LINT-02": 1, "KG-LINT-03": 1, "KG-LINT-04": 0, "KG-LINT-05": 1,
		"KG-LINT-06": 0, "KG-LINT-07": 1}
	var got lintReply
	eventually(t, 30*time.Second, func() error {
		got = lintReply{}
		code, body, err := d.Get(nsQuery)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s %v", nsQuery, code, body, err)
		}
		if err := json.Unmarshal(body, &got); err != nil {
			return stopError{Err: fmt.Errorf("GET %s: %v: %s", nsQuery, err, body)}
		}
		if f := got.found(); !slices.Equal(f, want) {
			return fmt.Errorf("findings %v, want %v", f, want)
		}
		// Counted since the mirror synced, they agree with the findings.
		if fmt.Sprint(got.Counts) != fmt.Sprint(wantCounts) {
			return fmt.Errorf("counts %v at %s beside the findings %v, want %v", got.Counts, got.CountsAt, want, wantCounts)
		}
		return nil
	})
	if got.CountsAt.Before(started.Truncate(time.Second)) || got.CountsAt.After(time.Now()) {
		t.Errorf("countsAt %s, want a time since the daemon started (%s)", got.CountsAt, started)
	}

	// The metric shows /lint's count of the whole mirror, which nothing
	// changes until /lint has read it too: recounted in between or not,
	// the two agree.
	metric := scrapeFindings(t, d)
	var all lintReply
	d.GetJSON(t, "/lint?limit=1", http.StatusOK, &all)

	t.Run("namespace", func(t *testing.T) {
		if fmt.Sprint(got.Counts) != fmt.Sprint(wantCounts) || got.Truncated {
			t.Errorf("counts %v (truncated %v), want %v", got.Counts, got.Truncated, wantCounts)
		}
		for _, f := range got.Items {
			if f.Target.Namespace != ns || f.Target.UID == "" || f.OwnerReference.UID == "" || f.Message == "" || f.Name == "" {
				t.Errorf("finding %+v: target, reference, name or message missing", f)
			}
			switch f.Rule {
			case "KG-LINT-01":
				if !strings.Contains(f.Message, "Dangling for at most") || f.Severity != "warning" {
					t.Errorf("dangling: %+v", f)
				}
			case "KG-LINT-02":
				if !strings.Contains(f.Message, string(second.UID)) || f.OwnerReference.UID != string(first.UID) {
					t.Errorf("re-created owner: %+v, want the new uid %s named", f, second.UID)
				}
			case "KG-LINT-03":
				if !strings.Contains(f.Message, other) {
					t.Errorf("cross-namespace: %+v, want namespace %s named", f, other)
				}
			case "KG-LINT-07":
				if f.Severity != "info" {
					t.Errorf("blockOwnerDeletion: %+v", f)
				}
			}
		}
	})
	t.Run("clean namespace", func(t *testing.T) {
		var r lintReply
		d.GetJSON(t, "/lint?namespace="+url.QueryEscape(clean), http.StatusOK, &r)
		if len(r.Items) != 0 || r.Items == nil {
			t.Errorf("findings %v, want []", r.found())
		}
		for rule, n := range r.Counts {
			if n != 0 {
				t.Errorf("count of %s = %d, want 0", rule, n)
			}
		}
		if len(r.Counts) != 7 {
			t.Errorf("counts %v, want all 7 rules", r.Counts)
		}
	})
	t.Run("cluster-scoped", func(t *testing.T) {
		for _, rule := range []string{"KG-LINT-04", "cluster-scoped-dependent-namespaced-owner"} {
			var r lintReply
			d.GetJSON(t, "/lint?limit=100000&rule="+rule, http.StatusOK, &r)
			n := 0
			for _, f := range r.Items {
				if f.Rule != "KG-LINT-04" {
					t.Errorf("?rule=%s gave %+v", rule, f)
				}
				if f.Target.UID == string(cr.UID) {
					n++
					if f.Target.Namespace != "" || f.Severity != "error" || !strings.Contains(f.Message, "OwnerRefInvalidNamespace") {
						t.Errorf("cluster-scoped dependent: %+v", f)
					}
				}
			}
			if n != 1 {
				t.Errorf("?rule=%s: ClusterRole %s found %d times, want once", rule, crName, n)
			}
		}
	})
	t.Run("filters", func(t *testing.T) {
		for query, want := range map[string][]string{
			"&severity=info":              {"KG-LINT-07 blocked"},
			"&severity=warning":           {"KG-LINT-01 dangling"},
			"&severity=error":             {"KG-LINT-02 recreated", "KG-LINT-03 cross", "KG-LINT-05 unserved"},
			"&rule=KG-LINT-02":            {"KG-LINT-02 recreated"},
			"&rule=owner-kind-not-served": {"KG-LINT-05 unserved"},
			"&rule=KG-LINT-06":            {},
		} {
			var r lintReply
			d.GetJSON(t, nsQuery+query, http.StatusOK, &r)
			if f := r.found(); !slices.Equal(f, want) {
				t.Errorf("%s: findings %v, want %v", query, f, want)
			}
			if fmt.Sprint(r.Counts) != fmt.Sprint(got.Counts) {
				t.Errorf("%s: counts %v, want the namespace's %v whatever the filter", query, r.Counts, got.Counts)
			}
		}
		var r lintReply
		d.GetJSON(t, nsQuery+"&limit=2", http.StatusOK, &r)
		if len(r.Items) != 2 || !r.Truncated || fmt.Sprint(r.Counts) != fmt.Sprint(got.Counts) {
			t.Errorf("limit=2: %d items, truncated %v, counts %v", len(r.Items), r.Truncated, r.Counts)
		}
		for query, want := range map[string]string{
			"&rule=KG-LINT-99":  "KG-LINT-01 (dangling-owner)",
			"&severity=fatal":   "want error, warning or info",
			"&limit=-1":         "invalid limit",
			"&namespaces=other": "unknown query parameter",
		} {
			var e struct {
				Error string `json:"error"`
			}
			d.GetJSON(t, nsQuery+query, http.StatusBadRequest, &e)
			if !strings.Contains(e.Error, want) {
				t.Errorf("%s: error %q, want it to say %q", query, e.Error, want)
			}
		}
	})
	t.Run("metric", func(t *testing.T) {
		if fmt.Sprint(metric) != fmt.Sprint(all.Counts) {
			t.Errorf("kubegcd_ownerref_findings %v, want /lint's counts %v", metric, all.Counts)
		}
		for rule, n := range got.Counts {
			if metric[rule] < n {
				t.Errorf("kubegcd_ownerref_findings{rule=%q} = %d, below this namespace's %d", rule, metric[rule], n)
			}
		}
		if metric["KG-LINT-04"] < 1 {
			t.Errorf("kubegcd_ownerref_findings{rule=\"KG-LINT-04\"} = %d, want the ClusterRole counted", metric["KG-LINT-04"])
		}
	})
}

// scrapeFindings reads every kubegcd_ownerref_findings series from one
// scrape.
func scrapeFindings(t *testing.T, d *daemon) map[string]int {
	t.Helper()
	code, body, err := d.Get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, `kubegcd_ownerref_findings{rule="`)
		if !ok {
			continue
		}
		rule, value, ok := strings.Cut(rest, `"} `)
		n, err := strconv.Atoi(value)
		if !ok || err != nil {
			t.Fatalf("/metrics: %q", line)
		}
		out[rule] = n
	}
	if len(out) != 7 {
		t.Fatalf("/metrics has %d kubegcd_ownerref_findings series, want 7: %v", len(out), out)
	}
	return out
}
