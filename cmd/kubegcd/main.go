// Command kubegcd is the kubegcd daemon and its tools; see 'kubegcd help'.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	// Rule schedules name time zones (CRON_TZ=); a host without tzdata
	// still reads them.
	_ "time/tzdata"

	"github.com/kubegcd/kubegcd/internal/app"
	"github.com/kubegcd/kubegcd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	var code int
	if cli.InvokedAsPlugin(os.Args[0]) {
		// kubectl runs kubectl-gc for `kubectl gc`: the client alone.
		code = cli.Main(ctx, "kubectl gc", os.Args[1:], os.Stdout, os.Stderr, app.Local)
	} else {
		code = app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}
