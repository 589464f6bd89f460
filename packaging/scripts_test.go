package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestPreinstallCreatesUser(t *testing.T) {
	b := buildOrFail(t)
	ctrl := t.TempDir()
	dpkgDeb(t, "--control", b.deb, ctrl)
	tests := []struct {
		name string
		tool string // the one user tool on $PATH
	}{
		{"systemd-sysusers", "systemd-sysusers"},
		{"useradd fallback", "useradd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool, err := exec.LookPath(tt.tool)
			if err != nil {
				tool, err = exec.LookPath("/usr/sbin/" + tt.tool)
			}
			if err != nil {
				t.Fatalf("%s not found: it comes with Debian's systemd and passwd packages", tt.tool)
			}
			bin := t.TempDir()
			if err := os.Symlink(tool, filepath.Join(bin, tt.tool)); err != nil {
				t.Fatal(err)
			}
			// A root as dpkg --root gives it: an /etc with the user
			// databases.
			root := t.TempDir()
			for _, f := range []string{"passwd", "group", "shadow", "gshadow"} {
				if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "etc", f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Twice: an upgrade runs it again over the existing user.
			for i := range 2 {
				cmd := exec.Command("/bin/sh", filepath.Join(ctrl, "preinst"), "install")
				cmd.Env = []string{"PATH=" + bin, "DPKG_ROOT=" + root}
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("preinst, run %d: %v\n%s", i+1, err, out)
				}
			}
			passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
			if err != nil {
				t.Fatal(err)
			}
			user := regexp.MustCompile(`(?m)^kubegcd:x:([0-9]+):([0-9]+):kubegcd daemon:/var/lib/kubegcd:[^\n]*nologin$`)
			if m := user.FindAllSubmatch(passwd, -1); len(m) != 1 || len(m[0][1]) > 3 {
				t.Errorf("%s/etc/passwd has no single system user kubegcd with home /var/lib/kubegcd:\n%s", root, passwd)
			}
			group, _ := os.ReadFile(filepath.Join(root, "etc", "group"))
			if !regexp.MustCompile(`(?m)^kubegcd:x:[0-9]+:$`).Match(group) {
				t.Errorf("%s/etc/group has no group kubegcd:\n%s", root, group)
			}
		})
	}
}

func TestMaintainerScriptsUnderRoot(t *testing.T) {
	// Under dpkg --root every script runs to its end without touching the
	// machine (no systemctl), whatever the packager's arguments.
	b := buildOrFail(t)
	ctrl := t.TempDir()
	dpkgDeb(t, "--control", b.deb, ctrl)
	tests := []struct {
		script string
		args   []string
	}{
		{"postinst", []string{"configure"}},
		{"postinst", []string{"configure", "0.0.0~git20260101.abc1234"}},
		{"postinst", []string{"1"}},
		{"prerm", []string{"remove"}},
		{"prerm", []string{"0"}},
		{"postrm", []string{"purge"}},
		{"postrm", []string{"1"}},
	}
	for _, tt := range tests {
		t.Run(tt.script+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			// A $PATH of nothing but sh's own builtins: any command the
			// script would run fails it.
			cmd := exec.Command("/bin/sh", append([]string{"-e", filepath.Join(ctrl, tt.script)}, tt.args...)...)
			cmd.Env = []string{"PATH=" + t.TempDir(), "DPKG_ROOT=" + t.TempDir()}
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("%v\n%s", err, out)
			}
		})
	}
}
