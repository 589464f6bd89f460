package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// ClassifyLeases gives each Lease its role, from where it lives and its
// labels (a node's heartbeat in kube-node-lease; a kube-apiserver's
// identity in kube-system; any other a leader election), and its expiry as
// of now: renewTime + leaseDurationSeconds past, or never renewed, or
// without a duration.
func ClassifyLeases(rows []db.LeaseRow, now time.Time) []api.Lease {
	leases := make([]api.Lease, len(rows))
	for i, row := range rows {
		l := &leases[i]
		*l = api.Lease{Namespace: row.Namespace, Name: row.Name, UID: row.UID, HolderIdentity: row.HolderIdentity,
			LeaseDurationSeconds: row.LeaseDurationSeconds, AcquireTime: row.AcquireTime, RenewTime: row.RenewTime,
			LeaseTransitions: row.LeaseTransitions, Strategy: row.Strategy, PreferredHolder: row.PreferredHolder}
		switch {
		case l.Namespace == "kube-node-lease":
			l.Role = api.LeaseRoleNodeHeartbeat
		case l.Namespace == "kube-system" && row.IdentityLabel == "kube-apiserver":
			l.Role = api.LeaseRoleAPIServerIdentity
		default:
			l.Role = api.LeaseRoleLeaderElection
		}
		l.Expired = true
		if l.RenewTime != nil {
			age := now.Sub(*l.RenewTime).Seconds()
			l.RenewAgeSeconds = &age
			if l.LeaseDurationSeconds != nil {
				l.Expired = l.RenewTime.Add(time.Duration(*l.LeaseDurationSeconds) * time.Second).Before(now)
			}
		}
	}
	return leases
}

// LeaseCandidateValidity is how long a LeaseCandidate stays valid after
// its renewTime. kube-apiserver's election passes over a candidate not
// renewed for longer, and its LeaseCandidate collector deletes it.
const LeaseCandidateValidity = 30 * time.Minute

// LeaseCandidateExpired tells whether a candidate last renewed at renew
// is expired at now, as upstream decides: never renewed, or renewed more
// than LeaseCandidateValidity before now.
func LeaseCandidateExpired(renew *time.Time, now time.Time) bool {
	return renew == nil || renew.Add(LeaseCandidateValidity).Before(now)
}

// ClassifyLeaseCandidates gives each candidate its renew age and its
// expiry as of now.
func ClassifyLeaseCandidates(rows []db.LeaseCandidateRow, now time.Time) []api.LeaseCandidate {
	out := make([]api.LeaseCandidate, len(rows))
	for i, r := range rows {
		c := &out[i]
		*c = api.LeaseCandidate{Namespace: r.Namespace, Name: r.Name, UID: r.UID, LeaseName: r.LeaseName, BinaryVersion: r.BinaryVersion,
			EmulationVersion: r.EmulationVersion, Strategy: r.Strategy, PingTime: r.PingTime, RenewTime: r.RenewTime,
			Expired: LeaseCandidateExpired(r.RenewTime, now)}
		if r.RenewTime != nil {
			age := now.Sub(*r.RenewTime).Seconds()
			c.RenewAgeSeconds = &age
		}
	}
	return out
}

// LeaseFacts is what the findings read of one Lease: its state, and
// since when its holder and its preferred holder are what they are.
type LeaseFacts struct {
	Lease api.Lease
	// HolderSince is when the present holder took the Lease: its
	// acquireTime, else when history first saw it hold the Lease. Nil
	// when unknown.
	HolderSince *time.Time
	// PreferredSince is when history first saw the present preferred
	// holder, in its last run of rows naming it. Nil when unknown.
	PreferredSince *time.Time
}

// LeaseKey names a Lease: its namespace and name.
type LeaseKey struct{ Namespace, Name string }

// LeaseInventory is what InventoryLeases finds.
type LeaseInventory struct {
	// Candidates are the candidates of each Lease, by name.
	Candidates map[LeaseKey][]api.LeaseCandidate
	// WithoutLease are the candidates that name a Lease their namespace
	// does not hold, in the order they were given.
	WithoutLease []api.LeaseCandidate
	// Findings are sorted by namespace, Lease, kind and candidate.
	Findings []api.LeaseFinding
}

// InventoryLeases matches the candidates to the Leases they name and
// says what an operator should look at, as of now. leases must be every
// Lease of the candidates' namespaces: a candidate whose Lease is not
// among them names a Lease that does not exist.
//
// The findings:
//   - holder-not-preferred: the preferred holder is set, and the holder
//     has not been it for longer than two renew periods. A renew period is
//     the Lease's leaseDurationSeconds. The mismatch began at the later of
//     HolderSince and PreferredSince. PreferredSince is the first sight of
//     the preferred holder in history, a lower bound of how long the
//     election has preferred it. The Lease's renewTime cannot date the
//     mismatch: a holder that does not hand over keeps renewing. Without
//     PreferredSince, or without a duration, nothing is said. A holder that
//     honours preferredHolder stops renewing; its lease runs out within one
//     duration and the election hands it over: two durations leave room
//     for the election's own delay.
//   - candidate-expired: a candidate never renewed, or renewed more than
//     LeaseCandidateValidity ago.
//   - no-live-candidate: a Lease with a strategy (coordinated) has no
//     candidate that is not expired.
//   - candidate-without-lease: a candidate names a Lease that does not
//     exist.
func InventoryLeases(leases []LeaseFacts, candidates []api.LeaseCandidate, now time.Time) LeaseInventory {
	inv := LeaseInventory{Candidates: map[LeaseKey][]api.LeaseCandidate{}, WithoutLease: []api.LeaseCandidate{}, Findings: []api.LeaseFinding{}}
	exists := make(map[LeaseKey]bool, len(leases))
	for _, f := range leases {
		exists[LeaseKey{f.Lease.Namespace, f.Lease.Name}] = true
	}
	for _, c := range candidates {
		k := LeaseKey{c.Namespace, c.LeaseName}
		if !exists[k] {
			inv.WithoutLease = append(inv.WithoutLease, c)
			inv.Findings = append(inv.Findings, api.LeaseFinding{Kind: api.LeaseFindingCandidateWithoutLease, Namespace: c.Namespace,
				Lease: c.LeaseName, Candidate: c.Name,
				Message: fmt.Sprintf("Candidate %s stands for Lease %s, which does not exist in namespace %s.", c.Name, c.LeaseName, c.Namespace)})
		} else {
			inv.Candidates[k] = append(inv.Candidates[k], c)
		}
		if c.Expired {
			inv.Findings = append(inv.Findings, candidateExpired(c, now))
		}
	}
	for _, f := range leases {
		l := f.Lease
		k := LeaseKey{l.Namespace, l.Name}
		slices.SortStableFunc(inv.Candidates[k], func(a, b api.LeaseCandidate) int { return cmp.Compare(a.Name, b.Name) })
		if finding, ok := holderNotPreferred(f, now); ok {
			inv.Findings = append(inv.Findings, finding)
		}
		if l.Strategy == nil || *l.Strategy == "" {
			continue
		}
		cs := inv.Candidates[k]
		if slices.ContainsFunc(cs, func(c api.LeaseCandidate) bool { return !c.Expired }) {
			continue
		}
		msg := fmt.Sprintf("The Lease follows strategy %s, but has no candidate: no election can name its holder.", *l.Strategy)
		if len(cs) > 0 {
			msg = fmt.Sprintf("The Lease follows strategy %s, but %s expired: no election can name its holder.", *l.Strategy,
				plural(len(cs), "its candidate has", "all its %d candidates have"))
		}
		inv.Findings = append(inv.Findings, api.LeaseFinding{Kind: api.LeaseFindingNoLiveCandidate, Namespace: l.Namespace, Lease: l.Name,
			Message: msg})
	}
	slices.SortFunc(inv.Findings, func(a, b api.LeaseFinding) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Lease, b.Lease), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Candidate, b.Candidate))
	})
	return inv
}

// candidateExpired is the finding of an expired candidate.
func candidateExpired(c api.LeaseCandidate, now time.Time) api.LeaseFinding {
	f := api.LeaseFinding{Kind: api.LeaseFindingCandidateExpired, Namespace: c.Namespace, Lease: c.LeaseName, Candidate: c.Name}
	if c.RenewTime == nil {
		f.Message = fmt.Sprintf("Candidate %s never renewed. The election passes it over, and a LeaseCandidate collector deletes it.", c.Name)
	} else {
		f.Message = fmt.Sprintf("Candidate %s last renewed %s ago, more than %s ago. The election passes it over, and a LeaseCandidate collector deletes it.",
			c.Name, roughly(now.Sub(*c.RenewTime)), shortDuration(LeaseCandidateValidity))
	}
	return f
}

// PreferredElsewhere reports whether a Lease names a preferred holder
// that does not hold it, whether another holds it or none does.
func PreferredElsewhere(holder, preferred *string) bool {
	return preferred != nil && *preferred != "" && (holder == nil || *holder != *preferred)
}

// holderNotPreferred is the holder-not-preferred finding of a Lease, if
// it has one (see InventoryLeases).
func holderNotPreferred(f LeaseFacts, now time.Time) (api.LeaseFinding, bool) {
	l := f.Lease
	if !PreferredElsewhere(l.HolderIdentity, l.PreferredHolder) || f.PreferredSince == nil || l.LeaseDurationSeconds == nil {
		return api.LeaseFinding{}, false
	}
	holder := ""
	if l.HolderIdentity != nil {
		holder = *l.HolderIdentity
	}
	since := *f.PreferredSince
	if f.HolderSince != nil && f.HolderSince.After(since) {
		since = *f.HolderSince
	}
	limit := 2 * time.Duration(*l.LeaseDurationSeconds) * time.Second
	if now.Sub(since) <= limit {
		return api.LeaseFinding{}, false
	}
	who := holder + " holds the Lease"
	if holder == "" {
		who = "Nobody holds the Lease"
	}
	return api.LeaseFinding{Kind: api.LeaseFindingHolderNotPreferred, Namespace: l.Namespace, Lease: l.Name,
		Message: fmt.Sprintf("%s, but the election prefers %s, for %s: longer than two lease durations (%s).",
			who, *l.PreferredHolder, roughly(now.Sub(since)), shortDuration(limit))}, true
}

// roughly writes an age as a person reads it: to the second under a
// minute, else to the minute.
func roughly(d time.Duration) string {
	if d < time.Minute {
		return shortDuration(d.Truncate(time.Second))
	}
	return shortDuration(d.Truncate(time.Minute))
}

// shortDuration writes d without its zero trailing units: 30m, 1h0m5s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// plural says one when n is 1, else many with n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf(many, n)
}

// LeaseFactsOf dates a Lease's holder and preferred holder from its
// history (oldest first, every row, as HistoryOf gives it) and its holder
// changes (LeaseTimeline's). The holder is dated by its acquireTime
// when history last saw it take the Lease, else by when history saw that,
// else by the Lease's acquireTime. The preferred holder is dated by the
// oldest of the last rows that name it; not at all when the last row does
// not.
func LeaseFactsOf(l api.Lease, rows []db.HistoryEntry, changes []api.HolderChange) LeaseFacts {
	f := LeaseFacts{Lease: l, HolderSince: l.AcquireTime}
	holder := ""
	if l.HolderIdentity != nil {
		holder = *l.HolderIdentity
	}
	if n := len(changes); n > 0 && changes[n-1].Holder == holder {
		f.HolderSince = changes[n-1].Since
		if f.HolderSince == nil {
			f.HolderSince = &changes[n-1].Seen
		}
	}
	if l.PreferredHolder == nil || *l.PreferredHolder == "" {
		return f
	}
	for i := len(rows) - 1; i >= 0; i-- {
		if p := rows[i].PreferredHolder; p == nil || *p != *l.PreferredHolder {
			break
		}
		f.PreferredSince = &rows[i].Time
	}
	return f
}
