package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfigFile: whatever the file holds, kubegcd run's flags parse to a
// configuration or to one error line (what the daemon prints before it
// exits 2), never a panic; a file that parses sets only what it says.
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{"", "# comment\n", "dry-run = false\n", "--listen = 127.0.0.1:0", `db = "/var/lib/kubegcd/kubegcd.db"`,
		"gc-workers = 0\n", "unknown = 1", "no equals sign", "config = other.conf", "help = true", "-db = k.db", "=", "dry-run = maybe",
		"terminated-pod-gc-threshold-namespace = a=1\nterminated-pod-gc-threshold-namespace = b=2", "\xff\xfe = \x00",
		"terminated-pod-gc-threshold-namespace = a=1,B=-2", `controllers = ownergc, "podgc"`, `allowed-hosts = a"b`,
		"gc-workers = 0\nlog-level = loud\nlisten = nohostport\nleader-elect-retry-period = 0s"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(dir, "kubegcd.conf")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := parseRunFlags("--config", path)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || msg == "" {
				t.Fatalf("error %q is not one line", msg)
			}
			return
		}
		if cfg == nil {
			t.Fatal("no configuration and no error")
		}
		if strings.TrimSpace(content) == "" && !cfg.dryRun {
			t.Fatal("an empty file changed the default dry-run")
		}
	})
}
