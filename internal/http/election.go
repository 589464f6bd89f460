package http

import (
	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// ElectionCandidates are the mirror's candidates of kubegcd's Lease as
// /status shows them; self is the identity of the instance that answers.
func ElectionCandidates(rows []db.LeaseCandidateRow, self string) []api.ElectionCandidate {
	var out []api.ElectionCandidate
	for _, r := range rows {
		out = append(out, api.ElectionCandidate{Name: r.Name, BinaryVersion: r.BinaryVersion, EmulationVersion: r.EmulationVersion,
			Strategy: r.Strategy, RenewTime: r.RenewTime, PingTime: r.PingTime, Self: r.Name == self})
	}
	return out
}
