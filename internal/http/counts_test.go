package http

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

const countsHelp = `# HELP kubegcd_objects Objects in the mirror by API group and kind, 0 for a kind mirrored without objects; computed at most every 30s.
# TYPE kubegcd_objects gauge
# HELP kubegcd_owned_objects Objects in the mirror with at least one ownerReference to an owner of owner_group and owner_kind, by their own API group and kind; an object with owners of two kinds counts in both. Computed at most every 30s.
# TYPE kubegcd_owned_objects gauge
`

// TestCountsMetrics checks the values of the count metrics over
// testServer's mirror, through the server's registry, that they lint clean,
// and that /metrics serves them.
func TestCountsMetrics(t *testing.T) {
	srv, store := testServer(t)
	reg := prometheus.NewRegistry()
	if _, err := NewHandler(Options{DB: store.Reads(), Ingest: fakeIngest{}, Registry: reg}); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg, "kubegcd_objects", "kubegcd_owned_objects"); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	// Six ConfigMaps: B names A, E names D, G names a Deployment never
	// mirrored; Deployments are mirrored, none exists.
	want := countsHelp + `kubegcd_objects{group="",kind="ConfigMap"} 6
kubegcd_objects{group="apps",kind="Deployment"} 0
kubegcd_owned_objects{group="",kind="ConfigMap",owner_group="",owner_kind="ConfigMap"} 2
kubegcd_owned_objects{group="",kind="ConfigMap",owner_group="apps",owner_kind="Deployment"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubegcd_objects", "kubegcd_owned_objects"); err != nil {
		t.Error(err)
	}
	_, body := get(t, srv, "/metrics")
	if !strings.Contains(string(body), `kubegcd_owned_objects{group="",kind="ConfigMap",owner_group="apps",owner_kind="Deployment"} 1`) {
		t.Errorf("/metrics lacks the owned counts:\n%s", body)
	}
}

// TestCountsCollectorCache checks that the counts are kept for their TTL
// and read anew after it.
func TestCountsCollectorCache(t *testing.T) {
	_, store := testServer(t)
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	c := newCountsCollector(store.Objects(), 30*time.Second, func() time.Time { return clock })
	want := func(configMaps, ownedByConfigMaps string) string {
		return countsHelp + `kubegcd_objects{group="",kind="ConfigMap"} ` + configMaps + `
kubegcd_objects{group="apps",kind="Deployment"} 0
kubegcd_owned_objects{group="",kind="ConfigMap",owner_group="",owner_kind="ConfigMap"} ` + ownedByConfigMaps + `
kubegcd_owned_objects{group="",kind="ConfigMap",owner_group="apps",owner_kind="Deployment"} 1
`
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("6", "2"))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rs, err := store.Mirror().Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// H has two ConfigMap owners: one more dependent of that pair.
	if _, err := store.Mirror().ApplyEvents(ctx, []db.Event{{ResourceID: rs[0].ID, Object: &db.Object{UID: "uid-H", APIVersion: "v1",
		Kind: "ConfigMap", Namespace: "a", Name: "H", ResourceVersion: "1", OwnerReferences: []api.OwnerRef{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "A", UID: "uid-A"},
			{APIVersion: "v1", Kind: "ConfigMap", Name: "L", UID: "uid-L"}}}}}); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(29 * time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("6", "2"))); err != nil {
		t.Errorf("within the TTL: %v", err)
	}
	clock = clock.Add(time.Second)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("7", "3"))); err != nil {
		t.Errorf("after the TTL: %v", err)
	}
}

func TestCountsCollectorError(t *testing.T) {
	_, store := testServer(t)
	c := newCountsCollector(store.Objects(), 30*time.Second, time.Now)
	store.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "object counts") {
		t.Errorf("Gather with the database closed: %v, want the counts query's error", err)
	}
}
