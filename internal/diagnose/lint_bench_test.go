package diagnose

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// benchMirror fills a database, through the list path ingestion uses, with
// n ConfigMaps in 10 namespaces, half owners and half their dependents
// (controller, blocking, as controllers make them), where 2% of the
// dependents each carry one rule's case; plus n/100 ClusterRoles, 2% of
// them naming a namespaced owner. It returns the expected counts.
func benchMirror(b testing.TB, n int) (*db.DB, map[string]int) {
	b.Helper()
	ctx := context.Background()
	store := dbtest.Open(b)
	cms, err := store.Mirror().EnsureResource(ctx, db.Resource{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true})
	if err != nil {
		b.Fatal(err)
	}
	crs, err := store.Mirror().EnsureResource(ctx, db.Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles", Kind: "ClusterRole"})
	if err != nil {
		b.Fatal(err)
	}
	created := time.Now().Add(-time.Hour)
	want := map[string]int{}
	const namespaces = 10
	perNS := n / namespaces
	list := func(rid int64, objs func(add func(*db.Object))) {
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
		if len(page) > 0 {
			flush()
		}
		if _, err := store.Mirror().FinishList(ctx, rid, epoch, "1"); err != nil {
			b.Fatal(err)
		}
	}
	uid := func(ns, name string) string { return ns + "/" + name }
	ref := func(ns string, i int) api.OwnerRef {
		return api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: fmt.Sprint("o-", i), UID: uid(ns, fmt.Sprint("o-", i))}
	}
	yes := true
	list(cms, func(add func(*db.Object)) {
		for nsi := range namespaces {
			ns := fmt.Sprint("ns-", nsi)
			for i := range perNS {
				o := &db.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, ResourceVersion: "1", CreationTimestamp: &created}
				if i%2 == 0 {
					o.Name = fmt.Sprint("o-", i)
					o.UID = uid(ns, o.Name)
					add(o)
					continue
				}
				o.Name = fmt.Sprint("d-", i)
				o.UID = uid(ns, o.Name)
				r := ref(ns, i-1)
				r.Controller, r.BlockOwnerDeletion = &yes, &yes
				switch i % 100 {
				case 1:
					r.UID += "-gone"
					r.Name += "-gone"
					want[api.LintDanglingOwner.ID]++
				case 3:
					r.UID += "-old"
					want[api.LintUIDMismatch.ID]++
				case 5:
					r = ref(fmt.Sprint("ns-", (nsi+1)%namespaces), i-1)
					r.Controller = &yes
					want[api.LintCrossNamespace.ID]++
				case 7:
					r.APIVersion, r.Kind = "gone.example.com/v1", "Vanished"
					want[api.LintOwnerKindUnserved.ID]++
				case 9:
					second := ref(ns, i-3)
					second.Controller = &yes
					o.OwnerReferences = append(o.OwnerReferences, second)
					want[api.LintMultipleControllers.ID]++
				case 11:
					r.Controller = nil
					want[api.LintBlockLiveOwner.ID]++
				}
				o.OwnerReferences = append([]api.OwnerRef{r}, o.OwnerReferences...)
				add(o)
			}
		}
	})
	list(crs, func(add func(*db.Object)) {
		for i := range n / 100 {
			o := &db.Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: fmt.Sprint("cr-", i),
				UID: fmt.Sprint("cr-", i), ResourceVersion: "1"}
			if i%50 == 0 {
				o.OwnerReferences = []api.OwnerRef{ref("ns-0", 0)}
				want[api.LintClusterScopedDependent.ID]++
			}
			add(o)
		}
	})
	return store, want
}

// TestLintMirror runs the rules over SQL's preselection on a real
// database: every case is found once, and nothing else (the SQL must pass
// on every reference CheckRef flags, and leave the many clean ones out).
func TestLintMirror(t *testing.T) {
	store, want := benchMirror(t, 2000)
	ctx := context.Background()
	counted, err := CountLint(ctx, store.Objects(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"", "ns-3"} {
		rep, err := Lint(ctx, store.Objects(), LintFilter{Namespace: ns, Limit: 100000}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		counts := counted.Of(ns)
		total := 0
		for _, r := range api.LintRules {
			w := want[r.ID]
			if ns != "" {
				// A tenth of the namespaced cases, no cluster-scoped one.
				w /= 10
				if r == api.LintClusterScopedDependent {
					w = 0
				}
			}
			if w == 0 && ns == "" || counts[r.ID] != w {
				t.Errorf("namespace %q: %s: counted %d findings, want %d (and more than 0 in all)", ns, r.ID, counts[r.ID], w)
			}
			total += w
		}
		if len(rep.Items) != total {
			t.Errorf("namespace %q: %d items, want %d", ns, len(rep.Items), total)
		}
	}
}

// BenchmarkLint lints a mirror of 200,000 objects (202,000 with the
// ClusterRoles): the first 1,000 findings of the whole mirror and of one
// namespace of it, and the count of every finding that GET /lint and the
// metric show.
func BenchmarkLint(b *testing.B) {
	store, want := benchMirror(b, 200000)
	ctx := context.Background()
	counted, err := CountLint(ctx, store.Objects(), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	counts := counted.Of("")
	for _, r := range api.LintRules {
		if counts[r.ID] != want[r.ID] || want[r.ID] == 0 {
			b.Fatalf("counts = %v, want %v", counts, want)
		}
	}
	for name, run := range map[string]func() error{
		"all": func() error { _, err := Lint(ctx, store.Objects(), LintFilter{Limit: 1000}, time.Now()); return err },
		"namespace": func() error {
			_, err := Lint(ctx, store.Objects(), LintFilter{Namespace: "ns-3", Limit: 1000}, time.Now())
			return err
		},
		"count": func() error { _, err := CountLint(ctx, store.Objects(), time.Now()); return err },
	} {
		b.Run(name, func(b *testing.B) {
			start := cpuTime(b)
			for b.Loop() {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
			// On a shared machine the process's CPU time per lint says
			// more than the wall time.
			b.ReportMetric(float64((cpuTime(b)-start).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time the process has used, user and system: on a
// shared machine it says more of a benchmark than the wall clock.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
