package app

import (
	"errors"
	"fmt"

	"github.com/kubegcd/kubegcd/internal/leader"
)

// electionConfig is leader election as the flags ask for it. This
// instance runs for the Lease when enforcing with --leader-elect. Else it
// writes freely (enforcing) or not at all (dry-run, whose applier writes
// nothing anyway).
func electionConfig(cfg *runConfig) leader.Config {
	c := cfg.leader
	c.Enabled = c.Enabled && !cfg.dryRun
	c.Coordinated = c.Enabled && c.Coordinated
	c.Version = version()
	return c
}

// noElectionReason says, for /status, why this instance runs no election;
// "" when it runs one.
func noElectionReason(cfg *runConfig) string {
	switch {
	case cfg.dryRun:
		return "dry-run writes nothing to the cluster, a Lease included: " +
			"every dry-run instance decides on its own"
	case !cfg.leader.Enabled:
		return "--leader-elect=false: this instance writes without a lease"
	}
	return ""
}

// validateLeader checks leader election's settings. A timing is compared with
// the one it builds on only when that one is valid.
func validateLeader(l leader.Config) []error {
	var errs []error
	if l.Namespace == "" || l.Name == "" {
		errs = append(errs, errors.New("invalid --leader-elect-namespace/--leader-elect-name: "+
			"must not be empty"))
	}
	if l.RetryPeriod <= 0 {
		errs = append(errs, fmt.Errorf("invalid --leader-elect-retry-period %s: must be positive",
			l.RetryPeriod))
		return errs
	}
	if float64(l.RenewDeadline) <= 1.2*float64(l.RetryPeriod) {
		errs = append(errs, fmt.Errorf("invalid --leader-elect-renew-deadline %s: "+
			"must be more than 1.2 × --leader-elect-retry-period (%s)", l.RenewDeadline, l.RetryPeriod))
	}
	switch {
	case l.LeaseDuration <= l.RenewDeadline:
		errs = append(errs, fmt.Errorf("invalid --leader-elect-lease-duration %s: "+
			"must be more than --leader-elect-renew-deadline (%s)", l.LeaseDuration, l.RenewDeadline))
	case l.LeaseDuration-leader.FenceMargin(l.LeaseDuration) <= 2*l.RetryPeriod:
		errs = append(errs, fmt.Errorf("invalid --leader-elect-lease-duration %s: "+
			"a leader writes only within the lease duration less %s of a renewal, "+
			"which must leave more than two --leader-elect-retry-period (%s)",
			l.LeaseDuration, leader.FenceMargin(l.LeaseDuration), l.RetryPeriod))
	}
	return errs
}

// validateCoordinated checks --leader-elect-coordinated against the flags
// that would leave it nothing to coordinate.
func validateCoordinated(l leader.Config, dryRun bool) []error {
	var errs []error
	if !l.Enabled {
		errs = append(errs, errors.New("invalid --leader-elect-coordinated: "+
			"it needs leader election, which --leader-elect=false turns off"))
	}
	if dryRun {
		errs = append(errs, errors.New("invalid --leader-elect-coordinated: "+
			"dry-run runs no leader election (it writes nothing, a Lease included); add --dry-run=false"))
	}
	return errs
}
