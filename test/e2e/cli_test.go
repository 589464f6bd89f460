package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/db"
)

// runBinary runs the built kubegcd and returns its exit code and output.
func runBinary(t *testing.T, timeout time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubegcdBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "HOME="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kubegcd %v did not exit within %s; stderr:\n%s", args, timeout, errb.String())
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.String(), errb.String()
		}
		t.Fatal(err)
	}
	return 0, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBadInputFailsWithOneClearLine(t *testing.T) {
	t.Parallel()
	unreachable := writeFile(t, "unreachable", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	unreadable := writeFile(t, "unreadable", "")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	garbage := writeFile(t, "garbage", "{{{ this is not a kubeconfig")
	roDir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(roDir, 0o500)

	base := func(extra ...string) []string {
		return append([]string{"run", "--kubeconfig", cluster.Kubeconfig, "--db", filepath.Join(t.TempDir(), "k.db"),
			"--listen", freeAddr(t), "--startup-timeout", "2s"}, extra...)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing kubeconfig", []string{"run", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "kubeconfig /nonexistent/kubeconfig"},
		{"garbage kubeconfig", []string{"run", "--kubeconfig", garbage}, 1, "kubeconfig " + garbage},
		{"no kubeconfig anywhere", []string{"run"}, 1, "no kubeconfig found"},
		{"unreachable server", base("--kubeconfig", unreachable), 1, "cannot reach the API server at https://127.0.0.1:1"},
		// A missing directory is made; one that cannot be, as under a
		// file, is named in one line.
		{"db dir cannot be made", base("--db", filepath.Join(garbage, "dir", "k.db")), 1,
			"database directory " + garbage + ": not a directory"},
		{"db is a directory", base("--db", t.TempDir()), 1, "database"},
		{"bad log level", base("--log-level", "loud"), 2, `invalid --log-level "loud"`},
		{"bad log format", base("--log-format", "xml"), 2, `invalid --log-format "xml"`},
		{"bad controller", base("--controllers", "ownergc,nope"), 2, `unknown controller "nope"`},
		{"bad duration", base("--discovery-interval", "soon"), 2, "discovery-interval"},
		{"lease shorter than renew deadline", base("--leader-elect-lease-duration", "5s"), 2, "invalid --leader-elect-lease-duration 5s"},
		{"renew deadline within retry period", base("--leader-elect-renew-deadline", "2s"), 2, "invalid --leader-elect-renew-deadline 2s"},
		{"bad namespace threshold", base("--terminated-pod-gc-threshold-namespace", "Not_A_Namespace=3"), 2, "terminated-pod-gc-threshold-namespace"},
		{"negative threshold", base("--terminated-pod-gc-threshold", "-1"), 2, "invalid --terminated-pod-gc-threshold -1"},
		{"bad blast-radius resume", base("--blast-radius-resume", "later"), 2, `invalid --blast-radius-resume "later"`},
		{"bad listen", base("--listen", "nohostport"), 2, "invalid --listen"},
		{"listen in use", nil, 1, "--listen"},
		{"unknown flag", base("--frobnicate"), 2, "frobnicate"},
		{"malformed config file", base("--config", writeFile(t, "bad.conf", "listen 127.0.0.1:1\n")), 2, "bad.conf:1: want 'flag = value'"},
		{"bad value in config file", base("--config", writeFile(t, "bad2.conf", "log-level = loud\n")), 2, `invalid --log-level "loud"`},
		{"unknown command", []string{"explode"}, 2, `unknown command "explode"`},
		{"release without a daemon", []string{"release", "--server", "http://127.0.0.1:1"}, 1, "kubegcd: release: "},
		{"release with a stray argument", []string{"release", "now"}, 2, `unexpected argument "now"`},
	}
	if os.Geteuid() != 0 { // root reads and writes whatever the mode bits say
		cases = append(cases,
			struct {
				name string
				args []string
				code int
				want string
			}{"unreadable kubeconfig", []string{"run", "--kubeconfig", unreadable}, 1, "permission denied"},
			struct {
				name string
				args []string
				code int
				want string
			}{"read-only db dir", base("--db", filepath.Join(roDir, "k.db")), 1, "permission denied"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name == "listen in use" {
				d := daemons.Start(t, "")
				args = base("--listen", strings.TrimPrefix(d.URL, "http://"))
			}
			code, _, stderr := runBinary(t, 30*time.Second, args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if tc.code == 1 && len(lines) != 1 {
				t.Errorf("want one line on stderr, got %d:\n%s", len(lines), stderr)
			}
			if !strings.HasPrefix(lines[0], "kubegcd: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not start with 'kubegcd: ' and name %q", stderr, tc.want)
			}
		})
	}
}

func TestDatabaseLockedByAnotherKubegcd(t *testing.T) {
	t.Parallel()
	d := daemons.Start(t, "")
	code, _, stderr := runBinary(t, 30*time.Second, "run", "--kubeconfig", cluster.Kubeconfig, "--db", d.DBPath, "--listen", freeAddr(t))
	if code != 1 || !strings.Contains(stderr, "database is in use by another kubegcd") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("second kubegcd on one database: exit %d, stderr %q", code, stderr)
	}
	// The first one is untouched.
	d.WaitReady(t, 60*time.Second)
	code, _, stderr = runBinary(t, 30*time.Second, "migrate", "up", "--db", d.DBPath)
	if code != 1 || !strings.Contains(stderr, "in use") {
		t.Fatalf("migrate under a running daemon: exit %d, stderr %q", code, stderr)
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.db")
	latest := db.LatestVersion()
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "version", "--db", path}, "schema version 0"},
		{[]string{"migrate", "up", "--db", path}, fmt.Sprintf("schema version %d ", latest)},
		{[]string{"migrate", "--db", path, "down"}, fmt.Sprintf("schema version %d ", latest-1)},
		{[]string{"migrate", "up", "--db", path}, fmt.Sprintf("schema version %d ", latest)},
	} {
		code, stdout, stderr := runBinary(t, 30*time.Second, step.args...)
		if code != 0 || !strings.Contains(stdout, step.want) {
			t.Fatalf("kubegcd %v: exit %d, stdout %q, stderr %q; want %q", step.args, code, stdout, stderr, step.want)
		}
	}
	if code, _, stderr := runBinary(t, 30*time.Second, "migrate", "sideways", "--db", path); code != 1 || !strings.Contains(stderr, "unknown migrate command") {
		t.Fatalf("bad migrate command: exit %d, %q", code, stderr)
	}
	if code, stdout, _ := runBinary(t, 30*time.Second, "version"); code != 0 || !strings.HasPrefix(stdout, "kubegcd ") {
		t.Fatalf("version: %d %q", code, stdout)
	}
	if code, stdout, _ := runBinary(t, 30*time.Second, "help", "run"); code != 0 {
		t.Fatalf("help run: %d %q", code, stdout)
	}
}
