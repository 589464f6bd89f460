package cli

import (
	"context"
	"fmt"
)

const releaseHelp = `Resumes enforcement that the blast-radius cap holds
(--blast-radius-resume=manual). The release is logged and recorded in the
audit history with the reason given. A kubegcd that holds nothing answers
409.

` + connHelp

func runRelease(ctx context.Context, e *env, args []string) error {
	var conn connFlags
	fs := e.flagSet("release", "release [--reason TEXT]", releaseHelp)
	conn.register(fs)
	reason := fs.String("reason", "", "why enforcement may resume; recorded in the audit history")
	args, err := parse(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	c, err := conn.client(e.lookupEnv, e.stderr)
	if err != nil {
		return err
	}
	if _, err := c.Post(ctx, "/enforcement/release", map[string]string{"reason": *reason}); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	fmt.Fprintln(e.stdout, "enforcement released")
	return nil
}
