package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

func TestParseObjectRef(t *testing.T) {
	tests := []struct {
		args    []string
		want    objectRef
		wantErr string
	}{
		{args: []string{"deploy/web"}, want: objectRef{"deploy", "web"}},
		{args: []string{"deployments.apps/web"}, want: objectRef{"deployments.apps", "web"}},
		{args: []string{"ConfigMap", "app-config"}, want: objectRef{"ConfigMap", "app-config"}},
		{args: []string{"deploy"}, wantErr: "want KIND/NAME or KIND NAME"},
		{args: []string{"deploy/"}, wantErr: "want KIND/NAME or KIND NAME"},
		{args: []string{"/web"}, wantErr: "want KIND/NAME or KIND NAME"},
		{args: []string{"deploy/web/x"}, wantErr: "want KIND/NAME or KIND NAME"},
		{args: []string{"deploy/web", "other"}, wantErr: "not both"},
		{args: []string{"deploy", "web", "more"}, wantErr: "too many arguments"},
		{args: nil, wantErr: "no object given"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := parseObjectRef(tt.args)
			if tt.wantErr != "" {
				var ue *cmdline.UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a usage error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestFlagsAnywhere: flags and arguments come in any order, as kubectl
// takes them (why deploy/web -n prod), and after "--" everything is an
// argument.
func TestFlagsAnywhere(t *testing.T) {
	tests := []struct {
		args      []string
		wantQuery string
	}{
		{[]string{"deploy/web", "-n", "prod"}, "kind=deploy&name=web&namespace=prod"},
		{[]string{"-n", "prod", "deploy", "web"}, "kind=deploy&name=web&namespace=prod"},
		{[]string{"deploy", "-n=prod", "web"}, "kind=deploy&name=web&namespace=prod"},
		{[]string{"deploy", "--namespace", "prod", "web"}, "kind=deploy&name=web&namespace=prod"},
		{[]string{"--", "-n", "x"}, "kind=-n&name=x"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			queries := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case queries <- r.URL.RawQuery:
				default:
				}
				_, _ = io.WriteString(w, `{"items": []}`)
			}))
			defer srv.Close()
			runCLI(t, nil, append([]string{"why", "--server", srv.URL}, tt.args...)...)
			select {
			case got := <-queries:
				if got != tt.wantQuery {
					t.Errorf("asked /objects?%s, want ?%s", got, tt.wantQuery)
				}
			default:
				t.Errorf("no request made")
			}
		})
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"get"},
		{"get", "things"},
		{"get", "pending", "-o", "xml"},
		{"get", "leases", "--kind", "Pod"},
		{"get", "pending", "--rule", "BR-21-01"},
		{"get", "pending", "-n", "a", "-A"},
		{"get", "audit", "--since", "yesterday"},
		{"get", "pending", "--limit", "0"},
		{"get", "pending", "--limit", "abc"},
		{"get", "stuck", "--limit", "20000"},
		{"get", "stuck", "--min-age", "abc"},
		{"get", "pending", "-n", "Demo_Shop"},
		{"get", "audit", "--controller", "nope"},
		{"get", "audit", "--outcome", "nope"},
		{"get", "lint", "--severity", "high"},
		{"get", "pending", "--kind", "a b"},
		{"status", "--server", "127.0.0.1:8080"},
		{"get", "pending", "--no-such-flag"},
		{"why", "cm/x", "-n"},
		{"get", "pending", "-namespace=prod"},
		{"why", "cm/x", "-namespace", "prod"},
		{"status", "-output", "json"},
		{"why"},
		{"tree", "deploy/web", "-o", "wide"},
		{"tree", "deploy/web", "--at", "then"},
		{"cascade", "deploy/web", "--propagation", "sideways"},
		{"status", "extra"},
		{"kubectl-plugin"},
		{"nope"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			// No server is asked: the server URL is never reached.
			code, stdout, stderr := runCLI(t, map[string]string{envServer: "http://127.0.0.1:1"}, args...)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line on stderr", code, stdout, stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, c := range (&env{prog: "kubegcd"}).commands() {
		t.Run(c.Name(), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, c.Name(), "--help")
			if code != 0 || !strings.HasPrefix(stdout, "Usage: kubegcd "+c.Use+"\n") || strings.Count(stdout, "Usage:") != 1 || stderr != "" {
				t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			code, stdout2, _ := runCLI(t, nil, "help", c.Name())
			if code != 0 || stdout2 != stdout {
				t.Errorf("help %s: exit %d, %q; want what --help prints", c.Name(), code, stdout2)
			}
		})
	}
}

// TestPluginNames: run as kubectl gc, the commands name themselves so in
// help and errors, and the daemon's commands are not there.
func TestPluginNames(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		e := &env{prog: "kubectl gc", stdout: &out, stderr: &errb, lookupEnv: envOf(nil), now: time.Now}
		return e.main(context.Background(), args), out.String(), errb.String()
	}
	if code, stdout, _ := run("help"); code != 0 || !strings.Contains(stdout, "\n  kubectl gc why KIND/NAME") {
		t.Errorf("help: exit %d, %q", code, stdout)
	}
	if code, stdout, _ := run("why", "--help"); code != 0 || !strings.HasPrefix(stdout, "Usage: kubectl gc why KIND/NAME") {
		t.Errorf("why --help: exit %d, %q", code, stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, `kubectl gc: unknown command "run" (see 'kubectl gc help')` + "\n"},
		{[]string{"completion", "bash"}, `kubectl gc: unknown command "completion" (see 'kubectl gc help')` + "\n"},
		{[]string{"get", "things"}, `kubectl gc: cannot get "things": want one of pending, audit, stuck, lint, leases, rules, unused, deleted-copies (see 'kubectl gc help get')` + "\n"},
	} {
		if code, _, stderr := run(tc.args...); code != 2 || stderr != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if code, _, stderr := run(); code != 2 || !strings.HasPrefix(stderr, "kubectl gc asks kubegcd") {
		t.Errorf("no arguments: exit %d, stderr %q", code, stderr)
	}
}

// TestPluginCompletionScript: kubectl-plugin install writes, beside the
// kubectl-gc link, the kubectl_complete-gc kubectl runs to complete the
// plugin's words; it replaces its own script, never someone else's.
func TestPluginCompletionScript(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"PATH": dir}
	if code, _, stderr := runCLI(t, vars, "kubectl-plugin", "install", "--dir", dir); code != 0 {
		t.Fatalf("install: exit %d, stderr %q", code, stderr)
	}
	path := filepath.Join(dir, completionName)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s: %v, mode %v; want an executable", path, err, st)
	}
	script, _ := os.ReadFile(path)
	if want := "exec '" + filepath.Join(dir, PluginName) + "' __complete \"$@\"\n"; !strings.HasSuffix(string(script), want) {
		t.Errorf("script:\n%s\nwant it to end with %q", script, want)
	}
	if code, _, stderr := runCLI(t, vars, "kubectl-plugin", "install", "--dir", dir); code != 0 {
		t.Fatalf("second install: exit %d, stderr %q", code, stderr)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, vars, "kubectl-plugin", "install", "--dir", dir); code != 1 || !strings.Contains(stderr, "kubegcd did not write it") {
		t.Errorf("over a script of someone else's: exit %d, stderr %q; want 1", code, stderr)
	}
	if got, _ := os.ReadFile(path); string(got) != "#!/bin/sh\necho mine\n" {
		t.Errorf("someone else's script was changed: %q", got)
	}
}
