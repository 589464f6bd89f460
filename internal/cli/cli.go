package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// PluginName is the executable name kubectl runs for `kubectl gc`.
const PluginName = "kubectl-gc"

// InvokedAsPlugin reports whether argv0 is the kubectl plugin's name, so
// that the binary acts as the CLI alone.
func InvokedAsPlugin(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == PluginName
}

// env is what a command runs with; tests give their own.
type env struct {
	// prog names the command in help and errors: kubegcd, or kubectl gc.
	prog           string
	stdout, stderr io.Writer
	// stdin is what a command reads for "-" (os.Stdin when nil).
	stdin     io.Reader
	lookupEnv func(string) (string, bool)
	now       func() time.Time
	local     Local
}

// commands are the client commands, in the order help lists them. Each
// command's Use is its synopsis after the program's name.
func (e *env) commands() []*cobra.Command {
	cmds := []*cobra.Command{getCommand(e), whyCommand(e), treeCommand(e), cascadeCommand(e), statusCommand(e),
		rulesCommand(e), releaseCommand(e), restoreCommand(e), pluginCommand(e)}
	e.addCompletion(cmds)
	return cmds
}

// newCommand is a client command: run checks its arguments itself, in its
// own words.
func newCommand(synopsis, summary, help string) *cobra.Command {
	return &cobra.Command{Use: synopsis, Short: summary, Long: help, Args: cobra.ArbitraryArgs,
		// The synopsis names the flags that matter.
		DisableFlagsInUseLine: true}
}

// Commands are the client commands as subcommands of prog; local is what
// they may do without a daemon.
func Commands(prog string, stdout, stderr io.Writer, local Local) []*cobra.Command {
	e := &env{prog: prog, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv, now: time.Now, local: local}
	return e.commands()
}

// Synopsis lists the client commands for prog's help.
func Synopsis(prog string) string {
	var b strings.Builder
	for _, c := range (&env{prog: prog}).commands() {
		line := "  " + prog + " " + c.Use
		if len(line) < 41 {
			fmt.Fprintf(&b, "%-41s%s\n", line, c.Short)
		} else {
			fmt.Fprintf(&b, "%s\n%41s%s\n", line, "", c.Short)
		}
	}
	return b.String()
}

const connHelp = `They ask a running kubegcd over HTTP: --server URL, else $KUBEGCD_SERVER,
else ` + DefaultServer + `; a bearer token from --token-file, else
$KUBEGCD_TOKEN.`

func pluginUsage() string {
	return "kubectl gc asks kubegcd, the garbage collector's mirror, about ownership and\n" +
		"garbage collection.\n\nUsage:\n" + Synopsis("kubectl gc") +
		"  kubectl gc help [command]\n\n" + connHelp + "\n"
}

// ConnHelp says how the client commands reach kubegcd, for kubegcd help.
func ConnHelp() string { return connHelp + "\n" }

// Main runs the client commands alone, as prog (kubectl gc), and returns
// the exit code: 0, 1 when kubegcd cannot be reached or answers an error,
// 2 on a usage error. It answers help too, for the kubectl plugin, which has
// no kubegcd help to ask.
func Main(ctx context.Context, prog string, args []string, stdout, stderr io.Writer, local Local) int {
	e := &env{prog: prog, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv, now: time.Now, local: local}
	return e.main(ctx, args)
}

func (e *env) main(ctx context.Context, args []string) int {
	root := &cobra.Command{
		Use:  strings.ReplaceAll(e.prog, " ", "-"),
		Args: cmdline.RejectCommand,
		// kubectl names a plugin "kubectl gc" in its words, not kubectl-gc.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: e.prog},
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprint(e.stderr, pluginUsage())
			return cmdline.ExitCode(cmdline.ExitUsage)
		},
		// kubectl completes a plugin's words through its __complete command;
		// a completion script of its own would be kubectl-gc's, not kubectl's.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	cmdline.SetHelp(root, pluginUsage())
	root.AddCommand(e.commands()...)
	return cmdline.Execute(ctx, root, args, e.stderr, nil)
}

// registerOutput registers -o/--output into p: allowed[0] unless the user
// picks another of allowed, which completion offers.
func registerOutput(cmd *cobra.Command, p *string, allowed ...string) {
	*p = allowed[0]
	cmd.Flags().VarP(&choice{p, allowed}, "output", "o", "output: "+orList(allowed))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
}
