package main

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The coldstart benchmark, tiny: the floors, kube-controller-manager and
// kubegcd each start on a few hundred ConfigMaps, so the benchmark does not
// rot between runs of make bench.
func TestColdstartBenchmarkRuns(t *testing.T) {
	e := startBenchEnv(t)
	ctx, dir, cluster, bin, kube := e.ctx, e.dir, e.cluster, e.bin, e.kube
	const n = 300
	profile := filepath.Join(dir, "coldstart-%n.pprof")
	t.Setenv("KUBEGCD_BENCH_CPUPROFILE", profile)
	b, err := newColdstartBench(config{workers: 8, rounds: 1}, cluster, bin, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &creator{kube: kube, workers: 8}
	if err := c.createNamespaces(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.at(ctx, c, n)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s.write(&out)
	t.Log(out.String())

	got := map[string]coldResult{}
	for k, c := range s.contenders {
		got[c.slug] = s.byRound[0][k]
	}
	list, kcm, kubegcd := got["list"], got["kcm"], got["kubegcd"]
	if list.objects < n || kubegcd.objects < n {
		t.Errorf("the list counted %d objects and kubegcd mirrored %d; the cluster holds at least %d ConfigMaps",
			list.objects, kubegcd.objects, n)
	}
	// Discovery, as kubegcd runs it, finds the same resources: the same
	// objects, but those that changed in between (Leases renew, but are
	// neither made nor removed).
	if kubegcd.objects != list.objects {
		t.Errorf("kubegcd mirrored %d objects, the list counted %d", kubegcd.objects, list.objects)
	}
	if watchList, ok := got["watchlist"]; ok && watchList.objects != list.objects {
		t.Errorf("WatchList counted %d objects, the list %d", watchList.objects, list.objects)
	}
	if kcm.elapsed <= 0 || kcm.hwm == 0 || kubegcd.hwm == 0 || kubegcd.io.wchar == 0 || kubegcd.dbBytes == 0 {
		t.Errorf("figures missing: kube-controller-manager %+v, kubegcd %+v", kcm, kubegcd)
	}
	for _, p := range []string{"coldstart-300.pprof", "coldstart-300.pprof.allocs"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() == 0 {
			t.Errorf("the profiled start wrote no %s (%v); it says %q", p, err, s.profile)
		}
	}
	if s.fsyncs.skipped == "" && s.fsyncs.byFile["WAL"] == 0 {
		t.Errorf("strace counted no fsync of kubegcd's WAL: %+v", s.fsyncs)
	}
}

func TestParseFsyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "strace.txt")
	trace := strings.Join([]string{
		"1257  1795949132.786512 fsync(3</tmp/d/cs.db-wal>) = 0",
		"12345 1795949132.800000 fdatasync(3</tmp/d/cs.db-wal> <unfinished ...>",
		"12346 1795949132.800001 fsync(4</tmp/d/cs.db>) = 0",
		"12345 1795949132.800100 <... fdatasync resumed>) = 0",
		"12346 1795949132.900000 fsync(5</tmp/d>) = 0",
		"12346 1795949133.000000 fsync(6</tmp/d/cs.db-journal>) = 0",
		"12346 1795949133.100000 fsync(7</tmp/other>) = 0",
		"12346 1795949134.000000 fsync(3</tmp/d/cs.db-wal>) = 0", // after ready
		"+++ exited with 0 +++",
	}, "\n")
	if err := os.WriteFile(path, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseFsyncs(path, "d", "cs.db", time.UnixMicro(1795949133_500000))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"WAL": 2, "database": 1, "directory": 1, "journal": 1, "other": 1}
	if !maps.Equal(got, want) {
		t.Errorf("parseFsyncs = %v, want %v", got, want)
	}
}

func TestKlogTime(t *testing.T) {
	ref := time.Date(2026, 11, 29, 10, 35, 0, 0, time.Local)
	line := `I1129 10:35:01.123456   12345 garbagecollector.go:166] "Garbage collector: all resource monitors have synced"`
	got, ok := klogTime(line, ref)
	want := time.Date(2026, 11, 29, 10, 35, 1, 123456000, time.Local)
	if !ok || !got.Equal(want) {
		t.Errorf("klogTime = %v, %v; want %v", got, ok, want)
	}
	if _, ok := klogTime("=== kube-controller-manager starting", ref); ok {
		t.Error("klogTime read a time out of a line that has none")
	}
}

// listOne starts over when its continue token expires, counts only the
// last attempt's objects, and gives up after two restarts. The fake
// client answers in order (it does not pass the continue token on).
func TestListOneStartsOverWhenExpired(t *testing.T) {
	type answer struct {
		names []string
		cont  string
		err   error
	}
	first := answer{names: []string{"a", "b"}, cont: "next"}
	last := answer{names: []string{"c"}}
	expired := answer{err: apierrors.NewResourceExpired("the continue token is too old")}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, tc := range []struct {
		name         string
		answers      []answer
		wantN        int64
		wantRestarts int64
		wantErr      bool
	}{
		{name: "none", answers: []answer{first, last}, wantN: 3},
		{name: "once", answers: []answer{first, expired, first, last}, wantN: 3, wantRestarts: 1},
		{name: "thrice", answers: []answer{first, expired, first, expired, first, expired},
			wantN: 2, wantRestarts: 2, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := metadatafake.NewSimpleMetadataClient(runtime.NewScheme())
			calls := 0
			client.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if calls == len(tc.answers) {
					return true, nil, errors.New("listed once too often")
				}
				a := tc.answers[calls]
				calls++
				if a.err != nil {
					return true, nil, a.err
				}
				l := &metav1.List{ListMeta: metav1.ListMeta{Continue: a.cont}}
				for _, n := range a.names {
					l.Items = append(l.Items, runtime.RawExtension{Object: &metav1.PartialObjectMetadata{
						ObjectMeta: metav1.ObjectMeta{Name: n}}})
				}
				return true, l, nil
			})
			var restarts atomic.Int64
			n, err := listOne(context.Background(), client, gvr, &restarts)
			if (err != nil) != tc.wantErr || n != tc.wantN || restarts.Load() != tc.wantRestarts {
				t.Errorf("listOne = %d, %v after %d restarts; want %d, error %v, %d restarts",
					n, err, restarts.Load(), tc.wantN, tc.wantErr, tc.wantRestarts)
			}
			if calls != len(tc.answers) {
				t.Errorf("listOne listed %d pages, want %d", calls, len(tc.answers))
			}
		})
	}
}
