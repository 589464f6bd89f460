package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

const releaseHelp = `Resumes enforcement that the blast-radius cap holds
(--blast-radius-resume=manual). The release is logged and recorded in the
audit history with the reason given. A kubegcd that holds nothing answers
409.

` + connHelp

func releaseCommand(e *env) *cobra.Command {
	var conn connFlags
	cmd := newCommand("release [--reason TEXT]", "resume enforcement held by the blast-radius cap", releaseHelp)
	conn.register(cmd.Flags())
	reason := cmd.Flags().String("reason", "", "why enforcement may resume; recorded in the audit history")
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return release(cmd.Context(), e, &conn, *reason, args) }
	return cmd
}

func release(ctx context.Context, e *env, conn *connFlags, reason string, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	c, err := conn.client(e.lookupEnv, e.stderr)
	if err != nil {
		return err
	}
	if _, err := c.Post(ctx, "/enforcement/release", map[string]string{"reason": reason}); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	fmt.Fprintln(e.stdout, "enforcement released")
	return nil
}
