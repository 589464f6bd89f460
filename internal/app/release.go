package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/kubegcd/kubegcd/internal/cli"
)

// releaseCommand is `kubegcd release`: it ends a manual hold of the
// blast-radius cap through the daemon's API.
func releaseCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kubegcd release", flag.ContinueOnError)
	server := fs.String("server", "http://127.0.0.1:8080", "URL of the kubegcd to release (its --listen address)")
	reason := fs.String("reason", "", "why enforcement may resume; recorded in the audit history")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: kubegcd release [--server URL] [--reason TEXT]\n\n"+
			"Resumes enforcement that the blast-radius cap holds (--blast-radius-resume=manual).\n"+
			"The release is logged and recorded in the audit history.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "kubegcd: %v (see 'kubegcd help release')\n", err)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kubegcd: unexpected argument %q (see 'kubegcd help release')\n", fs.Arg(0))
		return exitUsage
	}
	if err := cli.Release(ctx, &http.Client{Timeout: 30 * time.Second}, *server, *reason); err != nil {
		fmt.Fprintln(stderr, "kubegcd: release:", err)
		return exitError
	}
	fmt.Fprintln(stdout, "enforcement released")
	return exitOK
}
