package http

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// BenchmarkDiagnosisEndpoints times the diagnosis endpoints, through the
// handler and its JSON, over one mirror of 200,000 ConfigMaps in 200
// namespaces, written through ingestion's list path:
//
//   - a tree of 10,000 transitive dependents under one root (100 owners of
//     99 dependents each), for the cascade preview;
//   - 94,999 owners with one dependent each, where 6 dependents in 100 carry
//     one lint rule's case each (dangling, re-created owner, cross-namespace,
//     unserved kind, blockOwnerDeletion on a live owner, renamed owner) —
//     about 5,700 findings, far more than a cluster has;
//   - 2,000 objects being deleted and held by a finalizer, and 5 namespaces
//     Terminating, for /stuck.
//
// Besides ns/op it reports the process's CPU time per request (cpu-ms/op),
// which says more on a shared machine.
func BenchmarkDiagnosisEndpoints(b *testing.B) {
	ctx := context.Background()
	store := benchStore(b)
	list := func(r db.Resource, objs func(add func(*db.Object))) {
		rid, err := store.Mirror().EnsureResource(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		epoch, err := store.Mirror().BeginList(ctx, rid)
		if err != nil {
			b.Fatal(err)
		}
		var page []*db.Object
		flush := func() {
			if err := store.Mirror().WriteListPage(ctx, rid, epoch, page); err != nil {
				b.Fatal(err)
			}
			page = page[:0]
		}
		objs(func(o *db.Object) {
			if page = append(page, o); len(page) == 500 {
				flush()
			}
		})
		flush()
		if _, err := store.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
			b.Fatal(err)
		}
	}
	deleted := time.Now().Add(-time.Hour)
	list(db.Resource{Version: "v1", Resource: "namespaces", Kind: "Namespace"}, func(add func(*db.Object)) {
		for n := range 200 {
			ns := &db.Object{UID: fmt.Sprint("ns-", n), APIVersion: "v1", Kind: "Namespace", Name: fmt.Sprint("ns-", n), ResourceVersion: "1"}
			if n < 5 {
				ns.DeletionTimestamp = &deleted
				ns.NamespaceStatus = &db.NamespaceStatus{Phase: "Terminating", SpecFinalizers: []string{"kubernetes"}}
			}
			add(ns)
		}
	})
	yes := true
	cm := func(ns, name string, refs ...api.OwnerRef) *db.Object {
		return &db.Object{UID: "u-" + name, APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: name,
			ResourceVersion: "1", CreationTimestamp: &deleted, OwnerReferences: refs}
	}
	ref := func(name string) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: "u-" + name, Controller: &yes, BlockOwnerDeletion: &yes}
	}
	list(db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true}, func(add func(*db.Object)) {
		add(cm("tree", "root"))
		for i := range 100 {
			mid := fmt.Sprintf("mid-%03d", i)
			add(cm("tree", mid, ref("root")))
			for j := range 99 {
				add(cm("tree", fmt.Sprintf("leaf-%03d-%02d", i, j), ref(mid)))
			}
		}
		for i := range 94_999 {
			ns := fmt.Sprint("ns-", i%200)
			owner := cm(ns, fmt.Sprint("owner-", i))
			if i%50 == 0 {
				owner.DeletionTimestamp, owner.Finalizers = &deleted, []string{"example.com/hold"}
			}
			add(owner)
			r := ref(owner.Name)
			switch i % 100 {
			case 1:
				r.UID += "-gone"
				r.Name += "-gone"
			case 3:
				r.UID += "-old"
			case 5:
				r = ref(fmt.Sprint("owner-", i-1))
			case 7:
				r.APIVersion, r.Kind = "gone.example.com/v1", "Vanished"
			case 9:
				r.Controller = nil
			case 11:
				r.Name += "-renamed"
			}
			add(cm(ns, owner.Name+"-dep", r))
		}
	})
	// As the daemon, the lint's counts are counted as it starts, not in
	// the timings.
	counter := NewLintCounter(store.Objects(), DefaultLintCountsMaxAge, nil)
	counter.Start(b.Context())
	if _, err := counter.Wait(b.Context()); err != nil {
		b.Fatal(err)
	}
	h, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), StuckAfter: time.Minute,
		LintCounter: counter})
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range []struct{ name, path string }{
		{"lint", "/lint"},
		{"lint-namespace", "/lint?namespace=ns-3"},
		{"stuck", "/stuck"},
		{"cascade-background", "/objects/u-root/cascade"},
		{"cascade-foreground", "/objects/u-root/cascade?propagation=foreground"},
		{"cascade-orphan", "/objects/u-root/cascade?propagation=orphan"},
		{"history", "/objects/u-owner-1-dep/history"},
		{"object", "/objects/u-owner-1-dep"},
	} {
		path := e.path
		b.Run(e.name, func(b *testing.B) {
			cpu0 := processCPU(b)
			for b.Loop() {
				w := &countingWriter{header: http.Header{}}
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
				if w.code != http.StatusOK {
					b.Fatalf("%s: %d", path, w.code)
				}
				b.ReportMetric(float64(w.n), "bytes/answer")
			}
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingWriter is a ResponseWriter that counts the answer's bytes and
// drops them, as a socket does: a recorder's growing buffer would be
// measured too.
type countingWriter struct {
	header http.Header
	code   int
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }

func (w *countingWriter) WriteHeader(code int) { w.code = code }

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}
