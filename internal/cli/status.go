package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
)

const statusHelp = `Shows what kubegcd is doing: its version, whether the mirror is synced,
whether it enforces or only records (dry-run) and whether enforcement is
paused and why, the leader (and, under coordinated leader election, the
strategy and the candidates the API server elects from), and each running controller: its last pass,
whether it skips them, and for ownergc and svgc, which work from queues,
the queue's depth and when an item was last finished. -o wide adds
the resources mirrored with their object counts; -o json or yaml prints the
API's /status answer.

` + connHelp

func statusCommand(e *env) *cobra.Command {
	var conn connFlags
	var output string
	cmd := newCommand("status [-o text|wide|json|yaml]", "mode, leader, mirror and controllers", statusHelp)
	conn.register(cmd.Flags())
	registerOutput(cmd, &output, "text", outWide, outJSON, outYAML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return status(cmd.Context(), e, &conn, output, args) }
	return cmd
}

func status(ctx context.Context, e *env, conn *connFlags, output string, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	c, err := conn.client(e.lookupEnv, e.stderr)
	if err != nil {
		return err
	}
	var st api.Status
	body, err := c.GetJSON(ctx, "/status", nil, &st)
	if err != nil {
		return err
	}
	if output == outJSON || output == outYAML {
		return printRaw(e.stdout, output, body)
	}
	return printStatus(e.stdout, &st, redacted(c.Server), output == outWide, e.now())
}

func printStatus(w io.Writer, st *api.Status, server string, wide bool, now time.Time) error {
	synced := "synced"
	if !st.Synced {
		synced = "not synced yet"
	}
	printf(w, "kubegcd %s at %s, up %s\n", st.Version, server, age(&st.StartedAt, now))
	fmt.Fprintf(w, "Mirror:      %s, %s in %s\n", synced, count(st.Objects, "object", "objects"),
		count(len(st.Resources), "resource", "resources"))
	if en := st.Enforcement; en != nil {
		mode := "enforcing"
		if en.DryRun {
			mode = "dry-run (records what it would do, writes nothing)"
		}
		if en.Paused {
			mode += fmt.Sprintf("; PAUSED by %s since %s", strings.Join(en.PausedBy, ", "), ago(en.PausedSince, now))
			if en.PausedReason != "" {
				mode += ": " + en.PausedReason
			}
		}
		printf(w, "Mode:        %s\n", mode)
		fmt.Fprintf(w, "Writes:      %d in the last minute, cap %d a minute\n", en.WritesLastMinute, en.MaxDeletionsPerMinute)
	}
	if le := st.LeaderElection; le != nil {
		switch {
		case !le.Enabled:
			printf(w, "Leader:      no election (%s)\n", le.Reason)
		case le.Leader:
			printf(w, "Leader:      this instance (%s)\n", le.Identity)
		default:
			printf(w, "Leader:      %s since %s; this instance is %s\n", orNone(le.Holder), ago(le.HolderSince, now), le.Identity)
		}
		if le.Coordinated {
			printf(w, "Election:    %s\n", election(le))
		}
	}
	if len(st.Controllers) > 0 {
		fmt.Fprintln(w, "\nControllers:")
		t := newTable("  NAME", "LAST PASS", "SKIPPING", "SKIPPED PASSES", "QUEUE", "LAST WORK")
		for _, c := range st.Controllers {
			skipping := "no"
			if c.Skipping {
				skipping = "yes: " + c.SkipReason
			}
			queue, work := "<none>", "<none>"
			if c.QueueDepth != nil {
				queue, work = strconv.Itoa(*c.QueueDepth), ago(c.LastWork, now)
			}
			t.add("  "+string(c.Name), ago(c.LastPass, now), skipping, strconv.FormatInt(c.SkippedPasses, 10), queue, work)
		}
		if err := t.print(w); err != nil {
			return err
		}
	}
	if !wide {
		return nil
	}
	fmt.Fprintln(w, "\nResources:")
	t := newTable("  RESOURCE", "KIND", "VERSION", "SYNCED", "OBJECTS")
	for _, r := range st.Resources {
		name := r.Resource
		if r.Group != "" {
			name += "." + r.Group
		}
		t.add("  "+name, r.Kind, r.Version, strconv.FormatBool(r.Synced), strconv.FormatInt(r.Objects, 10))
	}
	return t.print(w)
}

// election is the line of a coordinated election: the API server names
// the holder by the strategy, among the candidates.
func election(le *api.LeaderStatus) string {
	var cands []string
	for _, c := range le.Candidates {
		s := c.Name + " (" + c.EmulationVersion
		if c.Self {
			s += ", this instance"
		}
		cands = append(cands, s+")")
	}
	line := "coordinated by the API server, strategy " + orNone(le.Strategy) + "; candidates: " + orNone(strings.Join(cands, ", "))
	if le.PreferredHolder != "" {
		line += "; preferred holder: " + le.PreferredHolder
	}
	return line
}
