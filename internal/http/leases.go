package http

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// leaseCollector exports the lease inventory at every scrape: how many
// Leases there are, and how many have expired, by role.
type leaseCollector struct {
	store          leaseLister
	total, expired *prometheus.Desc
}

// leaseLister is what leaseCollector reads.
type leaseLister interface {
	Leases(ctx context.Context, f db.LeaseFilter) ([]db.LeaseRow, error)
}

func newLeaseCollector(store leaseLister) *leaseCollector {
	return &leaseCollector{
		store: store,
		total: prometheus.NewDesc("kubegcd_leases", "Leases in the cluster, by role: leader-election, node-heartbeat, apiserver-identity.",
			[]string{"role"}, nil),
		expired: prometheus.NewDesc("kubegcd_leases_expired", "Leases whose renewTime + leaseDurationSeconds is past, by role.",
			[]string{"role"}, nil),
	}
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.total
	ch <- c.expired
}

func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := c.store.Leases(ctx, db.LeaseFilter{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.total, err)
		return
	}
	leases := diagnose.ClassifyLeases(rows, time.Now())
	roles := diagnose.LeaseRoles
	total, expired := map[string]int{}, map[string]int{}
	for _, l := range leases {
		total[l.Role]++
		if l.Expired {
			expired[l.Role]++
		}
	}
	for _, r := range roles {
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(total[r]), r)
		ch <- prometheus.MustNewConstMetric(c.expired, prometheus.GaugeValue, float64(expired[r]), r)
	}
}
