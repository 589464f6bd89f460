package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clock is a fake time that a test moves.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// notPackages are lines `go build -v` prints that name no package.
var notPackages = []string{
	"go: downloading github.com/spf13/pflag v1.0.6",
	"# github.com/kubegcd/kubegcd/internal/db",
	"internal/db/open.go:12:2: undefined: foo",
}

// Off a terminal, a log gets a line at the start, one every 100 packages,
// one after 30 s without a line, and the count at the end. Everything that
// is not a package goes to stderr unchanged.
func TestProgressInALog(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	var out, errw bytes.Buffer
	p := newProgress("kube-apiserver", &out, &errw, false, 80, c.now)
	for _, l := range notPackages {
		p.line(l)
	}
	pkgs := []string{"internal/goarch", "runtime", "github.com/kubegcd/kubegcd/internal/api",
		"vendor/golang.org/x/net/http2/hpack", "command-line-arguments"}
	for i := range 250 {
		c.t = c.t.Add(100 * time.Millisecond)
		p.line(pkgs[i%len(pkgs)])
	}
	// The link step compiles no package for a while: 25 s after the last
	// line nothing is said, 31 s after it the time is.
	for _, d := range []time.Duration{20 * time.Second, 6 * time.Second, time.Second} {
		c.t = c.t.Add(d)
		p.tick()
	}
	p.done(true)
	want := "building kube-apiserver…\n" +
		"building kube-apiserver… 100 packages compiled, 10s\n" +
		"building kube-apiserver… 200 packages compiled, 20s\n" +
		"building kube-apiserver… 250 packages compiled, 51s\n" +
		"built kube-apiserver: 250 packages compiled in 52s\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(strings.Join(notPackages, "\n")+"\n", errw.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

// On a terminal, one line updates in place: the count, the time and the
// package last compiled, cut to the width; an error clears it first and it
// is drawn again after.
func TestProgressOnATerminal(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	var out, errw bytes.Buffer
	p := newProgress("kubegcd", &out, &errw, true, 60, c.now)
	c.t = c.t.Add(1500 * time.Millisecond)
	p.line("runtime")
	p.line("# github.com/kubegcd/kubegcd/internal/db")
	c.t = c.t.Add(time.Second)
	p.tick()
	p.line("github.com/kubegcd/kubegcd/internal/some/very/long/package/path")
	p.done(true)
	const clear = "\r\033[K"
	want := clear + "building kubegcd… 0 packages compiled, 0s" +
		clear + "building kubegcd… 1 package compiled, 2s: runtime" +
		clear + clear + "building kubegcd… 1 package compiled, 2s: runtime" +
		clear + "building kubegcd… 1 package compiled, 3s: runtime" +
		clear + "building kubegcd… 2 packages compiled, 3s: github.com/kube…" +
		clear + "built kubegcd: 2 packages compiled in 3s\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if got := errw.String(); got != "# github.com/kubegcd/kubegcd/internal/db\n" {
		t.Errorf("stderr %q, want the error line alone", got)
	}
	for _, l := range strings.Split(out.String(), clear) {
		if n := len([]rune(strings.TrimSuffix(l, "\n"))); n > 59 {
			t.Errorf("line %q is %d characters, wider than the terminal's 60 less one", l, n)
		}
	}
}

// run runs the command, passes its exit status on, and says when a build
// failed.
func TestRun(t *testing.T) {
	for _, tt := range []struct {
		name       string
		script     string
		code       int
		out, err   string
		usageError bool
	}{
		{name: "ok", script: `printf 'runtime\nerrors\n' >&2`, out: "building x…\nbuilt x: 2 packages compiled in 0s\n"},
		{name: "fails", script: `printf 'runtime\n# p\np.go:1:1: bad\n' >&2; exit 3`, code: 3,
			out: "building x…\n", err: "# p\np.go:1:1: bad\nbuilding x failed after 0s: 1 package compiled\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := run([]string{"x", "--", "sh", "-c", tt.script}, &out, &errw, false, 80)
			if code != tt.code || out.String() != tt.out || errw.String() != tt.err {
				t.Errorf("run: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
					code, out.String(), errw.String(), tt.code, tt.out, tt.err)
			}
		})
	}
	var out, errw bytes.Buffer
	if code := run([]string{"go", "build"}, &out, &errw, false, 80); code != 2 || !strings.HasPrefix(errw.String(), "usage:") {
		t.Errorf("run without LABEL --: exit %d, stderr %q; want the usage and exit 2", code, errw.String())
	}
}

// Every go build of make demo, kubegcd's and the control plane's, goes
// through buildprogress with -v: none is silent for minutes.
func TestMakeDemoBuildsShowProgress(t *testing.T) {
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	// A line ending in a backslash goes on on the next.
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	if !strings.Contains(text, "\nPROGRESS := $(BIN)/buildprogress\n") {
		t.Errorf("Makefile: no PROGRESS := $(BIN)/buildprogress")
	}
	recipes := map[string][]string{}
	target := ""
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "\t"):
			if target != "" {
				recipes[target] = append(recipes[target], strings.TrimSpace(l))
			}
		case l == "" || strings.HasPrefix(l, "#"):
		default:
			target = ""
			if i := strings.Index(l, ":"); i > 0 && !strings.Contains(l[:i], "=") {
				target = l[:i]
			}
		}
	}
	for _, tgt := range []string{"demo", "$(BIN)/etcd", "$(BIN)/kube-apiserver", "$(BIN)/kube-controller-manager"} {
		builds := 0
		for _, r := range recipes[tgt] {
			if !strings.Contains(r, "$(GO) build") {
				continue
			}
			builds++
			if !strings.Contains(r, "$(PROGRESS)") || !strings.Contains(r, "$(GO) build -v") {
				t.Errorf("Makefile: %s builds without progress: %s", tgt, r)
			}
		}
		if builds == 0 {
			t.Errorf("Makefile: no go build in the recipe of %s", tgt)
		}
	}
}

// Make expands a rule's prerequisites when it reads the rule. A variable
// defined below a rule that names it is empty there: make never builds that
// prerequisite, and a clean clone fails where a used checkout passes.
func TestMakefileDefinesVariablesBeforeUse(t *testing.T) {
	out, err := exec.Command("make", "-C", "../..", "--warn-undefined-variables", "-n", "help").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n help: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "warning: undefined variable") {
			t.Errorf("Makefile uses a variable before defining it: %s", l)
		}
	}
}
