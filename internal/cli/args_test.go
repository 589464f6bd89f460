package cli

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
				var ue *usageError
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

func TestParseFlagsAnywhere(t *testing.T) {
	tests := []struct {
		args          []string
		wantNamespace string
		wantArgs      []string
	}{
		{[]string{"deploy/web", "-n", "prod"}, "prod", []string{"deploy/web"}},
		{[]string{"-n", "prod", "deploy", "web"}, "prod", []string{"deploy", "web"}},
		{[]string{"deploy", "-n=prod", "web"}, "prod", []string{"deploy", "web"}},
		{[]string{"--", "-n", "x"}, "", []string{"-n", "x"}},
		{nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			ns := fs.String("n", "", "")
			got, err := parse(fs, tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if *ns != tt.wantNamespace {
				t.Errorf("-n = %q, want %q", *ns, tt.wantNamespace)
			}
			if diff := cmp.Diff(tt.wantArgs, got); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var ue *usageError
	if _, err := parse(fs, []string{"x", "--nope"}, io.Discard); !errors.As(err, &ue) {
		t.Errorf("unknown flag: %v, want a usage error", err)
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
		{"get", "pending", "--no-such-flag"},
		{"why", "cm/x", "-n"},
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
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, c.name, "--help")
			if code != 0 || !strings.HasPrefix(stdout, "Usage: kubegcd "+c.name) || strings.Count(stdout, "Usage:") != 1 || stderr != "" {
				t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			code, stdout2, _ := runCLI(t, nil, "help", c.name)
			if code != 0 || stdout2 != stdout {
				t.Errorf("help %s: exit %d, %q; want what --help prints", c.name, code, stdout2)
			}
		})
	}
}
