package app

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

// runMain runs kubegcd with args as Main does, the daemon replaced by one
// that returns at once.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	p := &program{stdout: &out, stderr: &errb, daemon: func(context.Context, *runConfig, *slog.Logger) error { return nil }}
	code = p.main(context.Background(), args)
	return code, out.String(), errb.String()
}

// TestRunHelpGroups: kubegcd help run lists every flag of the run command
// exactly once, in the section of its group, as kube-controller-manager
// prints its flags. The flags come from the command itself, so a flag
// added outside a group fails here.
func TestRunHelpGroups(t *testing.T) {
	code, help, stderr := runMain(t, "help", "run")
	if code != 0 || stderr != "" {
		t.Fatalf("help run: exit %d, stderr %q", code, stderr)
	}
	if _, viaFlag, _ := runMain(t, "run", "--help"); viaFlag != help {
		t.Errorf("run --help differs from help run:\n%s", cmp.Diff(help, viaFlag))
	}

	// Where help shows each flag: section titles, then flag lines.
	shownIn := map[string][]string{}
	section := ""
	title := regexp.MustCompile(`^(\S.*) flags:$`)
	flagLine := regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9-]+)`)
	for _, line := range strings.Split(help, "\n") {
		if m := title.FindStringSubmatch(line); m != nil {
			section = m[1]
		} else if m := flagLine.FindStringSubmatch(line); m != nil {
			shownIn[m[1]] = append(shownIn[m[1]], section)
		}
	}

	groups := newRunFlags().groups
	groupOf := func(name string) string {
		var in []string
		for _, g := range groups.Order {
			if groups.Sets[g].Lookup(name) != nil {
				in = append(in, strings.ToUpper(g[:1])+g[1:])
			}
		}
		if len(in) != 1 {
			t.Errorf("--%s is in groups %q, want exactly one", name, in)
			return ""
		}
		return in[0]
	}
	p := &program{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	run := p.runCommand()
	run.InitDefaultHelpFlag()
	var names []string
	run.Flags().VisitAll(func(f *pflag.Flag) {
		names = append(names, f.Name)
		if want := groupOf(f.Name); !slices.Equal(shownIn[f.Name], []string{want}) {
			t.Errorf("--%s shown in sections %q, want once in %q", f.Name, shownIn[f.Name], want)
		}
	})
	for name := range shownIn {
		if !slices.Contains(names, name) {
			t.Errorf("help shows --%s, which run does not take", name)
		}
	}

	// The groups the issue names, each holding the flags one looks for there.
	for flag, want := range map[string]string{
		"kubeconfig": "Cluster", "db": "Database", "listen": "HTTP", "auth-token-file": "HTTP",
		"tls-cert-file": "HTTP", "dry-run": "Controllers", "leader-elect": "Leader election",
		"log-level": "Logging", "config": "Generic",
	} {
		if got := shownIn[flag]; !slices.Equal(got, []string{want}) {
			t.Errorf("--%s shown in %q, want %q", flag, got, want)
		}
	}
}

func TestVersion(t *testing.T) {
	want := "kubegcd " + version() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if code, stdout, stderr := runMain(t, args...); code != 0 || stdout != want || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout, stderr, want)
		}
	}
	// -v is verbosity in Kubernetes tools, not the version.
	if code, _, _ := runMain(t, "-v"); code != exitUsage {
		t.Errorf("-v: exit %d, want %d", code, exitUsage)
	}
}

// TestCompletion: kubegcd completion writes a script for each shell
// (bash's parses), and the completion it drives knows run's flags and
// their values.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			code, script, stderr := runMain(t, "completion", shell)
			// Each script names kubegcd and asks it for the words.
			if code != 0 || stderr != "" || !strings.Contains(script, "kubegcd") || !strings.Contains(script, " __complete ") {
				t.Fatalf("exit %d, stderr %q, script of %d bytes without kubegcd and __complete", code, stderr, len(script))
			}
			if shell != "bash" {
				return
			}
			path := filepath.Join(t.TempDir(), "kubegcd.bash")
			if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
				t.Fatalf("bash -n: %v\n%s", err, out)
			}
		})
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: staging, context: {cluster: c, user: u}}, {name: prod, context: {cluster: c, user: u}}]
current-context: prod
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--log-"}, []string{"--log-format", "--log-level"}},
		{[]string{"run", "--log-format", ""}, []string{"auto", "text", "json", "journal"}},
		{[]string{"get", "p"}, []string{"pending"}},
		{[]string{"get", "pending", "-o", ""}, []string{"table", "wide", "json", "yaml"}},
		{[]string{"migrate", ""}, []string{"up", "down", "version"}},
		{[]string{"help", "ru"}, []string{"rules", "run"}},
		{[]string{"run", "--kubeconfig", kubeconfig, "--context", ""}, []string{"prod", "staging"}},
	}
	for _, tc := range tests {
		code, stdout, _ := runMain(t, append([]string{"__complete"}, tc.args...)...)
		var got []string
		for _, line := range strings.Split(stdout, "\n") {
			if line != "" && !strings.HasPrefix(line, ":") && !strings.HasPrefix(line, "Completion ended") {
				got = append(got, strings.SplitN(line, "\t", 2)[0])
			}
		}
		if code != 0 || !slices.Equal(got, tc.want) {
			t.Errorf("complete %q: exit %d, %q; want %q", tc.args, code, got, tc.want)
		}
	}
}

// TestCommandLineFlagWinsOverConfig: a flag given on the command line wins
// over the config file even when it gives the flag's default value.
func TestCommandLineFlagWinsOverConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k.conf")
	if err := os.WriteFile(p, []byte("dry-run = false\ngc-workers = 5\nlisten = 127.0.0.1:9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseRunFlags("--dry-run=true", "--config", p, "--gc-workers", "20")
	if err != nil {
		t.Fatal(err)
	}
	if !c.dryRun || c.gcWorkers != 20 || c.listen != "127.0.0.1:9" {
		t.Errorf("dry-run %v, gc-workers %d, listen %s; want true, 20 from the command line and 127.0.0.1:9 from the file",
			c.dryRun, c.gcWorkers, c.listen)
	}
	for _, key := range []string{"help", "config", "version", "h"} {
		if err := os.WriteFile(p, []byte(key+" = true\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := parseRunFlags("--config", p); err == nil || !strings.Contains(err.Error(), `unknown setting "`+key+`"`) {
			t.Errorf("config key %q: err = %v, want an unknown setting", key, err)
		}
	}
}

// TestUsageErrors: a command line that cannot work costs one line on
// stderr, naming the way to the help, and exit code 2.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--frobnicate"}, "kubegcd: unknown flag: --frobnicate (see 'kubegcd help run')"},
		{[]string{"run", "-db", "k.db"}, "kubegcd: unknown flag -db: long flags take two dashes, --db (see 'kubegcd help run')"},
		{[]string{"run", "-dry-run=false"}, "kubegcd: unknown flag -dry-run=false: long flags take two dashes, --dry-run (see 'kubegcd help run')"},
		{[]string{"run", "--gc-workers", "many"},
			`kubegcd: invalid --gc-workers "many": want a whole number (see 'kubegcd help run')`},
		{[]string{"run", "--db"}, "kubegcd: flag needs an argument: --db (see 'kubegcd help run')"},
		{[]string{"run", "now"}, `kubegcd: unexpected argument "now" (see 'kubegcd help run')`},
		{[]string{"run", "--log-level", "loud"}, `kubegcd: invalid --log-level "loud": want debug, info, warn or error`},
		{[]string{"migrate", "-db", "k.db", "up"}, "kubegcd: unknown flag -db: long flags take two dashes, --db (see 'kubegcd help migrate')"},
		{[]string{"migrate"}, "kubegcd: migrate needs exactly one of up, down or version (see 'kubegcd help migrate')"},
		{[]string{"db", "backup"}, "kubegcd: db needs check, or backup DEST (see 'kubegcd help db')"},
		{[]string{"explode"}, `kubegcd: unknown command "explode" (see 'kubegcd help')`},
		{[]string{"help", "explode"}, `kubegcd: unknown command "explode" (see 'kubegcd help')`},
		{[]string{"version", "now"}, `kubegcd: unexpected argument "now" (see 'kubegcd help version')`},
		{[]string{"get", "pending", "-o", "xml"}, `kubegcd: invalid --output "xml": want table, wide, json or yaml (see 'kubegcd help get')`},
	}
	for _, tc := range tests {
		code, stdout, stderr := runMain(t, tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want+"\n" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	// Alone, kubegcd says what it does, on stderr: it was not asked for help.
	if code, stdout, stderr := runMain(t); code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, "kubegcd mirrors") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, _ := runMain(t, "help"); code != 0 || !strings.Contains(stdout, "kubegcd completion bash|zsh|fish") {
		t.Errorf("help: exit %d, %q", code, stdout)
	}
}
