package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxExposure is the highest `systemd-analyze security` score the shipped
// unit may have (0 is the best, 10 the worst); today's unit scores 1.2.
const maxExposure = 2.0

// systemdAnalyze returns the path of systemd-analyze; `make test` installs
// it (Debian's systemd package) where it is missing.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install Debian's systemd package (apt-get install systemd), or run make test as root")
	}
	return p
}

var overallExposure = regexp.MustCompile(`(?m)^→ Overall exposure level for kubegcd\.service: ([0-9.]+) `)

func TestUnitSecurityExposure(t *testing.T) {
	cmd := exec.Command(systemdAnalyze(t), "security", "--offline=true", "--no-pager",
		"--threshold="+strconv.Itoa(int(maxExposure*10)), "kubegcd.service")
	out, err := cmd.CombinedOutput()
	m := overallExposure.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v; no overall exposure in its output:\n%s", err, out)
	}
	got, perr := strconv.ParseFloat(string(m[1]), 64)
	if perr != nil || got > maxExposure || err != nil {
		// The lines marked ✗ are what the unit lacks.
		var missing []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "✗") {
				missing = append(missing, l)
			}
		}
		t.Fatalf("kubegcd.service: exposure %s, want at most %.1f (systemd-analyze: %v); it lacks:\n%s",
			m[1], maxExposure, err, strings.Join(missing, "\n"))
	}
}

func TestUnitVerifies(t *testing.T) {
	unit, err := os.ReadFile("kubegcd.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify wants ExecStart's binary to exist and be executable, and
	// checks nothing more of it: any executable does, and the test binary
	// is one. The rest of the unit is verified as shipped.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const shipped = "ExecStart=/usr/local/bin/kubegcd "
	if !bytes.Contains(unit, []byte(shipped)) {
		t.Fatalf("kubegcd.service has no %q line", shipped)
	}
	path := filepath.Join(t.TempDir(), "kubegcd.service")
	if err := os.WriteFile(path, bytes.Replace(unit, []byte(shipped), []byte("ExecStart="+self+" "), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(systemdAnalyze(t), "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify kubegcd.service: %v\n%s", err, out)
	}
}
