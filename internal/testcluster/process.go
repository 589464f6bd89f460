package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a process gets to exit after SIGTERM before SIGKILL.
const stopGrace = 10 * time.Second

// process is a running control-plane binary whose output goes to a log file.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and waitErr is set
	waitErr error

	// stop terminates the process and waits for it; it is a sync.OnceValue so
	// that Cluster.Stop and a caller's own stop func can both call it safely.
	stop func() error
}

// startProcess launches bin with args, appending its stdout/stderr to logPath.
// exec.Command rather than CommandContext: the process must outlive the ctx of
// whatever call started it, and is ended explicitly by stop.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// A marker makes restarts distinguishable when the same log is appended to.
	fmt.Fprintf(logFile, "=== %s starting %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Kill the child if the test binary dies without running Stop (e.g. on
		// a go test -timeout panic or SIGKILL), so no etcd/apiserver leaks.
		// Pdeathsig fires when the spawning OS thread exits; Go only retires
		// threads of goroutines that exit while LockOSThread'ed, which the
		// callers of this package do not do.
		Pdeathsig: syscall.SIGKILL,
		// Own process group, so signals sent to the test's group (Ctrl-C)
		// do not race with our orderly shutdown, and kill(-pgid) reaches any
		// children the binary spawns.
		Setpgid: true,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	p.stop = sync.OnceValue(p.terminate)
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// terminate sends SIGTERM, escalates to SIGKILL after stopGrace, and waits for
// the exit. Exiting because of our signal is success; having exited on its own
// before being asked to stop is reported as an error, since it means the
// component crashed while a test relied on it.
func (p *process) terminate() error {
	if p.exited() {
		return fmt.Errorf("%s exited unexpectedly (%w); log tail:\n%s", p.name, p.waitErr, tailFile(p.logPath, 20))
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	return nil
}

// tailFile returns the last n lines of the file at path, reading backwards in
// chunks so that large apiserver logs from benchmarks are not read whole.
func tailFile(path string, n int) string {
	if n <= 0 {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	const chunk = 64 << 10
	var buf []byte
	// Stop once there are more than n newlines: the last n lines are then
	// complete even if the first buffered line is partial.
	for off := st.Size(); off > 0 && bytes.Count(buf, []byte{'\n'}) <= n; {
		size := min(chunk, off)
		off -= size
		b := make([]byte, size)
		if _, err := f.ReadAt(b, off); err != nil {
			return fmt.Sprintf("(%v)\n", err)
		}
		buf = append(b, buf...)
	}
	if len(buf) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
