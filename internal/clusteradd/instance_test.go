package clusteradd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInstanceConf: the instance's config is the shipped one but for its
// database, its port and the name of its kubeconfig.
func TestInstanceConf(t *testing.T) {
	got, err := instanceConf("prod", 8082)
	if err != nil {
		t.Fatal(err)
	}
	header, body, ok := strings.Cut(string(got), "\n\n")
	if !ok || !strings.Contains(header, "kubegcd@prod") {
		t.Fatalf("no header naming kubegcd@prod:\n%s", got)
	}
	shipped := strings.Split(string(shippedConf), "\n")
	lines := strings.Split(body, "\n")
	if len(lines) != len(shipped) {
		t.Fatalf("%d lines after the header, want the shipped file's %d", len(lines), len(shipped))
	}
	var changed []string
	for i := range lines {
		if lines[i] != shipped[i] {
			changed = append(changed, lines[i])
		}
	}
	want := []string{
		"# LoadCredential= passes /etc/kubegcd/prod.kubeconfig, which only root reads),",
		"# kubeconfig = /etc/kubegcd/prod.kubeconfig",
		"db = /var/lib/kubegcd/prod/kubegcd.db",
		"listen = 127.0.0.1:8082",
	}
	if diff := cmp.Diff(want, changed); diff != "" {
		t.Errorf("lines changed from the shipped kubegcd.conf (-want +got):\n%s", diff)
	}
}

func TestFreePort(t *testing.T) {
	dir := t.TempDir()
	for name, conf := range map[string]string{
		"kubegcd.conf": "listen = 127.0.0.1:8080\n",
		"a.conf":       "# listen = 127.0.0.1:8083\n--listen=:8081\n",
		"b.conf":       "db = x\n  listen   =   [::1]:8084  \n",
		"notes.txt":    "listen = 127.0.0.1:8082\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		busy map[int]bool
		want int
	}{
		{"first not in a config", nil, 8082},
		{"busy on the host", map[int]bool{8082: true, 8083: true}, 8085},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := freePort(dir, func(p int) bool { return !tt.busy[p] })
			if err != nil || got != tt.want {
				t.Errorf("freePort = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	if _, err := freePort(dir, func(int) bool { return false }); err == nil {
		t.Error("freePort with every port busy: no error")
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	steps := []struct {
		data string
		mode os.FileMode // of the file before the write; 0: as written
		want string
	}{
		{"a", 0, created},
		{"a", 0, unchanged},
		{"b", 0, updated},
		// The same bytes with a looser mode are written again, 0600.
		{"b", 0o644, updated},
	}
	for i, s := range steps {
		if s.mode != 0 {
			if err := os.Chmod(path, s.mode); err != nil {
				t.Fatal(err)
			}
		}
		got, err := writeFile(path, []byte(s.data), 0o600)
		if err != nil || got != s.want {
			t.Fatalf("write %d: %q, %v; want %q", i+1, got, err, s.want)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if st.Mode().Perm() != 0o600 || string(data) != s.data {
			t.Errorf("write %d: mode %v, content %q; want 0600 and %q", i+1, st.Mode().Perm(), data, s.data)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the directory holds %v, want the file alone", entries)
	}
}
