package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/kubegcd/kubegcd/internal/db"
	"github.com/kubegcd/kubegcd/internal/ingest"
	"github.com/kubegcd/kubegcd/internal/leader"
	"github.com/kubegcd/kubegcd/internal/liveness"
	"github.com/kubegcd/kubegcd/internal/reconcile"
)

// systemd speaks systemd's notify protocol (Type=notify): READY=1 once the
// database is open and the API serves, STATUS= when what kubegcd does
// changes, WATCHDOG=1 while its loops are alive (WatchdogSec=), STOPPING=1
// when it stops. Without NOTIFY_SOCKET (not under systemd) it does nothing.
type systemd struct {
	log      *slog.Logger
	status   func() sdState
	alive    func(context.Context) error
	watchdog time.Duration // WatchdogSec=; 0 when off
	send     func(state string) error
}

// newSystemd returns nil when kubegcd does not run under a notify socket.
func newSystemd(logger *slog.Logger, status func() sdState, alive func(context.Context) error) *systemd {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil
	}
	s := &systemd{log: logger, status: status, alive: alive, send: func(state string) error {
		_, err := daemon.SdNotify(false, state)
		return err
	}}
	wd, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		logger.Warn("systemd watchdog: ignoring WATCHDOG_USEC", "err", err)
	}
	s.watchdog = wd
	return s
}

func (s *systemd) notify(state string) {
	if err := s.send(state); err != nil {
		s.log.Warn("systemd notify socket", "state", strings.ReplaceAll(state, "\n", " "), "err", err)
	}
}

// run says READY=1, then keeps STATUS= current and pings the watchdog
// until ctx ends, when it says STOPPING=1.
func (s *systemd) run(ctx context.Context) {
	var wedged error
	line := func() string {
		if wedged != nil {
			return "wedged, no watchdog pings: " + wedged.Error() + "; " + s.status().String()
		}
		return s.status().String()
	}
	status := line()
	s.notify(daemon.SdNotifyReady + "\nSTATUS=" + status)
	// The state lives in memory (the mirror's, the applier's and the
	// election's); reading it each second is cheap, and a line is sent
	// only when it changes.
	statusTick := time.NewTicker(time.Second)
	defer statusTick.Stop()
	var pings <-chan time.Time
	if s.watchdog > 0 {
		// systemd kills kubegcd when no ping came for s.watchdog. Checks
		// and pings every third of it leave room for a slow check.
		t := time.NewTicker(s.watchdog / 3)
		defer t.Stop()
		pings = t.C
		s.log.Info("systemd watchdog on: pinging while the loops are alive", "watchdog_sec", s.watchdog)
	}
	for {
		select {
		case <-ctx.Done():
			s.notify(daemon.SdNotifyStopping + "\nSTATUS=stopping")
			return
		case <-statusTick.C:
			if now := line(); now != status {
				status = now
				s.notify("STATUS=" + status)
			}
		case <-pings:
			checkCtx, cancel := context.WithTimeout(ctx, s.watchdog/3)
			err := s.alive(checkCtx)
			cancel()
			if ctx.Err() != nil {
				continue // stopping: the next turn says so
			}
			switch {
			case err != nil && wedged == nil:
				// No ping: systemd kills and restarts kubegcd unless the
				// loops come back first.
				s.log.Error("systemd watchdog: a loop is wedged; "+
					"not pinging, so that systemd restarts kubegcd", "err", err)
			case err == nil && wedged != nil:
				s.log.Info("systemd watchdog: the loops are alive again; pinging")
			}
			wedged = err
			if err == nil {
				s.notify(daemon.SdNotifyWatchdog)
			}
			if now := line(); now != status {
				status = now
				s.notify("STATUS=" + status)
			}
		}
	}
}

// sdState is what STATUS= says of kubegcd.
type sdState struct {
	resources, live int      // watched resources, and how many have a live mirror
	dryRun          bool     //
	pausedBy        []string // the applier's pause causes
	election        bool     // false in dry-run or with --leader-elect=false
	leading         bool
	holder          string // the lease's holder, as last seen
}

// String is the line, e.g. "mirror live: 42 resources; enforcing; leader".
func (s sdState) String() string {
	var parts []string
	switch {
	case s.resources == 0:
		parts = append(parts, "discovering API resources")
	case s.live < s.resources:
		parts = append(parts, fmt.Sprintf("syncing the mirror: %d of %d resources live", s.live, s.resources))
	default:
		parts = append(parts, fmt.Sprintf("mirror live: %d resources", s.resources))
	}
	switch {
	case s.dryRun:
		parts = append(parts, "dry-run")
	case len(s.pausedBy) > 0:
		why := make([]string, len(s.pausedBy))
		for i, by := range s.pausedBy {
			why[i] = pauseCauses[by]
			if why[i] == "" {
				why[i] = by
			}
		}
		parts = append(parts, "enforcement paused ("+strings.Join(why, "; ")+")")
	default:
		parts = append(parts, "enforcing")
	}
	switch {
	case s.dryRun: // no election: dry-run writes nothing, a Lease included
	case !s.election:
		parts = append(parts, "no leader election")
	case s.leading:
		parts = append(parts, "leader")
	case s.holder != "":
		parts = append(parts, "follower of "+s.holder)
	default:
		parts = append(parts, "follower")
	}
	return strings.Join(parts, "; ")
}

// pauseCauses says the applier's pause causes in words.
var pauseCauses = map[string]string{
	"audit-store":  "the audit history cannot be written",
	"blast-radius": "the blast-radius cap",
}

// sdStateOf reads the state of the running parts.
func sdStateOf(ing *ingest.Ingester, applier *reconcile.Applier, lead *leader.Elector) sdState {
	var s sdState
	for _, r := range ing.Resources() {
		s.resources++
		if r.Synced {
			s.live++
		}
	}
	st := applier.Status()
	s.dryRun, s.pausedBy = st.DryRun, st.PausedBy
	s.election, s.leading = lead.Enabled(), lead.Leading()
	s.holder, _ = lead.Holder()
	return s
}

// aliveCheck is the watchdog's check: every loop made progress recently
// and the database writer answers.
func aliveCheck(loops *liveness.Registry, store *db.DB) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := loops.Check(); err != nil {
			return err
		}
		return store.WriterAlive(ctx)
	}
}
