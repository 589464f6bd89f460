package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginInstallDir: without --dir, kubectl-plugin install puts the
// plugin where kubectl finds it, in the first directory $PATH names that can
// be written and is no system directory (~/.local/bin and ~/bin are made when
// missing); when $PATH names none, in ~/.local/bin, saying in one line how
// to add it to $PATH.
func TestPluginInstallDir(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		t.Fatal(err)
	}
	selfDir := filepath.Dir(self)

	tests := []struct {
		name string
		// path lists $PATH: "HOME/…" is below the fake home, "OTHER" a
		// writable directory outside it, "MISSING" a directory that does
		// not exist outside it, "SELF" this binary's directory.
		path []string
		// setup prepares the fake home.
		setup   func(t *testing.T, home string)
		noHome  bool
		want    string // where the plugin lands: "HOME/…", "OTHER" or "SELF"
		wantTip bool   // the line saying how to add it to $PATH
	}{
		{name: "missing ~/.local/bin on PATH is made", path: []string{"MISSING", "HOME/.local/bin"}, want: "HOME/.local/bin"},
		{name: "~/bin before ~/.local/bin", path: []string{"HOME/bin", "HOME/.local/bin"},
			setup: mkdirs("bin", ".local/bin"), want: "HOME/bin"},
		{name: "~/.local/bin that cannot be made is skipped", path: []string{"HOME/.local/bin", "HOME/bin"},
			setup: func(t *testing.T, home string) { writeFile(t, filepath.Join(home, ".local"), "") }, want: "HOME/bin"},
		{name: "binary's directory on PATH", path: []string{"MISSING", "SELF", "HOME/.local/bin"}, want: "SELF"},
		{name: "first writable directory on PATH", path: []string{"MISSING", "OTHER", "HOME/.local/bin"}, want: "OTHER"},
		{name: "PATH names no writable directory", path: []string{"MISSING"}, want: "HOME/.local/bin", wantTip: true},
		{name: "empty PATH", want: "HOME/.local/bin", wantTip: true},
		{name: "no home, binary's directory not on PATH", path: []string{"MISSING"}, noHome: true, want: "SELF", wantTip: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			home, other := t.TempDir(), t.TempDir()
			if tc.setup != nil {
				tc.setup(t, home)
			}
			expand := func(p string) string {
				switch {
				case p == "SELF":
					return selfDir
				case p == "OTHER":
					return other
				case p == "MISSING":
					return filepath.Join(other, "missing")
				case strings.HasPrefix(p, "HOME/"):
					return filepath.Join(home, strings.TrimPrefix(p, "HOME/"))
				}
				t.Fatalf("bad path %q in the table", p)
				return ""
			}
			var path []string
			for _, p := range tc.path {
				path = append(path, expand(p))
			}
			vars := map[string]string{"PATH": strings.Join(path, string(filepath.ListSeparator)), "HOME": home}
			if tc.noHome {
				delete(vars, "HOME")
				home = ""
			}
			t.Setenv("HOME", home)
			t.Setenv("PATH", vars["PATH"])
			want := expand(tc.want)
			// Whatever lands beside this binary must not outlive the test.
			for _, d := range []string{want, selfDir} {
				t.Cleanup(func() {
					os.Remove(filepath.Join(d, PluginName))
					os.Remove(filepath.Join(d, completionName))
				})
			}

			code, stdout, stderr := runCLI(t, vars, "kubectl-plugin", "install")
			if code != 0 {
				t.Fatalf("kubectl-plugin install: exit %d, stderr %q", code, stderr)
			}
			link := filepath.Join(want, PluginName)
			if target, err := os.Readlink(link); err != nil || target != self {
				t.Fatalf("%s -> %q (%v), want -> %s; stdout %q", link, target, err, self, stdout)
			}
			if !strings.Contains(stdout, "installed "+link+" -> ") {
				t.Errorf("stdout %q does not name %s", stdout, link)
			}
			// kubectl looks plugins up on $PATH as exec.LookPath does.
			if found, err := exec.LookPath(PluginName); !tc.wantTip && (err != nil || found != link) {
				t.Errorf("LookPath(%s) on the test's PATH = %q, %v; want %s", PluginName, found, err, link)
			}
			tip := `export PATH="` + want + `:$PATH"`
			if got := strings.Contains(stderr, tip); got != tc.wantTip {
				t.Errorf("stderr %q: has %q = %v, want %v", stderr, tip, got, tc.wantTip)
			}
			if n := strings.Count(stderr, "\n"); n > 1 {
				t.Errorf("stderr has %d lines, want at most one: %q", n, stderr)
			}
		})
	}
}

// mkdirs returns a setup making dirs below the fake home.
func mkdirs(dirs ...string) func(t *testing.T, home string) {
	return func(t *testing.T, home string) {
		t.Helper()
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPluginDirSkipsSystemDirectories: a system directory on $PATH, where
// packages install, is never chosen without --dir, even when it can be
// written (as root); the next writable directory is, else ~/.local/bin.
func TestPluginDirSkipsSystemDirectories(t *testing.T) {
	home, other := t.TempDir(), t.TempDir()
	local := filepath.Join(home, ".local", "bin")
	tests := []struct {
		path []string
		want string
	}{
		{[]string{"/usr/local/bin", other}, other},
		{[]string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}, local},
		{[]string{"/usr/local/bin/", "/usr/lib/go/bin", "/snap/bin", "/opt/tool/bin", other}, other},
	}
	for _, tc := range tests {
		path := strings.Join(tc.path, string(filepath.ListSeparator))
		got, err := pluginDir(path, home, other)
		if err != nil || got != tc.want {
			t.Errorf("pluginDir(PATH=%s) = %q, %v; want %s", path, got, err, tc.want)
		}
	}
	// No home and a system directory for the binary's: nothing to choose.
	if got, err := pluginDir("/usr/local/bin", "", "/usr/local/bin"); err == nil {
		t.Errorf("pluginDir without home, binary in /usr/local/bin = %q, want an error asking for --dir", got)
	}
}
