package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// KubegcdBin returns the path of the kubegcd binary, which `make build` puts
// next to the control-plane binaries in BinDir().
func KubegcdBin() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "kubegcd")
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("kubegcd not found in %s (run `make build`): %w", dir, err)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file (run `make build`)", p)
	}
	return p, nil
}

// Kubegcd is a kubegcd child process whose output goes to a log file. Like
// the control-plane processes it dies with its parent and has its own process
// group, so Ctrl-C reaches only the parent, which then stops it in order.
type Kubegcd struct {
	// LogPath is the file the process's stdout and stderr are appended to.
	LogPath string

	p *process
}

// StartKubegcd runs bin with args (e.g. "run", "--kubeconfig", …), appending
// its output to logPath. The process outlives any context; end it with Stop
// or Kill.
func StartKubegcd(bin, logPath string, args ...string) (*Kubegcd, error) {
	p, err := startProcess("kubegcd", bin, args, logPath)
	if err != nil {
		return nil, err
	}
	return &Kubegcd{LogPath: logPath, p: p}, nil
}

// Pid is the process's ID.
func (k *Kubegcd) Pid() int { return k.p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (k *Kubegcd) Done() <-chan struct{} { return k.p.done }

// Err is the process's wait error (nil for exit status 0) once Done is
// closed, and nil before.
func (k *Kubegcd) Err() error {
	if !k.p.exited() {
		return nil
	}
	return k.p.waitErr
}

// WaitReady polls url every interval until it answers 200, the process exits,
// ctx ends or timeout passes.
func (k *Kubegcd) WaitReady(ctx context.Context, url string, interval, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
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
		case <-k.p.done:
			return fmt.Errorf("kubegcd exited before it was ready (%w); see %s", k.p.waitErr, k.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("kubegcd not ready at %s: %w; see %s", url, ctx.Err(), k.LogPath)
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM, escalates to SIGKILL after grace, and waits. Having
// exited before Stop was called, a failing exit status (kubegcd exits 0 on
// SIGTERM) and needing SIGKILL are errors.
func (k *Kubegcd) Stop(grace time.Duration) error {
	if err := k.exitedEarly(); err != nil {
		return err
	}
	_ = k.p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.p.done:
		if k.p.waitErr != nil {
			return fmt.Errorf("kubegcd: %w; see %s", k.p.waitErr, k.LogPath)
		}
		return nil
	case <-time.After(grace):
	}
	_ = k.p.cmd.Process.Kill()
	<-k.p.done
	return fmt.Errorf("kubegcd did not stop within %s of SIGTERM; killed", grace)
}

// Kill sends SIGKILL (as kill -9 would, e.g. to test a crash) and waits.
// Having exited before Kill was called is an error.
func (k *Kubegcd) Kill() error {
	if err := k.exitedEarly(); err != nil {
		return err
	}
	_ = k.p.cmd.Process.Kill()
	<-k.p.done
	return nil
}

func (k *Kubegcd) exitedEarly() error {
	if k.p.exited() {
		return fmt.Errorf("kubegcd had exited (%w); see %s", k.p.waitErr, k.LogPath)
	}
	return nil
}

// KubegcdStatus is what tests and benchmarks read of kubegcd's GET /status.
type KubegcdStatus struct {
	Synced    bool                    `json:"synced"`
	Objects   int64                   `json:"objects"`
	Resources []KubegcdResourceStatus `json:"resources"`
}

// KubegcdResourceStatus is one mirrored resource in KubegcdStatus.
type KubegcdResourceStatus struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	Synced   bool   `json:"synced"`
	Objects  int64  `json:"objects"`
}

// GetKubegcdStatus fetches baseURL/status from a running kubegcd.
func GetKubegcdStatus(ctx context.Context, baseURL string) (*KubegcdStatus, error) {
	body, err := HTTPGet(ctx, baseURL+"/status")
	if err != nil {
		return nil, err
	}
	var st KubegcdStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("/status: %w", err)
	}
	return &st, nil
}

// HTTPGet returns the body of url, which must answer 200 within 30 seconds.
func HTTPGet(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", url, resp.StatusCode, bytes.TrimSpace(body))
	}
	return body, nil
}
