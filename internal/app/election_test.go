package app

import (
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/leader"
)

// TestCoordinatedFlagConflicts: --leader-elect-coordinated without leader
// election is a usage error, in one line.
func TestCoordinatedFlagConflicts(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // "": accepted
	}{
		{"enforcing", []string{"--dry-run=false", "--leader-elect-coordinated"}, ""},
		{"off by default", []string{"--dry-run=false"}, ""},
		{"dry-run", []string{"--leader-elect-coordinated"},
			"kubegcd: invalid --leader-elect-coordinated: dry-run runs no leader election (it writes nothing, a Lease included); add --dry-run=false"},
		{"no leader election", []string{"--dry-run=false", "--leader-elect=false", "--leader-elect-coordinated"},
			"kubegcd: invalid --leader-elect-coordinated: it needs leader election, which --leader-elect=false turns off"},
	}
	for _, tc := range tests {
		cfg, err := parseRunFlags(tc.args...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && cfg.leader.Coordinated != strings.Contains(strings.Join(tc.args, " "), "coordinated"):
			t.Errorf("%s: coordinated = %v", tc.name, cfg.leader.Coordinated)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: err = %v\nwant  %s", tc.name, err, tc.want)
		}
	}
}

// TestCoordinatedStatus: /status says the election is coordinated only
// where this instance stands as a candidate.
func TestCoordinatedStatus(t *testing.T) {
	for _, tc := range []struct {
		name           string
		dryRun, flag   bool
		wantCoordinate bool
	}{
		{"coordinated", false, true, true},
		{"not asked for", false, false, false},
		{"dry-run: no election", true, true, false},
	} {
		cfg := &runConfig{dryRun: tc.dryRun, leader: leader.Config{Enabled: true, Coordinated: tc.flag}}
		if got := leader.New(electionConfig(cfg), "me").Coordinated(); got != tc.wantCoordinate {
			t.Errorf("%s: coordinated = %v, want %v", tc.name, got, tc.wantCoordinate)
		}
	}
}
