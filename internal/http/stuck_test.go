package http

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

func TestStuckParameters(t *testing.T) {
	srv, _ := testServer(t)
	tests := []struct {
		query string
		want  string // in the error
	}{
		{"minAge=soon", `invalid minAge "soon"`},
		{"minAge=5", `invalid minAge "5"`},
		{"minAge=-1m", `invalid minAge "-1m"`},
		{"limit=0", `invalid limit "0"`},
		{"kind=ConfigMap&kind=Pod", `query parameter "kind" given more than once`},
		{"colour=blue", `unknown query parameter "colour"`},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var e errorJSON
			getJSON(t, srv, "/stuck?"+tt.query, 400, &e)
			if !strings.Contains(e.Error, tt.want) {
				t.Errorf("error %q, want it to contain %q", e.Error, tt.want)
			}
		})
	}
}

func TestStuckList(t *testing.T) {
	srv, _ := testServer(t)
	var got api.StuckList
	// D's deletion was asked for in January 2026: old enough for any
	// minAge but a year.
	getJSON(t, srv, "/stuck?minAge=0&namespace=a", 200, &got)
	if len(got.Items) != 1 || got.Items[0].Target.Name != "D" || got.Items[0].State != api.StateDeletingDependents {
		t.Fatalf("items %+v, want D deleting its dependents", got.Items)
	}
	var finalizers []string
	for _, b := range got.Items[0].Blockers {
		finalizers = append(finalizers, b.Finalizer)
	}
	if strings.Join(finalizers, ",") != "foregroundDeletion,example.com/hold" {
		t.Errorf("blockers %+v, want the two finalizers (E does not block)", got.Items[0].Blockers)
	}
	getJSON(t, srv, "/stuck?minAge=8760h", 200, &got)
	if len(got.Items) != 0 {
		t.Errorf("minAge of a year lists %+v", got.Items)
	}
	getJSON(t, srv, "/stuck?kind=configmaps&minAge=1s", 200, &got)
	if len(got.Items) != 1 {
		t.Errorf("kind=configmaps lists %+v, want D", got.Items)
	}
}

func TestStuckMetrics(t *testing.T) {
	_, store := testServer(t)
	reg := prometheus.NewRegistry()
	if _, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: reg, StuckAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg, "kubegcd_deletions_stuck", "kubegcd_deletion_stuck_oldest_seconds",
		"kubegcd_namespaces_terminating"); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	want := `
# HELP kubegcd_deletions_stuck Objects whose deletion was requested more than --stuck-after (1h0m0s) ago and that still exist, by API group and kind.
# TYPE kubegcd_deletions_stuck gauge
kubegcd_deletions_stuck{group="",kind="ConfigMap"} 1
# HELP kubegcd_namespaces_terminating Namespaces being deleted (Terminating), however recently.
# TYPE kubegcd_namespaces_terminating gauge
kubegcd_namespaces_terminating 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubegcd_deletions_stuck", "kubegcd_namespaces_terminating"); err != nil {
		t.Error(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, mf := range mfs {
		if mf.GetName() != "kubegcd_deletion_stuck_oldest_seconds" {
			continue
		}
		if got, about := mf.GetMetric()[0].GetGauge().GetValue(), time.Since(deleted).Seconds(); len(mf.GetMetric()) != 1 || got < about-1 || got > about+60 {
			t.Errorf("oldest seconds %v, want about %v", got, about)
		}
		return
	}
	t.Error("no kubegcd_deletion_stuck_oldest_seconds")
}

// BenchmarkStuck times GET /stuck and a scrape of the stuck metrics over a
// mirror of 200,000 ConfigMaps in 200 namespaces, 2,000 of them being
// deleted (held by a finalizer, a fifth of them foreground owners waiting for
// a blocking dependent), and 5 namespaces Terminating.
func BenchmarkStuck(b *testing.B) {
	ctx := context.Background()
	store := benchStore(b)
	cms, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	nss, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"})
	if err != nil {
		b.Fatal(err)
	}
	deleted := time.Now().Add(-time.Hour)
	evs := &events{b: b, store: store}
	for n := range 200 {
		ns := &db.Object{UID: fmt.Sprintf("ns-%d", n), APIVersion: "v1", Kind: "Namespace", Name: fmt.Sprintf("ns-%d", n), ResourceVersion: "1"}
		if n < 5 {
			ns.DeletionTimestamp = &deleted
			ns.NamespaceStatus = &db.NamespaceStatus{Phase: "Terminating", SpecFinalizers: []string{"kubernetes"}}
		}
		evs.add(nss, ns)
	}
	evs.flush()
	for i := range 200_000 {
		o := &db.Object{UID: fmt.Sprintf("cm-%d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: fmt.Sprintf("ns-%d", i%200),
			Name: fmt.Sprintf("cm-%d", i), ResourceVersion: "1"}
		switch {
		case i%100 == 0 && i%500 == 0:
			o.DeletionTimestamp, o.Finalizers = &deleted, []string{"foregroundDeletion"}
		case i%100 == 0:
			o.DeletionTimestamp, o.Finalizers = &deleted, []string{"example.com/hold"}
		case i%100 == 1 && (i-1)%500 == 0:
			owner := fmt.Sprintf("cm-%d", i-1)
			o.OwnerReferences = []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: owner, BlockOwnerDeletion: boolp(true)}}
		}
		evs.add(cms, o)
	}
	evs.flush()
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), StuckAfter: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"/stuck", "/stuck?limit=10000", "/stuck?namespace=ns-3"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
				}
			}
		})
	}
	b.Run("metrics", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := store.Objects().StuckCounts(ctx, time.Now().Add(-time.Minute)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
