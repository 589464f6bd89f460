package http

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// TestElectionCandidates: /status shows each candidate of the mirror with
// its versions and times, and marks the answering instance's own.
func TestElectionCandidates(t *testing.T) {
	renewed, pinged := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC)
	row := func(name, version string, renew, ping *time.Time) db.LeaseCandidateRow {
		return db.LeaseCandidateRow{Namespace: "kube-system", Name: name, UID: "uid-" + name, LeaseCandidate: db.LeaseCandidate{
			LeaseName: "kubegcd", BinaryVersion: version, EmulationVersion: version, Strategy: "OldestEmulationVersion",
			RenewTime: renew, PingTime: ping}}
	}
	tests := []struct {
		name string
		rows []db.LeaseCandidateRow
		want []api.ElectionCandidate
	}{
		{"none", nil, nil},
		{"two, one of them this instance's", []db.LeaseCandidateRow{row("a_1", "0.1.0", &renewed, &pinged), row("b_2", "0.2.0", nil, nil)},
			[]api.ElectionCandidate{
				{Name: "a_1", BinaryVersion: "0.1.0", EmulationVersion: "0.1.0", Strategy: "OldestEmulationVersion", RenewTime: &renewed, PingTime: &pinged},
				{Name: "b_2", BinaryVersion: "0.2.0", EmulationVersion: "0.2.0", Strategy: "OldestEmulationVersion", Self: true},
			}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, ElectionCandidates(tc.rows, "b_2")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
