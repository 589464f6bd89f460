package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDebInstallsWithDpkg installs, reinstalls and purges the .deb with dpkg
// itself, its maintainer scripts included, chrooted into an overlay of the
// machine's own root: what dpkg writes lands in a tmpfs of a private mount
// namespace that goes with the test, so the machine is not touched.
func TestDebInstallsWithDpkg(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("installing the .deb needs root (an overlay mount, chroot): run it as root, as CI runs make test")
	}
	b := buildOrFail(t)
	sys := newOverlay(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := sys.chroot(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out, err := sys.nsenter("cp", b.deb, filepath.Join(sys.root, "tmp", "kubegcd.deb")).CombinedOutput(); err != nil {
		t.Fatalf("copying the .deb into the overlay: %v\n%s", err, out)
	}

	run("dpkg", "--install", "/tmp/kubegcd.deb")
	// The pre-install script made the user before dpkg unpacked the
	// files, which dpkg then gave to it by name.
	user := regexp.MustCompile(`^kubegcd:x:[0-9]+:[0-9]+:kubegcd daemon:/var/lib/kubegcd:`)
	if got := run("getent", "passwd", "kubegcd"); !user.MatchString(got) {
		t.Errorf("getent passwd kubegcd = %q, want a match of %s", got, user)
	}
	owners := "700 kubegcd:kubegcd /var/lib/kubegcd\n640 root:kubegcd /etc/kubegcd/kubegcd.conf\n755 root:root /usr/bin/kubegcd\n"
	if got := run("stat", "-c", "%a %U:%G %n", "/var/lib/kubegcd", "/etc/kubegcd/kubegcd.conf", "/usr/bin/kubegcd"); got != owners {
		t.Errorf("installed modes and owners:\n%s\nwant:\n%s", got, owners)
	}
	if got := run("dpkg-query", "--show", "--showformat=${Conffiles}", "kubegcd"); !strings.Contains(got, " /etc/kubegcd/kubegcd.conf ") {
		t.Errorf("dpkg's conffiles of kubegcd = %q, want /etc/kubegcd/kubegcd.conf", got)
	}
	if got, want := run("kubegcd", "version"), "kubegcd "+b.version+"\n"; got != want {
		t.Errorf("kubegcd version = %q, want %q", got, want)
	}
	for _, u := range units {
		if out := run("systemd-analyze", "verify", "/usr/lib/systemd/system/"+u.file); strings.TrimSpace(out) != "" {
			t.Errorf("systemd-analyze verify of the installed %s:\n%s", u.file, out)
		}
	}
	// Installing must not enable kubegcd: it needs a kubeconfig first.
	if out, _ := sys.chroot("systemctl", "is-enabled", "kubegcd.service").CombinedOutput(); strings.TrimSpace(string(out)) != "disabled" {
		t.Errorf("systemctl is-enabled kubegcd.service = %q, want disabled", out)
	}

	// Again over itself, as an upgrade: the operator's edit of the
	// conffile stays, and so does the one user.
	const edit = "# added by the operator\n"
	run("sh", "-c", `printf %s "$1" >> /etc/kubegcd/kubegcd.conf`, "sh", edit)
	run("dpkg", "--install", "/tmp/kubegcd.deb")
	if got := run("cat", "/etc/kubegcd/kubegcd.conf"); !strings.HasSuffix(got, edit) {
		t.Errorf("the reinstall lost the edit of /etc/kubegcd/kubegcd.conf:\n%s", got)
	}
	if got := run("grep", "-c", "^kubegcd:", "/etc/passwd"); got != "1\n" {
		t.Errorf("/etc/passwd has %s kubegcd users after the reinstall, want 1", got)
	}

	// Purge takes the package's files, the conffile too, but not the
	// database: it holds the audit history.
	run("touch", "/var/lib/kubegcd/kubegcd.db")
	run("dpkg", "--purge", "kubegcd")
	for _, gone := range []string{"/usr/bin/kubegcd", "/usr/lib/systemd/system/kubegcd.service", "/usr/lib/systemd/system/kubegcd@.service",
		"/etc/kubegcd"} {
		if out, err := sys.chroot("test", "!", "-e", gone).CombinedOutput(); err != nil {
			t.Errorf("%s is still there after dpkg --purge: %v %s", gone, err, out)
		}
	}
	run("test", "-f", "/var/lib/kubegcd/kubegcd.db")
}

// overlay is a root file system made of the machine's, with writes going to
// a tmpfs, in a mount namespace of its own.
type overlay struct {
	pid  int    // a process holding the namespace
	root string // the overlay's mount point, inside the namespace
}

func newOverlay(t *testing.T) overlay {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: it comes with Debian's util-linux and coreutils", tool)
		}
	}
	dir := t.TempDir()
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		holder.Process.Kill()
		holder.Wait()
	})
	// Enter only once unshare has made the namespace private and run
	// sleep: a mount made earlier could reach the machine's namespace.
	pid := strconv.Itoa(holder.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		comm, _ := os.ReadFile(filepath.Join("/proc", pid, "comm"))
		if strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unshare did not start sleep in its namespace within 10 s")
		}
	}
	mine, _ := os.Readlink("/proc/self/ns/mnt")
	theirs, err := os.Readlink(filepath.Join("/proc", pid, "ns", "mnt"))
	if err != nil || theirs == mine {
		t.Fatalf("unshare made no mount namespace of its own (%s, ours %s, %v)", theirs, mine, err)
	}
	o := overlay{pid: holder.Process.Pid, root: filepath.Join(dir, "root")}
	setup := `set -e
mount -t tmpfs tmpfs "$1"
mkdir "$1/upper" "$1/work" "$1/root"
mount -t overlay overlay -o lowerdir=/,upperdir="$1/upper",workdir="$1/work" "$1/root"
mount --rbind /dev "$1/root/dev"
mount -t proc proc "$1/root/proc"`
	if out, err := o.nsenter("sh", "-c", setup, "sh", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting the overlay: %v\n%s", err, out)
	}
	return o
}

// nsenter runs a command in the overlay's namespace, outside the chroot.
func (o overlay) nsenter(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--target", strconv.Itoa(o.pid), "--mount", "--"}, args...)...)
}

// chroot runs a command in the overlay's root, with the environment dpkg
// expects of root.
func (o overlay) chroot(args ...string) *exec.Cmd {
	cmd := o.nsenter(append([]string{"chroot", o.root}, args...)...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8"}
	return cmd
}
