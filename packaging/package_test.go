// The package's test builds the .deb and .rpm as `make package` does and
// checks what an operator gets from them, through dpkg-deb (Debian's dpkg
// package) and, for the .rpm, go-rpmutils, which nfpm already brings.
package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// repo is the repository's root, where `make package` runs.
const repo = ".."

// The sysusers.d line: the user the unit runs as and its home, the state
// directory.
const sysusersLine = `u kubegcd - "kubegcd daemon" /var/lib/kubegcd`

// docPages are the help pages the package ships, one per command; the
// Makefile's PKG_DOCS makes them.
var docPages = []string{"", "run", "migrate", "db", "cluster", "cluster add", "cluster remove", "get", "why", "tree", "cascade",
	"status", "release", "kubectl-plugin"}

func docPage(cmd string) string {
	if cmd == "" {
		return "kubegcd.txt"
	}
	return "kubegcd-" + strings.ReplaceAll(cmd, " ", "-") + ".txt"
}

// units are the systemd units the package ships, from deploy/: the unit,
// and the template of one instance per cluster, verified as one of its
// instances.
var units = []struct{ file, name string }{
	{"kubegcd.service", "kubegcd.service"},
	{"kubegcd@.service", "kubegcd@prod.service"},
}

// built holds what `make package` made, once for every test: the .deb, the
// .rpm and the version it gave them.
type built struct {
	deb, rpm, version string
}

var (
	distDir  string
	packages = sync.OnceValues(buildPackages)
)

func TestMain(m *testing.M) {
	var err error
	if distDir, err = os.MkdirTemp("", "kubegcd-dist-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(distDir)
	os.Exit(code)
}

// buildPackages runs `make package` into a directory of its own, so that the
// test checks the target itself, and leaves dist/ alone.
func buildPackages() (built, error) {
	out, err := exec.Command("make", "-C", repo, "--no-print-directory", "package", "DIST="+distDir).CombinedOutput()
	if err != nil {
		return built{}, fmt.Errorf("make package: %v\n%s", err, out)
	}
	var b built
	if b.version, err = makeValue("PKG_VERSION"); err != nil {
		return built{}, err
	}
	debs, _ := filepath.Glob(filepath.Join(distDir, "kubegcd_*.deb"))
	rpms, _ := filepath.Glob(filepath.Join(distDir, "kubegcd-*.rpm"))
	if len(debs) != 1 || len(rpms) != 1 {
		return built{}, fmt.Errorf("make package made %q and %q, want one .deb and one .rpm", debs, rpms)
	}
	b.deb, b.rpm = debs[0], rpms[0]
	return b, nil
}

// makeValue prints a variable of the Makefile, with extra command-line
// variables.
func makeValue(name string, vars ...string) (string, error) {
	args := append([]string{"-C", repo, "-s", "--no-print-directory",
		"--eval", "print-value: ; @echo '$(" + name + ")'", "print-value"}, vars...)
	out, err := exec.Command("make", args...).Output()
	if err != nil {
		return "", fmt.Errorf("make print-value %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func buildOrFail(t *testing.T) built {
	t.Helper()
	b, err := packages()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dpkgDeb runs dpkg-deb with args and returns its standard output.
func dpkgDeb(t *testing.T, args ...string) []byte {
	t.Helper()
	p, err := exec.LookPath("dpkg-deb")
	if err != nil {
		t.Fatal("dpkg-deb not found: it comes with Debian's dpkg package (apt-get install dpkg)")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(p, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dpkg-deb %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

func TestPackageVersion(t *testing.T) {
	// A version from git describe becomes a Debian and RPM version that
	// sorts as the releases do.
	tests := []struct {
		name, describe string
		want           *regexp.Regexp
	}{
		{"release", "v1.2.3", regexp.MustCompile(`^1\.2\.3$`)},
		{"after a release", "v1.2.3-4-gabc1234", regexp.MustCompile(`^1\.2\.3\+4\.gabc1234$`)},
		{"pre-release, dirty", "v1.3.0-rc.1-2-gabc1234-dirty", regexp.MustCompile(`^1\.3\.0~rc\.1\+2\.gabc1234\.dirty$`)},
		{"untagged", "d85ad0b", regexp.MustCompile(`^0\.0\.0~git[0-9]{8}\.d85ad0b$`)},
		{"untagged, digits first", "1234567-dirty", regexp.MustCompile(`^0\.0\.0~git[0-9]{8}\.1234567\.dirty$`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := makeValue("PKG_VERSION", "VERSION="+tt.describe)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want.MatchString(got) {
				t.Errorf("VERSION=%s: PKG_VERSION = %q, want a match of %s", tt.describe, got, tt.want)
			}
		})
	}
}

func TestDebControl(t *testing.T) {
	b := buildOrFail(t)
	got := controlFields(t, dpkgDeb(t, "--field", b.deb))
	want := map[string]string{
		"Package":      "kubegcd",
		"Version":      b.version,
		"Architecture": runtime.GOARCH,
		"Maintainer":   "kubegcd maintainers <maintainers@kubegcd.invalid>",
		"Section":      "admin",
		"Priority":     "optional",
		"Homepage":     "https://github.com/kubegcd/kubegcd",
		"License":      "Apache-2.0",
		// The binary is static: no Depends. The unit wants systemd, the
		// client commands do not.
		"Recommends": "systemd",
	}
	desc := got["Description"]
	delete(got, "Description")
	delete(got, "Installed-Size")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("control fields (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(desc, "Kubernetes garbage collection with an audit trail\n") || !strings.Contains(desc, "kubectl gc") {
		t.Errorf("Description = %q, want the summary, then a paragraph naming kubectl gc", desc)
	}
}

// controlFields parses a control file; a continuation line joins its field
// after a newline.
func controlFields(t *testing.T, control []byte) map[string]string {
	t.Helper()
	fields := map[string]string{}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(control))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") && last != "" {
			fields[last] += "\n" + strings.TrimPrefix(line, " ")
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("control line %q has no field name", line)
		}
		last = k
		fields[k] = strings.TrimSpace(v)
	}
	return fields
}

// entry is a file of the package as its archive states it.
type entry struct {
	Type         string // file, dir, symlink
	Mode         fs.FileMode
	Owner, Group string
	Link         string
}

func TestDebContents(t *testing.T) {
	b := buildOrFail(t)
	got := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(dpkgDeb(t, "--fsys-tarfile", b.deb)))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		e := entry{Mode: fs.FileMode(h.Mode).Perm(), Owner: h.Uname, Group: h.Gname, Link: h.Linkname}
		switch h.Typeflag {
		case tar.TypeReg:
			e.Type = "file"
		case tar.TypeDir:
			e.Type = "dir"
		case tar.TypeSymlink:
			// A symlink's mode means nothing on Linux.
			e.Type, e.Mode = "symlink", 0
		default:
			e.Type = fmt.Sprintf("type %c", h.Typeflag)
		}
		got[strings.TrimSuffix(strings.TrimPrefix(h.Name, "."), "/")] = e
	}

	file := func(mode fs.FileMode) entry { return entry{Type: "file", Mode: mode, Owner: "root", Group: "root"} }
	want := map[string]entry{
		"/usr/bin/kubegcd":                              file(0o755),
		"/usr/bin/kubectl-gc":                           {Type: "symlink", Owner: "root", Group: "root", Link: "kubegcd"},
		"/usr/lib/systemd/system/kubegcd.service":       file(0o644),
		"/usr/lib/systemd/system/kubegcd@.service":      file(0o644),
		"/usr/lib/sysusers.d/kubegcd.conf":              file(0o644),
		"/etc/kubegcd":                                  {Type: "dir", Mode: 0o755, Owner: "root", Group: "root"},
		"/etc/kubegcd/kubegcd.conf":                     {Type: "file", Mode: 0o640, Owner: "root", Group: "kubegcd"},
		"/var/lib/kubegcd":                              {Type: "dir", Mode: 0o700, Owner: "kubegcd", Group: "kubegcd"},
		"/usr/share/doc/kubegcd/README.md":              file(0o644),
		"/usr/share/doc/kubegcd/kubegcd-alerts.yaml":    file(0o644),
		"/usr/share/doc/kubegcd/kubegcd-dashboard.json": file(0o644),
		"/usr/share/doc/kubegcd/copyright":              file(0o644),
	}
	for _, c := range docPages {
		want["/usr/share/doc/kubegcd/"+docPage(c)] = file(0o644)
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v", err)
	}
	want["/usr/share/doc/kubegcd/docs"] = entry{Type: "dir", Mode: 0o755, Owner: "root", Group: "root"}
	for _, d := range docs {
		want["/usr/share/doc/kubegcd/docs/"+filepath.Base(d)] = file(0o644)
	}
	// The parents nfpm adds (/usr, /usr/bin …) are the system's: only
	// their presence matters, and dpkg keeps the system's modes.
	for name, e := range got {
		if _, ok := want[name]; !ok && e.Type == "dir" && e.Owner == "root" && e.Mode&0o022 == 0 {
			delete(got, name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files of %s (-want +got):\n%s", filepath.Base(b.deb), diff)
	}
}

func TestDebMaintainerFiles(t *testing.T) {
	b := buildOrFail(t)
	ctrl := t.TempDir()
	dpkgDeb(t, "--control", b.deb, ctrl)
	conffiles, err := os.ReadFile(filepath.Join(ctrl, "conffiles"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("/etc/kubegcd/kubegcd.conf\n", string(conffiles)); diff != "" {
		t.Errorf("conffiles (-want +got):\n%s", diff)
	}
	for script, src := range map[string]string{
		"preinst": "preinstall.sh", "postinst": "postinstall.sh", "prerm": "preremove.sh", "postrm": "postremove.sh",
	} {
		got, err := os.ReadFile(filepath.Join(ctrl, script))
		if err != nil {
			t.Error(err)
			continue
		}
		want, err := os.ReadFile(filepath.Join("scripts", src))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not scripts/%s", script, src)
		}
		if st, err := os.Stat(filepath.Join(ctrl, script)); err != nil {
			t.Error(err)
		} else if st.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, want 0755", script, st.Mode())
		}
	}
	// The pre-install script creates the user before the sysusers.d file
	// is unpacked: it carries the file's line, which must not drift.
	preinst, _ := os.ReadFile(filepath.Join(ctrl, "preinst"))
	if !bytes.Contains(preinst, []byte("'"+sysusersLine+"'")) {
		t.Errorf("preinst does not carry the sysusers.d line %s", sysusersLine)
	}
}

// installed extracts the .deb into a throwaway root, over a copy of the
// machine's systemd units, which systemd-analyze verify --root wants
// (sysinit.target and the like).
func installed(t *testing.T, b built) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "usr/lib/systemd/system"), os.DirFS("/usr/lib/systemd/system")); err != nil {
		t.Fatalf("copying the machine's systemd units: %v", err)
	}
	dpkgDeb(t, "--extract", b.deb, root)
	return root
}

func TestDebInstalledTree(t *testing.T) {
	b := buildOrFail(t)
	root := installed(t, b)
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	run := func(bin string, args ...string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(root, bin), args...).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
		}
		return string(out)
	}

	t.Run("binary", func(t *testing.T) {
		if got, want := run("usr/bin/kubegcd", "version"), "kubegcd "+b.version+"\n"; got != want {
			t.Errorf("kubegcd version = %q, want %q", got, want)
		}
		// Static, which is why the package depends on no library.
		exe, err := elf.Open(filepath.Join(root, "usr/bin/kubegcd"))
		if err != nil {
			t.Fatal(err)
		}
		defer exe.Close()
		for _, p := range exe.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("usr/bin/kubegcd is dynamically linked (it has an ELF interpreter): the package would need Depends: libc6")
			}
		}
		// Through the symlink, kubegcd is the kubectl plugin's CLI.
		if got := run("usr/bin/kubectl-gc", "help"); !strings.Contains(got, "kubectl gc why") {
			t.Errorf("kubectl-gc help does not answer as kubectl gc:\n%s", got)
		}
	})

	t.Run("units", func(t *testing.T) {
		sa, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Fatal("systemd-analyze not found: install Debian's systemd package (apt-get install systemd), or run make test as root")
		}
		for _, u := range units {
			// Each unit is deploy/'s, which deploy/'s test holds to its
			// security exposure, with only the binary's path changed.
			deployed, err := os.ReadFile(filepath.Join(repo, "deploy", u.file))
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(string(deployed), "/usr/local/bin/kubegcd", "/usr/bin/kubegcd")
			got := read("usr/lib/systemd/system/" + u.file)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("packaged %s (-want +got):\n%s", u.file, diff)
			}
			if !strings.Contains(got, "\nExecStart=/usr/bin/kubegcd ") {
				t.Errorf("packaged %s has no ExecStart=/usr/bin/kubegcd line", u.file)
			}
			// In the extracted root, verify also finds ExecStart's binary
			// where the unit says.
			out, err := exec.Command(sa, "verify", "--root="+root, u.name).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify of the packaged %s: %v\n%s", u.name, err, out)
			}
		}
	})

	t.Run("config", func(t *testing.T) {
		want, err := os.ReadFile(filepath.Join(repo, "deploy", "kubegcd.conf"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), read("etc/kubegcd/kubegcd.conf")); diff != "" {
			t.Errorf("/etc/kubegcd/kubegcd.conf (-want +got):\n%s", diff)
		}
		if got := read("usr/lib/sysusers.d/kubegcd.conf"); got != sysusersLine+"\n" {
			t.Errorf("sysusers.d/kubegcd.conf = %q, want %q", got, sysusersLine+"\n")
		}
	})

	t.Run("docs", func(t *testing.T) {
		// Each page is what the shipped binary says of its command.
		for _, c := range docPages {
			args := append([]string{"help"}, strings.Fields(c)...)
			want := run("usr/bin/kubegcd", args...)
			if got := read("usr/share/doc/kubegcd/" + docPage(c)); got != want || !strings.Contains(got, "Usage") {
				t.Errorf("%s is not kubegcd %s's help:\n%s", docPage(c), strings.Join(args, " "), got)
			}
		}
	})
}
