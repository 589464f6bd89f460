package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxExposure is the highest `systemd-analyze security` score the shipped
// units may have (0 is the best, 10 the worst); today's score 1.2.
const maxExposure = 1.5

// units are the shipped units, each with the name systemd-analyze checks
// it under: the template as one of its instances.
var units = []struct{ file, name string }{
	{"kubegcd.service", "kubegcd.service"},
	{"kubegcd@.service", "kubegcd@prod.service"},
}

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

func TestUnitSecurityExposure(t *testing.T) {
	for _, u := range units {
		t.Run(u.file, func(t *testing.T) {
			// Offline, systemd-analyze reads the unit, or its template,
			// from the working directory.
			cmd := exec.Command(systemdAnalyze(t), "security", "--offline=true", "--no-pager",
				"--threshold="+strconv.Itoa(int(maxExposure*10)), u.name)
			out, err := cmd.CombinedOutput()
			overall := regexp.MustCompile(`(?m)^→ Overall exposure level for ` + regexp.QuoteMeta(u.name) + `: ([0-9.]+) `)
			m := overall.FindSubmatch(out)
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
				t.Fatalf("%s: exposure %s, want at most %.1f (systemd-analyze: %v); it lacks:\n%s",
					u.name, m[1], maxExposure, err, strings.Join(missing, "\n"))
			}
		})
	}
}

func TestUnitVerifies(t *testing.T) {
	// verify wants ExecStart's binary to exist and be executable, and
	// checks nothing more of it: any executable does, and the test binary
	// is one. The rest of the unit is verified as shipped.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		t.Run(u.file, func(t *testing.T) {
			unit, err := os.ReadFile(u.file)
			if err != nil {
				t.Fatal(err)
			}
			const shipped = "ExecStart=/usr/local/bin/kubegcd "
			if !bytes.Contains(unit, []byte(shipped)) {
				t.Fatalf("%s has no %q line", u.file, shipped)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, u.file), bytes.Replace(unit, []byte(shipped), []byte("ExecStart="+self+" "), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			// An instance of the template is found beside it.
			out, err := exec.Command(systemdAnalyze(t), "verify", filepath.Join(dir, u.name)).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Fatalf("systemd-analyze verify %s: %v\n%s", u.name, err, out)
			}
		})
	}
}

// TestTemplateIsTheUnit: the template unit differs from kubegcd.service
// only in the instance's paths, its description and its log name, so that
// the hardening and the restart policy tested above stay one.
func TestTemplateIsTheUnit(t *testing.T) {
	directives := func(file string) []string {
		t.Helper()
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, l)
			}
		}
		return out
	}
	unit := directives("kubegcd.service")
	var template []string
	for _, l := range directives("kubegcd@.service") {
		if l == "SyslogIdentifier=kubegcd@%i" {
			continue
		}
		l = strings.NewReplacer(
			"Description=kubegcd for %i - ", "Description=kubegcd - ",
			"StateDirectory=kubegcd/%i", "StateDirectory=kubegcd",
			"/var/lib/kubegcd/%i", "/var/lib/kubegcd",
			"/etc/kubegcd/%i.conf", "/etc/kubegcd/kubegcd.conf",
			"/etc/kubegcd/%i.kubeconfig", "/etc/kubegcd/kubeconfig",
		).Replace(l)
		if strings.Contains(l, "%i") {
			t.Errorf("kubegcd@.service: %q uses the instance where kubegcd.service has nothing to match", l)
		}
		template = append(template, l)
	}
	for _, l := range unit {
		if !slices.Contains(template, l) {
			t.Errorf("kubegcd@.service lacks kubegcd.service's %q", l)
		}
	}
	for _, l := range template {
		if !slices.Contains(unit, l) {
			t.Errorf("kubegcd@.service has %q, which kubegcd.service does not (its instance's paths mapped back)", l)
		}
	}
	if !slices.Equal(unit, template) && !t.Failed() {
		t.Errorf("kubegcd@.service holds kubegcd.service's directives in another order")
	}
}
