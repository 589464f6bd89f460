package packaging

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	rpmutils "github.com/sassoftware/go-rpmutils"
)

// RPM file flags (rpm's rpmfileAttrs).
const (
	rpmFileConfig    = 1 << 0
	rpmFileNoReplace = 1 << 4
)

func TestRPM(t *testing.T) {
	b := buildOrFail(t)
	f, err := os.Open(b.rpm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pkg, err := rpmutils.ReadRpm(f)
	if err != nil {
		t.Fatalf("reading %s: %v", b.rpm, err)
	}
	h := pkg.Header
	tags := map[string]int{"name": rpmutils.NAME, "version": rpmutils.VERSION, "arch": rpmutils.ARCH,
		"summary": rpmutils.SUMMARY, "url": rpmutils.URL, "license": rpmutils.LICENSE}
	got := map[string]string{}
	for k, tag := range tags {
		got[k], _ = h.GetString(tag)
	}
	wantArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	want := map[string]string{"name": "kubegcd", "version": b.version, "arch": wantArch,
		"summary": "Kubernetes garbage collection with an audit trail", "url": "https://github.com/kubegcd/kubegcd",
		"license": "Apache-2.0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rpm header (-want +got):\n%s", diff)
	}
	for tag, name := range map[int]string{rpmutils.PREIN: "preinstall.sh", rpmutils.POSTIN: "postinstall.sh",
		rpmutils.PREUN: "preremove.sh", rpmutils.POSTUN: "postremove.sh"} {
		script, _ := h.GetString(tag)
		src, err := os.ReadFile(filepath.Join("scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		if script != string(src) {
			t.Errorf("rpm script tag %d is not scripts/%s", tag, name)
		}
	}

	files, err := h.GetFiles()
	if err != nil {
		t.Fatal(err)
	}
	gotFiles := map[string]string{}
	for _, fi := range files {
		gotFiles[fi.Name()] = fmt.Sprintf("%o %s:%s flags %d", fs.FileMode(fi.Mode()).Perm(), fi.UserName(), fi.GroupName(), fi.Flags())
	}
	wantFiles := map[string]string{
		"/usr/bin/kubegcd":                         "755 root:root flags 0",
		"/usr/lib/systemd/system/kubegcd.service":  "644 root:root flags 0",
		"/usr/lib/systemd/system/kubegcd@.service": "644 root:root flags 0",
		"/etc/kubegcd/kubegcd.conf":                fmt.Sprintf("640 root:kubegcd flags %d", rpmFileConfig|rpmFileNoReplace),
		"/var/lib/kubegcd":                         "700 kubegcd:kubegcd flags 0",
	}
	for name, w := range wantFiles {
		if g := gotFiles[name]; g != w {
			t.Errorf("rpm %s: %q, want %q", name, g, w)
		}
	}
}
