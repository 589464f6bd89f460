package http

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// BenchmarkUIRequests times every API request the web UI's pages make,
// over a mirror of 100,000 ConfigMaps in 100 namespaces (one owning 500 of
// them), a day of 100,000 audit rows and 2,000 pending decisions: the UI
// stays responsive at that size only if each page's requests do.
func BenchmarkUIRequests(b *testing.B) {
	ctx := context.Background()
	store := benchStore(b)
	cms, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	evs := &events{b: b, store: store}
	for i := range 100_000 {
		o := &db.Object{UID: fmt.Sprintf("cm-%d", i), APIVersion: "v1", Kind: "ConfigMap", Namespace: fmt.Sprintf("ns-%d", i%100),
			Name: fmt.Sprintf("cm-%d", i), ResourceVersion: "1"}
		if i > 0 && i%100 == 0 && i <= 50_000 {
			// cm-0 owns 500 ConfigMaps of its namespace.
			o.OwnerReferences = []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm-0", UID: "cm-0", Controller: boolp(true)}}
		}
		evs.add(cms, o)
	}
	evs.flush()
	now := time.Now()
	var audit []*db.AuditEntry
	for i := range 100_000 {
		audit = append(audit, &db.AuditEntry{Time: now.Add(-time.Duration(i) * 864 * time.Millisecond), Instance: "i", Controller: "ownergc",
			Rule: "BR-21-01", Action: "delete", Outcome: api.OutcomeApplied, Reason: "no owner exists",
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: fmt.Sprintf("ns-%d", i%100), Name: fmt.Sprintf("gone-%d", i), UID: fmt.Sprintf("gone-%d", i)}})
		if len(audit) == 1000 {
			if err := store.Ledger().InsertAudits(ctx, audit); err != nil {
				b.Fatal(err)
			}
			audit = audit[:0]
		}
	}
	for i := range 2000 {
		if _, err := store.Ledger().UpsertPending(ctx, &db.Pending{Controller: "ownergc", Action: "delete", Rule: "BR-21-01", Reason: "no owner exists",
			Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: fmt.Sprintf("ns-%d", i%100), Name: fmt.Sprintf("cm-%d", i), UID: fmt.Sprintf("cm-%d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	// A cursor 1,000 decisions into Pending.
	_, deep, err := store.Decisions().ListPending(ctx, db.PendingFilter{Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	pendingDeep := encodePendingCursor(*deep, false)
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), StuckAfter: time.Minute,
		AllowedHosts: []string{"*"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{
		// overview
		"/status", "/overview", "/stuck", "/lint?limit=1",
		// search suggestions: a name in a kind, a namespace's first 200
		"/objects?kind=configmaps&name=cm-4242&limit=5", "/objects?kind=configmaps&namespace=ns-7&limit=200",
		// the object page of the owner of 500
		"/objects/cm-0", "/graph?uid=cm-0",
		// Audit's first page, filtered ones, one deep in the cursor; Pending's
		// first page either way, and one deep in its cursor
		"/audit?limit=50", "/audit?limit=50&namespace=ns-3", "/audit?limit=50&kind=configmaps", "/audit?limit=50&cursor=50000",
		"/audit?limit=50&rule=br-21-01&cursor=50000", "/pending?limit=50", "/pending?limit=50&order=newest",
		"/pending?limit=50&cursor=" + pendingDeep,
	} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
				}
			}
		})
	}
}
