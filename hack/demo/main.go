// Command demo starts a local control plane, seeds it with a small but
// realistic ownership graph, runs bin/kubegcd against it and prints where to
// look, with CLI commands to try. Ctrl-C stops everything and removes every
// file it made, and exits 0, also before the demo is up.
//
//	make demo   (bin/kubegcd-demo [--listen 127.0.0.1:8080] [--exit-after 0])
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/cli"
	"github.com/kubegcd/kubegcd/internal/testcluster"
)

const (
	readyPoll    = 100 * time.Millisecond
	readyTimeout = 2 * time.Minute
	stopGrace    = 15 * time.Second
	// demoStuckAfter is the demo's --stuck-after: short, so that the Stuck
	// page shows the deletions seed leaves unfinished when the demo is up,
	// where the default (5m) would say "Nothing is stuck." for five minutes.
	demoStuckAfter = 5 * time.Second
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080",
		"address for kubegcd's HTTP server; a free port is used if it is taken")
	exitAfter := flag.Duration("exit-after", 0, "exit this long after kubegcd is ready (0: wait for Ctrl-C)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *listen, *exitAfter, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// demo is what run has set up once kubegcd is ready.
type demo struct {
	URL     string // kubegcd's base URL
	Dir     string // the temporary directory holding everything; removed on exit
	Cluster *testcluster.Cluster
	Seeded  int // objects seed created
}

// run starts the demo and keeps it up until ctx ends or exitAfter passes.
// onReady, if not nil, is called once kubegcd is ready; an error from it ends
// the demo with that error.
func run(ctx context.Context, listen string, exitAfter time.Duration, onReady func(demo) error) (err error) {
	kubegcdBin, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "kubegcd-demo-")
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, os.RemoveAll(dir))
		fmt.Println("Removed", dir)
	}()
	// Ctrl-C before the demo is up cancels ctx, so the step under way fails:
	// that is the stop asked for, not an error (make demo would report it).
	startErr := func(err error) error {
		if errors.Is(ctx.Err(), context.Canceled) {
			fmt.Println()
			return nil
		}
		return err
	}

	fmt.Println("Starting a local control plane (etcd + kube-apiserver)…")
	cluster, err := testcluster.Start(ctx, testcluster.Options{Dir: filepath.Join(dir, "cluster")})
	if err != nil {
		return startErr(err)
	}
	defer func() {
		fmt.Println("Stopping the control plane…")
		err = errors.Join(err, cluster.Stop())
	}()

	fmt.Println("Seeding demo objects…")
	n, err := seed(ctx, cluster.Config)
	if err != nil {
		return startErr(fmt.Errorf("seed: %w", err))
	}
	fmt.Printf("  created %d objects\n", n)
	seeded := time.Now()

	addr, err := listenAddr(listen)
	if err != nil {
		return err
	}
	d, logPath, err := startKubegcd(kubegcdBin, cluster.Kubeconfig, dir, addr)
	if err != nil {
		return err
	}
	ready := false
	defer func() {
		fmt.Println("Stopping kubegcd…")
		stopErr := d.Stop(stopGrace)
		// Stopped while starting, kubegcd dies of SIGTERM or exits 1
		// ("context canceled"): Ctrl-C then is no failure of the demo.
		var exit *exec.ExitError
		if !ready && errors.As(stopErr, &exit) {
			stopErr = nil
		}
		err = errors.Join(err, stopErr)
	}()

	base := "http://" + addr
	if err := d.WaitReady(ctx, base+"/readyz", readyPoll, readyTimeout); err != nil {
		return startErr(err)
	}
	ready = true
	// The Stuck page lists a deletion once it is older than --stuck-after:
	// the URL comes when the seeded ones are, so the first screen shows them.
	select {
	case <-ctx.Done():
		return startErr(ctx.Err())
	case <-time.After(time.Until(seeded.Add(demoStuckAfter))):
	}
	if onReady != nil {
		if err := onReady(demo{URL: base, Dir: dir, Cluster: cluster, Seeded: n}); err != nil {
			return err
		}
	}

	printWhereToLook(base, cluster.Kubeconfig, logPath, kubegcdBin)
	return waitForExit(ctx, exitAfter, d, logPath)
}

// startKubegcd starts kubegcd against the demo's cluster, listening on
// addr, and returns it with the path of its log.
func startKubegcd(bin, kubeconfig, dir, addr string) (*testcluster.Kubegcd, string, error) {
	logPath := filepath.Join(dir, "kubegcd.log")
	rulesDir := filepath.Join(dir, "rules.d")
	if err := writeDemoRules(rulesDir); err != nil {
		return nil, logPath, err
	}
	fmt.Printf("Starting kubegcd (log: %s)…\n", logPath)
	d, err := testcluster.StartKubegcd(bin, logPath,
		"run", "--kubeconfig", kubeconfig, "--db", filepath.Join(dir, "kubegcd.db"),
		"--listen", addr, "--log-level", "info", "--rules-dir", rulesDir,
		fmt.Sprintf("--terminated-pod-gc-threshold=%d", demoTerminatedThreshold),
		"--stuck-after", demoStuckAfter.String())
	return d, logPath, err
}

// printWhereToLook prints the UI's URLs, the kubeconfig and kubegcd's log,
// and the CLI commands to try.
func printWhereToLook(base, kubeconfig, logPath, bin string) {
	fmt.Printf(`
kubegcd is running against a local control plane.
  UI:         %[1]s/
  stuck:      %[1]s/#/stuck   `+
		`(deletions older than %[4]s: the demo runs kubegcd with --stuck-after %[4]s, the default is 5m)
  status:     %[1]s/status
  kubeconfig: %[2]s   (kubectl --kubeconfig %[2]s get cm -A)
  log:        %[3]s

Try the CLI on the seeded objects:
`, base, kubeconfig, logPath, demoStuckAfter)
	for _, c := range tryCommands(base) {
		fmt.Printf("  %s %s\n", displayPath(bin), strings.Join(c, " "))
	}
	fmt.Println()
}

// waitForExit keeps the demo up until ctx ends or exitAfter passes. It
// fails if kubegcd exits first.
func waitForExit(ctx context.Context, exitAfter time.Duration, d *testcluster.Kubegcd, logPath string) error {
	var timeout <-chan time.Time
	if exitAfter > 0 {
		fmt.Printf("Exiting after %s (--exit-after); Ctrl-C stops earlier; everything is removed on exit.\n\n", exitAfter)
		timeout = time.After(exitAfter)
	} else {
		fmt.Print("Press Ctrl-C to stop; everything is removed on exit.\n\n")
	}
	select {
	case <-ctx.Done():
		fmt.Println()
	case <-timeout:
	case <-d.Done():
		return fmt.Errorf("kubegcd exited unexpectedly (%w); see %s", d.Err(), logPath)
	}
	return nil
}

// tryCommands are the CLI commands the demo suggests, each about objects
// seed made, with --server unless kubegcd listens where the CLI looks by
// default.
func tryCommands(base string) [][]string {
	cmds := [][]string{
		{"status"},
		{"get", "pending"},
		{"get", "stuck"},
		{"get", "unused", "-n", "demo-cleanup"},
		{"why", "cm/child-of-deleted", "-n", "demo-garbage"},
		{"tree", "rs/web-7c9d8b5f4", "-n", "demo-shop"},
		{"cascade", "deploy/web", "-n", "demo-shop", "--propagation", "foreground"},
	}
	if base != cli.DefaultServer {
		for i := range cmds {
			cmds[i] = append(cmds[i], "--server", base)
		}
	}
	return cmds
}

// displayPath shows path relative to the working directory (bin/kubegcd
// under make demo) when it lies below it.
func displayPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// listenAddr returns addr if it can be bound, else a free port on its host.
func listenAddr(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err == nil {
		l.Close()
		return addr, nil
	}
	host, _, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		return "", fmt.Errorf("--listen %q: %w", addr, splitErr)
	}
	l, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return "", fmt.Errorf("--listen %s: %w", addr, err)
	}
	defer l.Close()
	free := l.Addr().String()
	fmt.Printf("  %s is not available (%v); using %s\n", addr, err, free)
	return free, nil
}
