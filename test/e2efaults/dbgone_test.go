package e2efaults

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestDatabaseFileGone: a database file deleted, or replaced by another
// file, under a running kubegcd leaves it writing to a file nobody will
// read again. /readyz stops answering 200 at once, and within seconds the
// run ends with one line that says so and exit 1, for systemd to start it
// again on whatever file the path now names.
func TestDatabaseFileGone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		remove func(t *testing.T, path string)
	}{
		{"deleted", func(t *testing.T, path string) {
			t.Helper()
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", func(t *testing.T, path string) {
			t.Helper()
			other := filepath.Join(filepath.Dir(path), "other.db")
			if err := os.WriteFile(other, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := namespaces.New(t, "dbgone")
			config := kubeconfig(t, cluster.Config.Host, confinedToken(t, ns))
			d := daemons.WithKubeconfig(config).Start(t, "", "--leader-elect=false")
			tt.remove(t, d.DBPath)
			removed := time.Now()
			if code, body, err := d.Get("/readyz"); err == nil && code == http.StatusOK {
				t.Errorf("/readyz %d %s with the database file %s", code, strings.TrimSpace(string(body)), tt.name)
			}
			eventually(t, 20*time.Second, func() error {
				if _, exited := d.Exited(); !exited {
					return errors.New("kubegcd still runs")
				}
				return nil
			})
			t.Logf("exited %s after the file was %s", time.Since(removed).Round(time.Millisecond), tt.name)
			if code := d.Stop(); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			var line string
			for l := range strings.Lines(d.Logs.String()) {
				if strings.Contains(l, "stopping: a part of kubegcd failed") {
					line = l
				}
			}
			// A deleted file may be found replaced: a connection opened
			// since, by the path, creates an empty one there.
			const want = "was deleted or replaced while kubegcd ran"
			if !strings.Contains(line, d.DBPath) || !strings.Contains(line, want) {
				t.Errorf("no line saying the database %s %s; the last lines:\n%s", d.DBPath, want, e2eutil.Tail(d.Logs.String(), 10))
			}
		})
	}
}
