package http

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

type lintJSON struct {
	Items     []api.LintFinding `json:"items"`
	Counts    map[string]int    `json:"counts"`
	CountsAt  time.Time         `json:"countsAt"`
	Truncated bool              `json:"truncated"`
}

func TestLintEndpoint(t *testing.T) {
	before := time.Now()
	srv, _ := testServer(t)
	// testServer's namespace a has one finding: G names a Deployment that
	// was never mirrored.
	var out lintJSON
	getJSON(t, srv, "/lint?namespace=a", 200, &out)
	if out.CountsAt.Before(before.Truncate(time.Second)) || out.CountsAt.After(time.Now()) {
		t.Errorf("countsAt %s, want the time of the count the first request made", out.CountsAt)
	}
	if len(out.Items) != 1 || out.Items[0].Rule != "KG-LINT-01" || out.Items[0].Target.UID != "uid-G" ||
		out.Items[0].OwnerReference.UID != "uid-ghost" || out.Items[0].Severity != "warning" || out.Truncated {
		t.Errorf("/lint?namespace=a = %+v", out)
	}
	if len(out.Counts) != len(api.LintRules) || out.Counts["KG-LINT-01"] != 1 {
		t.Errorf("counts = %v, want every rule and one KG-LINT-01", out.Counts)
	}
	for _, q := range []string{"namespace=b", "rule=KG-LINT-02", "severity=error", "rule=dangling-owner&severity=info"} {
		var out lintJSON
		getJSON(t, srv, "/lint?"+q, 200, &out)
		if len(out.Items) != 0 || out.Items == nil {
			t.Errorf("/lint?%s items = %#v, want []", q, out.Items)
		}
	}
	getJSON(t, srv, "/lint?rule=dangling-owner&severity=warning&limit=1", 200, &out)
	if len(out.Items) != 1 || out.Truncated {
		t.Errorf("/lint?rule=dangling-owner&severity=warning&limit=1 = %+v", out)
	}
}

func TestLintBadParameters(t *testing.T) {
	srv, _ := testServer(t)
	for query, want := range map[string]string{
		"rule=KG-LINT-99":         `invalid rule "KG-LINT-99": want one of KG-LINT-01 (dangling-owner), KG-LINT-02`,
		"severity=fatal":          `invalid severity "fatal": want error, warning or info`,
		"limit=0":                 `invalid limit "0"`,
		"limit=100001":            `invalid limit "100001"`,
		"kind=ConfigMap":          `unknown query parameter "kind"`,
		"namespace=a&namespace=b": `"namespace" given more than once`,
	} {
		t.Run(query, func(t *testing.T) {
			var e errorJSON
			getJSON(t, srv, "/lint?"+query, 400, &e)
			if !strings.Contains(e.Error, want) {
				t.Errorf("error %q lacks %q", e.Error, want)
			}
		})
	}
	var e errorJSON
	getJSON(t, srv, "/lint/x", 404, &e)
}

// TestLintCollector checks the metric's values, that they are the count
// GET /lint shows (a scrape that finds it stale is answered with it while
// it is counted anew), and that the server registers it.
func TestLintCollector(t *testing.T) {
	srv, store := testServer(t)
	clock := newTestClock()
	counter := backgroundCounter(store, clock)
	c := newLintCollector(counter)
	want := func(dangling int) string {
		var b strings.Builder
		b.WriteString("# HELP kubegcd_ownerref_findings ownerReference lint findings in the mirror by rule id (see GET /lint, whose " +
			"countsAt says when they were counted), counted for each scrape where a count takes under 50ms, else in the background " +
			"when a scrape or GET /lint finds the count older than --lint-counts-max-age.\n")
		b.WriteString("# TYPE kubegcd_ownerref_findings gauge\n")
		for _, r := range api.LintRules {
			n := 0
			if r.ID == "KG-LINT-01" {
				n = dangling
			}
			b.WriteString(`kubegcd_ownerref_findings{rule="` + r.ID + `"} ` + strconv.Itoa(n) + "\n")
		}
		return b.String()
	}
	// The first scrape waits for the first count.
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1))); err != nil {
		t.Fatal(err)
	}
	// A second dangling reference: not seen until the count is 30s old,
	// and then only once it has been made anew.
	addDangling(t, store, "H")
	clock.add(29 * time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1))); err != nil {
		t.Errorf("within 30s: %v", err)
	}
	passEnded(t, counter)
	clock.add(time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1))); err != nil {
		t.Errorf("at 30s, before the recount: %v", err)
	}
	passEnded(t, counter)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(2))); err != nil {
		t.Errorf("after the recount: %v", err)
	}

	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint of the metric: %v %v", problems, err)
	}
	_, body := get(t, srv, "/metrics")
	if !strings.Contains(string(body), `kubegcd_ownerref_findings{rule="KG-LINT-01"} 2`) ||
		!strings.Contains(string(body), `kubegcd_ownerref_findings{rule="KG-LINT-07"} 0`) {
		t.Errorf("/metrics lacks the lint findings:\n%s", body)
	}
}

// TestLintCountsShared: GET /lint and the metric show one count, from
// Options.LintCounter, and a request that finds it stale is answered with
// it while a pass counts anew.
func TestLintCountsShared(t *testing.T) {
	_, store := testServer(t)
	clock := newTestClock()
	counter := backgroundCounter(store, clock)
	reg := prometheus.NewRegistry()
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: reg, LintCounter: counter})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	first := clock.now()
	counter.Start(t.Context())
	var out lintJSON
	getJSON(t, srv, "/lint", 200, &out)
	if !out.CountsAt.Equal(first) || out.Counts["KG-LINT-01"] != 1 {
		t.Fatalf("/lint counts %v at %s, want 1 dangling owner at %s", out.Counts, out.CountsAt, first)
	}
	addDangling(t, store, "H")
	clock.add(time.Minute)
	getJSON(t, srv, "/lint", 200, &out)
	if !out.CountsAt.Equal(first) || out.Counts["KG-LINT-01"] != 1 || len(out.Items) != 2 {
		t.Errorf("/lint on a stale count: %d items, counts %v at %s, want the 2 findings and the count of 1 at %s",
			len(out.Items), out.Counts, out.CountsAt, first)
	}
	passEnded(t, counter)
	getJSON(t, srv, "/lint?namespace=a", 200, &out)
	if !out.CountsAt.Equal(first.Add(time.Minute)) || out.Counts["KG-LINT-01"] != 2 {
		t.Errorf("/lint after the recount: counts %v at %s", out.Counts, out.CountsAt)
	}
	if n, err := testutil.GatherAndCount(reg, "kubegcd_ownerref_findings"); err != nil || n != len(api.LintRules) {
		t.Fatalf("kubegcd_ownerref_findings: %d series, %v", n, err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "kubegcd_ownerref_findings" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == "KG-LINT-01" && m.GetGauge().GetValue() != 2 {
				t.Errorf("the metric's KG-LINT-01 = %v, want /lint's 2", m.GetGauge().GetValue())
			}
		}
	}
}

// TestLintCountsQuickMirror: where a count is quick, GET /lint's counts
// are made for the request and agree with its findings, however young the
// count before.
func TestLintCountsQuickMirror(t *testing.T) {
	srv, store := testServer(t)
	var out lintJSON
	getJSON(t, srv, "/lint", 200, &out)
	if out.Counts["KG-LINT-01"] != 1 || len(out.Items) != 1 {
		t.Fatalf("/lint: %d items, counts %v, want 1 dangling owner", len(out.Items), out.Counts)
	}
	first := out.CountsAt
	addDangling(t, store, "H")
	getJSON(t, srv, "/lint", 200, &out)
	if out.Counts["KG-LINT-01"] != 2 || len(out.Items) != 2 || out.CountsAt.Before(first) {
		t.Errorf("/lint right after a change: %d items, counts %v at %s, want 2 and 2 counted at or after %s",
			len(out.Items), out.Counts, out.CountsAt, first)
	}
}

// backgroundCounter counts store's findings on clock in the background, as
// for a large mirror, recounting at 30 s.
func backgroundCounter(store *db.DB, clock *testClock) *LintCounter {
	c := NewLintCounter(store.Objects(), 30*time.Second, nil)
	c.now = clock.now
	c.inline = 0
	return c
}

// addDangling mirrors a ConfigMap of namespace a whose owner is gone.
func addDangling(t *testing.T, store *db.DB, name string) {
	t.Helper()
	ctx := context.Background()
	rs, err := store.Mirror().Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rs[0].ID, Object: &db.Object{UID: "uid-" + name, APIVersion: "v1",
		Kind: "ConfigMap", Namespace: "a", Name: name, ResourceVersion: "1",
		OwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "uid-gone"}}}}}); err != nil {
		t.Fatal(err)
	}
}

func TestLintCollectorError(t *testing.T) {
	_, store := testServer(t)
	c := newLintCollector(NewLintCounter(store.Objects(), 30*time.Second, nil))
	store.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "lint") {
		t.Errorf("Gather with the database closed: %v, want the lint error", err)
	}
}
