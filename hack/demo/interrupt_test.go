package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/testutil"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// runMainEnv makes the test binary run the demo's main instead of the tests,
// so that TestDemoInterrupt can signal the demo as a separate process, as a
// terminal's Ctrl-C does.
const runMainEnv = "KUBEGCD_DEMO_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestDemoInterrupt: Ctrl-C stops the demo at any point, before it is up
// too, with exit status 0 (make demo then reports no error) and nothing
// left behind.
func TestDemoInterrupt(t *testing.T) {
	testutil.NeedsControlPlane(t)
	tests := []struct {
		name  string
		after string // the output line after which SIGINT comes
	}{
		{name: "while the control plane starts", after: "Starting a local control plane"},
		{name: "while kubegcd starts", after: "Starting kubegcd"},
		{name: "once up", after: "  UI: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			// Hold the default address so that the demo takes a free port.
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()

			var out e2eutil.SyncBuffer
			cmd := exec.Command(os.Args[0], "--listen", taken.Addr().String())
			cmd.Env = append(os.Environ(), runMainEnv+"=1", "TMPDIR="+tmp)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					<-exited
				}
			})

			e2eutil.Eventually(t, 3*time.Minute, func() error {
				if strings.Contains(out.String(), tc.after) {
					return nil
				}
				select {
				case err := <-exited:
					return e2eutil.StopError{Err: fmt.Errorf("demo exited (%v) before %q:\n%s", err, tc.after, out.String())}
				default:
					return fmt.Errorf("no %q yet", tc.after)
				}
			})
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			select {
			case err = <-exited:
			case <-time.After(time.Minute):
				t.Fatalf("demo still running a minute after SIGINT:\n%s", out.String())
			}
			if err != nil {
				t.Fatalf("demo after SIGINT: %v, want exit status 0:\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "Removed "+tmp) {
				t.Errorf("output does not say it removed its directory:\n%s", out.String())
			}
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				t.Errorf("left behind in TMPDIR: %s", e.Name())
			}
		})
	}
}
