package cmdline

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tool is a small command tree: prog with a command "do" that takes
// --count, -n/--name, a group of flags in "grouped", and fails as told.
func tool(fail error) *cobra.Command {
	root := &cobra.Command{Use: "prog", Args: RejectCommand, RunE: func(*cobra.Command, []string) error { return ExitCode(ExitUsage) }}
	SetHelp(root, "prog does things\n")
	do := &cobra.Command{Use: "do [flags]", Short: "do it", RunE: func(*cobra.Command, []string) error { return fail }}
	do.Flags().Int("count", 1, "how many")
	do.Flags().StringP("name", "n", "", "which")
	var groups NamedFlagSets
	groups.FlagSet("first").String("alpha", "", "the first")
	groups.FlagSet("second").Bool("beta", false, "the second")
	grouped := &cobra.Command{Use: "grouped", RunE: func(*cobra.Command, []string) error { return nil }}
	groups.AddTo(grouped.Flags())
	grouped.SetHelpFunc(func(c *cobra.Command, _ []string) { Help(c, &groups) })
	root.AddCommand(do, grouped)
	return root
}

func TestExecute(t *testing.T) {
	tests := []struct {
		name       string
		fail       error
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"ok", nil, []string{"do", "--count", "2"}, 0, ""},
		{"usage error from the command", Usagef("no %s", "way"), []string{"do"}, 2, "prog: no way (see 'prog help do')\n"},
		{"runtime error on two lines", errors.New("broke\n  badly"), []string{"do"}, 1, "prog: broke badly\n"},
		{"code of its own", errors.New("corrupt"), []string{"do"}, 3, "prog: corrupt\n"},
		// What a terminal would act on is spelled out, not sent to it.
		{"runtime error with escapes", errors.New("no pod \x1b]0;title\x07web\u202e\x1b[2K"), []string{"do"}, 1,
			`prog: no pod \x1b]0;title\aweb\u202e\x1b[2K` + "\n"},
		{"usage error with an escape", Usagef("no %s", "w\x1b[1Aay"), []string{"do"}, 2, `prog: no w\x1b[1Aay (see 'prog help do')` + "\n"},
		{"exit code alone", ExitCode(4), []string{"do"}, 4, ""},
		{"unknown flag", nil, []string{"do", "--colour"}, 2, "prog: unknown flag: --colour (see 'prog help do')\n"},
		{"long flag, one dash", nil, []string{"do", "-count=3"},
			2, "prog: unknown flag -count=3: long flags take two dashes, --count (see 'prog help do')\n"},
		// Not run: pflag would read -n with the value "ame=x".
		{"long flag with a shorthand's letter, one dash", errors.New("ran"), []string{"do", "-name=x"},
			2, "prog: unknown flag -name=x: long flags take two dashes, --name (see 'prog help do')\n"},
		{"a value with one dash", nil, []string{"do", "-n", "-count", "--name", "-count"}, 0, ""},
		{"after --", nil, []string{"do", "--", "-count"}, 0, ""},
		{"shorthands that are not a flag", nil, []string{"do", "-xy"}, 2, "prog: unknown shorthand flag: 'x' in -xy (see 'prog help do')\n"},
		{"bad value", nil, []string{"do", "--count", "many"},
			2, `prog: invalid --count "many": want a whole number (see 'prog help do')` + "\n"},
		{"unknown command", nil, []string{"explode"}, 2, `prog: unknown command "explode" (see 'prog help')` + "\n"},
		{"mistyped command", nil, []string{"undo"}, 2, `prog: unknown command "undo", did you mean "do"? (see 'prog help')` + "\n"},
		{"mistyped command, by its start", nil, []string{"group"}, 2, `prog: unknown command "group", did you mean "grouped"? (see 'prog help')` + "\n"},
		{"help of a mistyped command", nil, []string{"help", "undo"}, 2, `prog: unknown command "undo", did you mean "do"? (see 'prog help')` + "\n"},
		{"no command", nil, nil, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := tool(tc.fail)
			root.SetOut(&stdout)
			var code func(error) int // nil: 1
			if tc.wantCode == 3 {
				code = func(error) int { return 3 }
			}
			got := Execute(context.Background(), root, tc.args, &stderr, code)
			if got != tc.wantCode || stderr.String() != tc.wantStderr || stdout.Len() != 0 {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, nothing, %q", got, stdout.String(), stderr.String(), tc.wantCode, tc.wantStderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var stdout bytes.Buffer
	root := tool(nil)
	root.SetOut(&stdout)
	if code := Execute(context.Background(), root, []string{"help", "grouped"}, &bytes.Buffer{}, nil); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := stdout.String()
	first, second := strings.Index(help, "\nFirst flags:\n      --alpha string"), strings.Index(help, "\nSecond flags:\n      --beta")
	if !strings.HasPrefix(help, "Usage: prog grouped [flags]\n") || first < 0 || second < first {
		t.Errorf("help of a command with groups of flags:\n%s", help)
	}
	stdout.Reset()
	root = tool(nil)
	root.SetOut(&stdout)
	Execute(context.Background(), root, []string{"do", "-h"}, &bytes.Buffer{}, nil)
	if help := stdout.String(); !strings.Contains(help, "Usage: prog do [flags]\n\nDo it.\n\nFlags:\n") || !strings.Contains(help, "-n, --name string") {
		t.Errorf("help of a command:\n%s", help)
	}
}

func TestDidYouMean(t *testing.T) {
	words := []string{"demo-shop", "demo-batch", "kube-system", "kube-public", "kube-node-lease", "prod-a", "prod-b", "Default"}
	tests := []struct{ typed, want string }{
		{"demo-shopp", `, did you mean "demo-shop"?`},
		{"prod-c", `, did you mean "prod-a" or "prod-b"?`},
		{"default", `, did you mean "Default"?`},
		{"kube", `, did you mean "kube-public" or "kube-system" or "kube-node-lease"?`},
		{"payments", ""},
		{"demo-shop", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := DidYouMean(tt.typed, words); got != tt.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
}
