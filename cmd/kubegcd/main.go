// Command kubegcd is the kubegcd daemon and its tools; see 'kubegcd help'.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kubegcd/kubegcd/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
