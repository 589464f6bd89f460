package http

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

type lintJSON struct {
	Items     []diagnose.Finding `json:"items"`
	Counts    map[string]int     `json:"counts"`
	Truncated bool               `json:"truncated"`
}

func TestLintEndpoint(t *testing.T) {
	srv, _ := testServer(t)
	// testServer's namespace a has one finding: G names a Deployment that
	// was never mirrored.
	var out lintJSON
	getJSON(t, srv, "/lint?namespace=a", 200, &out)
	if len(out.Items) != 1 || out.Items[0].Rule != "KG-LINT-01" || out.Items[0].Target.UID != "uid-G" ||
		out.Items[0].OwnerReference.UID != "uid-ghost" || out.Items[0].Severity != "warning" || out.Truncated {
		t.Errorf("/lint?namespace=a = %+v", out)
	}
	if len(out.Counts) != len(diagnose.Rules) || out.Counts["KG-LINT-01"] != 1 {
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

// TestLintCollector checks the metric's values, that it is cached for its
// TTL, and that the server registers it.
func TestLintCollector(t *testing.T) {
	srv, store := testServer(t)
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	c := newLintCollector(store, 30*time.Second, func() time.Time { return clock })
	want := func(dangling int) string {
		var b strings.Builder
		b.WriteString("# HELP kubegcd_ownerref_findings ownerReference lint findings in the mirror by rule id (see GET /lint), computed at most every 30s.\n")
		b.WriteString("# TYPE kubegcd_ownerref_findings gauge\n")
		for _, r := range diagnose.Rules {
			n := 0
			if r.ID == "KG-LINT-01" {
				n = dangling
			}
			b.WriteString(`kubegcd_ownerref_findings{rule="` + r.ID + `"} ` + string(rune('0'+n)) + "\n")
		}
		return b.String()
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1))); err != nil {
		t.Fatal(err)
	}
	// A second dangling reference: not seen until the counts are 30s old.
	ctx := context.Background()
	rs, err := store.Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ApplyEvents(ctx, []db.Event{{ResourceID: rs[0].ID, Object: &db.Object{UID: "uid-H", APIVersion: "v1",
		Kind: "ConfigMap", Namespace: "a", Name: "H", ResourceVersion: "1",
		OwnerReferences: []db.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "uid-gone"}}}}}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(29 * time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1))); err != nil {
		t.Errorf("within the TTL: %v", err)
	}
	clock = clock.Add(time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(2))); err != nil {
		t.Errorf("after the TTL: %v", err)
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

func TestLintCollectorError(t *testing.T) {
	_, store := testServer(t)
	c := newLintCollector(store, 30*time.Second, time.Now)
	store.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "lint") {
		t.Errorf("Gather with the database closed: %v, want the lint error", err)
	}
}
