package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/cli"
	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// Timeouts of TestREADMEAnswers: the demo's start (a control plane of its
// own, the seed, kubegcd until ready), and then until the answers settle
// (PodGC's 40 s quarantine of a pod on a missing node, and its pass).
const (
	demoUpTimeout     = 3 * time.Minute
	readmeSettleLimit = 2 * time.Minute
)

// TestREADMEAnswers: every command of the README's console blocks answers,
// against the demo, what the README shows, ages, times and UIDs aside
// (e2eutil.Normalize); "…" in the README leaves lines out. The demo runs as
// make demo runs it, with this package's kubegcd, on a control plane of its
// own: its seed names fixed namespaces and nodes, and a whole-cluster answer
// must hold the demo's objects alone.
func TestREADMEAnswers(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := e2eutil.ConsoleExamples(f, "kubegcd")
	f.Close()
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(examples) == 0 {
		t.Fatal("README.md has no console block of kubegcd commands")
	}

	url := startDemo(t)
	check := func() error {
		var errs []error
		for _, ex := range examples {
			cmd := exec.Command(kubegcdBin, ex.Args...)
			// As a user of the README runs them: the demo's kubegcd where the
			// CLI looks by default, so the server is theirs to leave out.
			cmd.Env = append(os.Environ(), "KUBEGCD_SERVER="+url, "KUBEGCD_TOKEN=", "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				return stopError{Err: err}
			}
			got := strings.Split(strings.TrimRight(strings.ReplaceAll(string(out), url, cli.DefaultServer), "\n"), "\n")
			if err := e2eutil.MatchAnswer(ex.Want, got); err != nil {
				errs = append(errs, fmt.Errorf("README.md:%d: kubegcd %s: %w", ex.Line, strings.Join(ex.Args, " "), err))
			}
		}
		return errors.Join(errs...)
	}
	eventually(t, readmeSettleLimit, check)
}

// startDemo builds hack/demo and runs it with this package's kubegcd until
// the test ends, and returns the URL of its kubegcd once the demo says it
// is up.
func startDemo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	demoBin := filepath.Join(dir, "kubegcd-demo")
	build := exec.Command("go", "build", "-o", demoBin, "github.com/kubegcd/kubegcd/hack/demo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	// The demo finds its binaries in $KUBEGCD_BIN_DIR: the control plane's,
	// and the kubegcd under test.
	controlPlane, err := testcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	bins := filepath.Join(dir, "bin")
	if err := os.Mkdir(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"etcd": filepath.Join(controlPlane, "etcd"), "kube-apiserver": filepath.Join(controlPlane, "kube-apiserver"),
		"kubegcd": kubegcdBin}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(bins, name)); err != nil {
			t.Fatal(err)
		}
	}

	demo := exec.Command(demoBin, "--listen", e2eutil.FreeAddr(t), "--exit-after", "30m")
	demo.Env = append(os.Environ(), "KUBEGCD_BIN_DIR="+bins, "TMPDIR="+t.TempDir())
	stdout, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var output strings.Builder
	var mu sync.Mutex
	demo.Stderr = &lockedWriter{mu: &mu, w: &output}
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			output.WriteString(line + "\n")
			mu.Unlock()
			if url, ok := strings.CutPrefix(strings.TrimSpace(line), "UI:"); ok {
				urls <- strings.TrimSuffix(strings.TrimSpace(url), "/")
			}
		}
		exited <- demo.Wait()
	}()
	shown := func() string {
		mu.Lock()
		defer mu.Unlock()
		return output.String()
	}
	t.Cleanup(func() {
		// Ctrl-C: the demo stops kubegcd and its control plane and removes
		// what it made.
		_ = demo.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("the demo exited with %v after SIGINT:\n%s", err, shown())
			}
		case <-time.After(time.Minute):
			_ = demo.Process.Kill()
			t.Errorf("the demo did not stop within a minute of SIGINT:\n%s", shown())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), demoUpTimeout)
	defer cancel()
	select {
	case url := <-urls:
		return url
	case err := <-exited:
		exited <- err
		t.Fatalf("the demo exited (%v) before it was up:\n%s", err, shown())
	case <-ctx.Done():
		t.Fatalf("the demo was not up within %s:\n%s", demoUpTimeout, shown())
	}
	return ""
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
