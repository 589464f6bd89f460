package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// TestJournalLogs runs the built kubegcd as systemd runs a service whose
// stderr goes to the journal: $JOURNAL_STREAM names its stderr. Every line,
// client-go's (through klog) included, must then lead with its syslog
// priority and carry no time, which journald adds itself.
func TestJournalLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "kubegcd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(logFile.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	// Leader election, for client-go's leaderelection logs through klog.
	cmd := exec.Command(kubegcdBin, "run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(dir, "kubegcd.db"),
		"--listen", addr, "--controllers=svgc", "--dry-run=false", "--leader-elect-name=kubegcd-journal", "--log-level=debug")
	cmd.Env = append(os.Environ(), fmt.Sprintf("JOURNAL_STREAM=%d:%d", st.Dev, st.Ino))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	eventually(t, 60*time.Second, func() error {
		if _, err := testcluster.HTTPGet(context.Background(), "http://"+addr+"/readyz"); err != nil {
			return err
		}
		logs, _ := os.ReadFile(logPath)
		if !strings.Contains(string(logs), "source=client-go") {
			return fmt.Errorf("no client-go line yet")
		}
		return nil
	})
	terminate(t, cmd, exited)

	logs, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^<[3467]>level=(DEBUG|INFO|WARN|ERROR)([+-][0-9]+)? msg=`) // klog's V(n) is DEBUG+(4-n)
	lines := strings.Split(strings.TrimSuffix(string(logs), "\n"), "\n")
	for _, l := range lines {
		if !line.MatchString(l) || strings.Contains(l, "time=") {
			t.Errorf("not a journal line: %q", l)
		}
	}
	for _, want := range []string{`<6>level=INFO msg="kubegcd starting"`, `<6>level=INFO msg="kubegcd stopped"`, `<7>level=DEBUG `} {
		if !strings.Contains(string(logs), "\n"+want) && !strings.HasPrefix(string(logs), want) {
			t.Errorf("no line starting %s", want)
		}
	}
	if t.Failed() {
		t.Logf("kubegcd's log:\n%s", tail(string(logs), 30))
	}
}
