package http

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
)

// objectCounts is what one query of the count metrics returns.
type objectCounts struct {
	objects []db.KindCount
	owned   []db.OwnedCount
}

// countsCollector exports how many objects the mirror holds of each kind,
// CRDs included, and how many of them each kind of owner owns: what
// kube-state-metrics cannot say for custom resources. Labels are group and
// kind only, so the series are bounded by the API's kinds, not its objects.
type countsCollector struct {
	objects, owned *prometheus.Desc
	// The query reads every object and ownerReference: 0.3 s at 200,000
	// objects, too much for every scrape.
	read scrapeCache[objectCounts]
}

// objectCounter is what countsCollector reads.
type objectCounter interface {
	ObjectCounts(ctx context.Context) (objects []db.KindCount, owned []db.OwnedCount, err error)
}

func newCountsCollector(store objectCounter, ttl time.Duration, now func() time.Time) *countsCollector {
	return &countsCollector{
		objects: prometheus.NewDesc("kubegcd_objects",
			"Objects in the mirror by API group and kind, 0 for a kind mirrored without objects; computed at most every 30s.",
			[]string{"group", "kind"}, nil),
		owned: prometheus.NewDesc("kubegcd_owned_objects",
			"Objects in the mirror with at least one ownerReference to an owner of owner_group and owner_kind, by their own API group and kind; an object with owners of two kinds counts in both. Computed at most every 30s.",
			[]string{"group", "kind", "owner_group", "owner_kind"}, nil),
		read: scrapeCache[objectCounts]{ttl: ttl, now: now, load: func(ctx context.Context, _ time.Time) (objectCounts, error) {
			objects, owned, err := store.ObjectCounts(ctx)
			return objectCounts{objects, owned}, err
		}},
	}
}

func (c *countsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.objects
	ch <- c.owned
}

func (c *countsCollector) Collect(ch chan<- prometheus.Metric) {
	oc, _, err := c.read.get()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.objects, err)
		return
	}
	for _, k := range oc.objects {
		ch <- prometheus.MustNewConstMetric(c.objects, prometheus.GaugeValue, float64(k.Count), k.Group, k.Kind)
	}
	for _, k := range oc.owned {
		ch <- prometheus.MustNewConstMetric(c.owned, prometheus.GaugeValue, float64(k.Count), k.Group, k.Kind, k.OwnerGroup, k.OwnerKind)
	}
}
