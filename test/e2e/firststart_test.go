package e2e

import (
	"bytes"
	"crypto/sha256"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/testutil"
	"k8s.io/client-go/tools/clientcmd"
)

// TestFailedFirstStartLeavesNoFiles: a first run of the binary that fails
// before it serves leaves no database, no lock file and none of the
// directories it made: one line on stderr, exit 1, and the directory as
// it was.
func TestFailedFirstStartLeavesNoFiles(t *testing.T) {
	t.Parallel()
	unreachable := unreachableKubeconfig(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Parallel subtests run once this function returned: no defer.
	t.Cleanup(func() { busy.Close() })
	tests := []struct {
		name       string
		dbPath     string // under the test's directory
		kubeconfig string
		args       []string
		want       string
	}{
		{name: "API server unreachable", dbPath: "k.db", kubeconfig: unreachable,
			args: []string{"--startup-timeout", "2s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
		{name: "port in use", dbPath: "k.db", kubeconfig: cluster.Kubeconfig,
			args: []string{"--listen", busy.Addr().String()}, want: "--listen " + busy.Addr().String()},
		{name: "bad file named by a flag", dbPath: "k.db", kubeconfig: cluster.Kubeconfig,
			args: []string{"--auth-token-file", filepath.Join(t.TempDir(), "none")}, want: "--auth-token-file"},
		{name: "missing directories", dbPath: "a/b/k.db", kubeconfig: unreachable,
			args: []string{"--startup-timeout", "2s"}, want: "cannot reach the API server at https://127.0.0.1:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"run", "--kubeconfig", tc.kubeconfig, "--db", filepath.Join(dir, tc.dbPath),
				"--listen", freeAddr(t)}, tc.args...)
			code, _, stderr := runBinary(t, time.Minute, args...)
			if code != 1 || !strings.HasPrefix(stderr, "kubegcd: ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
				!strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and one line saying %q", code, stderr, tc.want)
			}
			if left := testutil.FilesIn(t, dir); len(left) != 0 {
				t.Errorf("the failed first start left %q", left)
			}
		})
	}
}

// TestFirstStartMakesTheDatabaseDirectory: a run whose database's
// directories are missing makes them, readable by their owner only, and
// runs. A later start that fails keeps the database it finds, byte for
// byte, and its lock file.
func TestFirstStartMakesTheDatabaseDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "k.db")
	d := daemons.Start(t, path)
	d.WaitReady(t, time.Minute)
	for _, sub := range []string{"a", "a/b"} {
		st, err := os.Stat(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", sub, st.Mode().Perm())
		}
	}
	if code := d.Stop(); code != 0 {
		t.Fatalf("kubegcd exited %d", code)
	}
	before := testutil.FilesIn(t, dir)
	sum := fileSum(t, path)

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for name, args := range map[string][]string{
		"port in use":            {"--kubeconfig", cluster.Kubeconfig, "--listen", busy.Addr().String()},
		"API server unreachable": {"--kubeconfig", unreachableKubeconfig(t), "--listen", freeAddr(t), "--startup-timeout", "2s"},
	} {
		code, _, stderr := runBinary(t, time.Minute, append([]string{"run", "--db", path}, args...)...)
		if code != 1 {
			t.Fatalf("%s: exit %d, stderr %q; want 1", name, code, stderr)
		}
		if got := testutil.FilesIn(t, dir); strings.Join(got, " ") != strings.Join(before, " ") {
			t.Errorf("%s: after the failed restart, %q; want %q", name, got, before)
		}
		if got := fileSum(t, path); !bytes.Equal(got, sum) {
			t.Errorf("%s: the failed restart changed the database", name)
		}
	}
}

// unreachableKubeconfig is the cluster's kubeconfig with a server nothing
// answers on.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://127.0.0.1:1"
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// fileSum is the SHA-256 of the file at path.
func fileSum(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return sum[:]
}
