package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// daemon is a child process whose output goes to a log file.
type daemon struct {
	cmd     *exec.Cmd
	logPath string
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
	// Die with the benchmark; own process group so Ctrl-C reaches only the
	// benchmark, which then stops the child in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	d := &daemon{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		d.waitErr = cmd.Wait()
		logFile.Close()
		close(d.done)
	}()
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// waitReady polls url every interval until it answers 200, the process exits,
// ctx ends or timeout passes.
func (d *daemon) waitReady(ctx context.Context, url string, interval, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(interval)
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
			return fmt.Errorf("kubegcd exited before it was ready (%v); see %s", d.waitErr, d.logPath)
		case <-ctx.Done():
			return fmt.Errorf("kubegcd not ready at %s: %w; see %s", url, ctx.Err(), d.logPath)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM, escalates to SIGKILL after grace, and waits. An exit
// before stop was called, or a failing exit status, is an error.
func (d *daemon) stop(grace time.Duration) error {
	select {
	case <-d.done:
		return fmt.Errorf("kubegcd had exited (%v); see %s", d.waitErr, d.logPath)
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		if d.waitErr != nil {
			return fmt.Errorf("kubegcd: %w; see %s", d.waitErr, d.logPath)
		}
		return nil
	case <-time.After(grace):
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	return fmt.Errorf("kubegcd did not stop within %s of SIGTERM; killed", grace)
}

// memory is a process's resident set size now and at its peak, in bytes.
type memory struct {
	RSS, HWM uint64
}

// readMemory reads VmRSS and VmHWM from /proc/PID/status.
func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(value) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return memory{}, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, key, sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, key, err)
		}
		if key == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.HWM = kb << 10
		}
		seen++
	}
	if seen != 2 {
		return memory{}, fmt.Errorf("/proc/%d/status: no VmRSS/VmHWM (process gone?)", pid)
	}
	return m, nil
}

// findProcess returns the PID of the one running process whose executable is
// named name and whose command line contains arg.
func findProcess(name, arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a kernel thread
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if filepath.Base(args[0]) == name && slices.Contains(args[1:], arg) {
			found = append(found, pid)
		}
	}
	switch len(found) {
	case 0:
		return 0, fmt.Errorf("no %s process with %s", name, arg)
	case 1:
		return found[0], nil
	default:
		return 0, fmt.Errorf("%d %s processes with %s: %v", len(found), name, arg, found)
	}
}

// lastLog returns the path of dir/prefix-N.log with the highest N.
func lastLog(dir, prefix string) (string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, prefix+"-*.log"))
	if err != nil {
		return "", err
	}
	last, lastN := "", -1
	for _, p := range paths {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), prefix+"-"), ".log"))
		if err == nil && n > lastN {
			last, lastN = p, n
		}
	}
	if last == "" {
		return "", fmt.Errorf("no %s-N.log in %s", prefix, dir)
	}
	return last, nil
}
