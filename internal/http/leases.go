package http

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// leaseCollector exports the lease inventory at every scrape: how many
// Leases there are, and how many have expired, by role; how many
// LeaseCandidates there are, by state.
type leaseCollector struct {
	store                      leaseLister
	total, expired, candidates *prometheus.Desc
}

// leaseLister is what leaseCollector reads.
type leaseLister interface {
	Leases(ctx context.Context, f db.LeaseFilter) ([]db.LeaseRow, error)
	LeaseCandidates(ctx context.Context, f db.LeaseCandidateFilter) ([]db.LeaseCandidateRow, error)
}

// Candidate states of kubegcd_lease_candidates.
const (
	candidateLive    = "live"
	candidateExpired = "expired"
)

func newLeaseCollector(store leaseLister) *leaseCollector {
	return &leaseCollector{
		store: store,
		total: prometheus.NewDesc("kubegcd_leases", "Leases in the cluster, by role: leader-election, node-heartbeat, apiserver-identity.",
			[]string{"role"}, nil),
		expired: prometheus.NewDesc("kubegcd_leases_expired", "Leases whose renewTime + leaseDurationSeconds is past, by role.",
			[]string{"role"}, nil),
		candidates: prometheus.NewDesc("kubegcd_lease_candidates",
			"LeaseCandidates in the cluster, by state: live, or expired (never renewed, or renewed more than 30 minutes ago).",
			[]string{"state"}, nil),
	}
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.total
	ch <- c.expired
	ch <- c.candidates
}

func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := time.Now()
	rows, err := c.store.Leases(ctx, db.LeaseFilter{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.total, err)
		return
	}
	leases := diagnose.ClassifyLeases(rows, now)
	total, expired := map[api.LeaseRole]int{}, map[api.LeaseRole]int{}
	for _, l := range leases {
		total[l.Role]++
		if l.Expired {
			expired[l.Role]++
		}
	}
	for _, r := range api.LeaseRoles {
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(total[r]), string(r))
		ch <- prometheus.MustNewConstMetric(c.expired, prometheus.GaugeValue, float64(expired[r]), string(r))
	}
	candidates, err := c.store.LeaseCandidates(ctx, db.LeaseCandidateFilter{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.candidates, err)
		return
	}
	states := map[string]int{}
	for _, lc := range candidates {
		if diagnose.LeaseCandidateExpired(lc.RenewTime, now) {
			states[candidateExpired]++
		} else {
			states[candidateLive]++
		}
	}
	for _, s := range []string{candidateLive, candidateExpired} {
		ch <- prometheus.MustNewConstMetric(c.candidates, prometheus.GaugeValue, float64(states[s]), s)
	}
}

func (s *server) leases(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := db.LeaseFilter{Namespace: q.str("namespace")}
	var expired *bool
	switch v := q.str("expired"); v {
	case "":
	case "true", "false":
		expired = new(v == "true")
	default:
		q.fail("invalid expired %q: want true or false", v)
	}
	if q.err != nil {
		writeError(w, r, http.StatusBadRequest, q.err.Error())
		return
	}
	ctx := r.Context()
	rows, err := s.DB.Leases(ctx, f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	candidates, err := s.DB.LeaseCandidates(ctx, db.LeaseCandidateFilter{Namespace: f.Namespace})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	d := leaseData{leases: rows, candidates: candidates}
	uids := make([]string, len(rows))
	// The preferred holder is dated by every row of the Lease's history,
	// read only where it is not the holder: few Leases.
	var notPreferred []string
	for i, l := range rows {
		uids[i] = l.UID
		if diagnose.PreferredElsewhere(l.HolderIdentity, l.PreferredHolder) {
			notPreferred = append(notPreferred, l.UID)
		}
	}
	if d.holders, err = s.DB.LeaseHolderHistory(ctx, uids); err != nil {
		s.internalError(w, r, err)
		return
	}
	if d.histories, err = s.DB.HistoriesOf(ctx, notPreferred); err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, leaseListOf(d, expired, time.Now()))
}

// leaseData is what /leases reads.
type leaseData struct {
	leases []db.LeaseRow
	// holders are the Leases' holder rows, by uid (LeaseHolderHistory).
	holders map[string][]db.HistoryEntry
	// histories are whole histories, by uid, of the Leases whose holder
	// is not the preferred one.
	histories  map[string][]db.HistoryEntry
	candidates []db.LeaseCandidateRow
}

// leaseListOf is the answer of /leases: each Lease with who held it and
// when nobody did, and with its candidates; the candidates that name no
// Lease; the findings. The candidates are matched against every Lease,
// expired or not (?expired= keeps some after).
func leaseListOf(d leaseData, expired *bool, now time.Time) api.LeaseList {
	leases := diagnose.ClassifyLeases(d.leases, now)
	items := make([]api.LeaseItem, len(leases))
	facts := make([]diagnose.LeaseFacts, len(leases))
	for i, l := range leases {
		items[i].Lease = l
		items[i].HolderChanges, items[i].Gaps = diagnose.LeaseTimeline(d.holders[l.UID], l)
		facts[i] = diagnose.LeaseFactsOf(l, d.histories[l.UID], items[i].HolderChanges)
	}
	inv := diagnose.InventoryLeases(facts, diagnose.ClassifyLeaseCandidates(d.candidates, now), now)
	out := api.LeaseList{Items: make([]api.LeaseItem, 0, len(items))}
	exists, kept := map[diagnose.LeaseKey]bool{}, map[diagnose.LeaseKey]bool{}
	for _, it := range items {
		k := diagnose.LeaseKey{Namespace: it.Namespace, Name: it.Name}
		exists[k] = true
		if expired != nil && it.Expired != *expired {
			continue
		}
		kept[k] = true
		it.Candidates = inv.Candidates[k]
		out.Items = append(out.Items, it)
	}
	if expired == nil && len(inv.WithoutLease) > 0 {
		out.CandidatesWithoutLease = inv.WithoutLease
	}
	for _, fd := range inv.Findings {
		k := diagnose.LeaseKey{Namespace: fd.Namespace, Name: fd.Lease}
		// A finding about a Lease goes with it; one about a candidate
		// without a Lease, with those candidates.
		if kept[k] || (expired == nil && !exists[k]) {
			out.Findings = append(out.Findings, fd)
		}
	}
	return out
}
