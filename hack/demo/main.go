// Command demo starts a local control plane, seeds it with a small but
// realistic ownership graph, runs bin/kubegcd against it and prints where to
// look. Ctrl-C stops everything and removes every file it made.
//
//	go run ./hack/demo [-listen 127.0.0.1:8080] [-exit-after 0]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

const (
	readyTimeout = 2 * time.Minute
	stopGrace    = 15 * time.Second
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address for kubegcd's HTTP server; a free port is used if it is taken")
	exitAfter := flag.Duration("exit-after", 0, "exit this long after kubegcd is ready (0: wait for Ctrl-C)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "demo: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *listen, *exitAfter)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, listen string, exitAfter time.Duration) (err error) {
	binDir, err := testcluster.BinDir()
	if err != nil {
		return err
	}
	kubegcdBin := filepath.Join(binDir, "kubegcd")
	if _, err := os.Stat(kubegcdBin); err != nil {
		return fmt.Errorf("%w (run `make build`)", err)
	}

	dir, err := os.MkdirTemp("", "kubegcd-demo-")
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, os.RemoveAll(dir))
		fmt.Println("Removed", dir)
	}()

	fmt.Println("Starting a local control plane (etcd + kube-apiserver)…")
	cluster, err := testcluster.Start(ctx, testcluster.Options{
		BinDir: binDir,
		Dir:    filepath.Join(dir, "cluster"),
		Logf:   func(format string, args ...any) { fmt.Printf("  "+format+"\n", args...) },
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping the control plane…")
		err = errors.Join(err, cluster.Stop())
	}()

	fmt.Println("Seeding demo objects…")
	n, err := seed(ctx, cluster.Config)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	fmt.Printf("  created %d objects\n", n)

	addr, err := listenAddr(listen)
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "kubegcd.log")
	fmt.Printf("Starting kubegcd (log: %s)…\n", logPath)
	d, err := startDaemon(kubegcdBin, logPath,
		"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, "kubegcd.db"),
		"--listen", addr, "--log-level", "info")
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping kubegcd…")
		err = errors.Join(err, d.stop(stopGrace))
	}()

	base := "http://" + addr
	if err := d.waitReady(ctx, base+"/readyz", readyTimeout); err != nil {
		return err
	}

	fmt.Printf(`
kubegcd is running against a local control plane.
  UI:         %[1]s/
  status:     %[1]s/status
  kubeconfig: %[2]s   (kubectl --kubeconfig %[2]s get cm -A)
  log:        %[3]s
`, base, cluster.Kubeconfig, logPath)
	var timeout <-chan time.Time
	if exitAfter > 0 {
		fmt.Printf("Exiting after %s (-exit-after); Ctrl-C stops earlier; everything is removed on exit.\n\n", exitAfter)
		timeout = time.After(exitAfter)
	} else {
		fmt.Print("Press Ctrl-C to stop; everything is removed on exit.\n\n")
	}

	select {
	case <-ctx.Done():
		fmt.Println()
	case <-timeout:
	case <-d.done:
		return fmt.Errorf("kubegcd exited unexpectedly (%v); see %s", d.waitErr, logPath)
	}
	return nil
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
		return "", fmt.Errorf("-listen %q: %w", addr, splitErr)
	}
	l, err2 := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err2 != nil {
		return "", fmt.Errorf("-listen %s: %w", addr, err)
	}
	defer l.Close()
	free := l.Addr().String()
	fmt.Printf("  %s is not available (%v); using %s\n", addr, err, free)
	return free, nil
}

// daemon is a kubegcd child process whose output goes to a log file.
type daemon struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited; waitErr is then set
	waitErr error
}

func startDaemon(bin, logPath string, args ...string) (*daemon, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Die with the demo, and stay out of the terminal's process group so
		// Ctrl-C reaches only the demo, which then stops kubegcd in order.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start kubegcd: %w", err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		d.waitErr = cmd.Wait()
		logFile.Close()
		close(d.done)
	}()
	return d, nil
}

// waitReady polls url until it answers 200, the daemon exits, ctx ends or
// timeout passes.
func (d *daemon) waitReady(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil); err == nil {
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		select {
		case <-d.done:
			return fmt.Errorf("kubegcd exited before it was ready (%v)", d.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("kubegcd not ready at %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM, escalates to SIGKILL after grace, and waits. An exit
// before stop was called is reported as an error.
func (d *daemon) stop(grace time.Duration) error {
	select {
	case <-d.done:
		return fmt.Errorf("kubegcd had exited (%v)", d.waitErr)
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		var exitErr *exec.ExitError
		if errors.As(d.waitErr, &exitErr) {
			return fmt.Errorf("kubegcd: %w", d.waitErr)
		}
		return nil
	case <-time.After(grace):
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	return fmt.Errorf("kubegcd did not stop within %s after SIGTERM; killed", grace)
}
