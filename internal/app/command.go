package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegcd/kubegcd/internal/cli"
	"github.com/kubegcd/kubegcd/internal/clusteradd"
	"github.com/kubegcd/kubegcd/internal/cmdline"
	"github.com/kubegcd/kubegcd/internal/db"
)

// usage is kubegcd's own help: the commands in a few words.
var usage = `kubegcd mirrors a Kubernetes cluster's object metadata and ownership graph
into SQLite, finds garbage with SQL and collects it (or, in dry-run, records
what it would do), keeping a durable audit history served over HTTP.

Usage:
  kubegcd run [flags]                    run the daemon
  kubegcd migrate up|down|version [--db PATH]
                                         manage the database schema
  kubegcd db check|backup [--db PATH] [DEST]
                                         check the database, or copy it while
                                         kubegcd runs
  kubegcd cluster add|remove [flags]     give kubegcd its own least-privilege
                                         identity in a cluster, or take it away
  kubegcd version                        print the version (also --version)
  kubegcd completion bash|zsh|fish       print a shell completion script
  kubegcd help [command]                 show help

Run 'kubegcd help run' for the daemon's flags.

Client commands, kubectl-style (also 'kubectl gc …' once the plugin is installed):
` + cli.Synopsis("kubegcd") + "\n" + cli.ConnHelp()

// Main runs the kubegcd command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	p := &program{stdout: stdout, stderr: stderr, daemon: run}
	return p.main(ctx, args)
}

// Command is kubegcd's command tree, for the tools that document it
// (hack/gendocs writes its man pages).
func Command() *cobra.Command {
	return (&program{stdout: os.Stdout, stderr: os.Stderr, daemon: run}).command()
}

// program is what the command line runs with; tests give their own daemon.
type program struct {
	stdout, stderr io.Writer
	daemon         func(ctx context.Context, cfg *runConfig, logger *slog.Logger) error
}

func (p *program) main(ctx context.Context, args []string) int {
	return cmdline.Execute(ctx, p.command(), args, p.stderr, exitCode)
}

func (p *program) command() *cobra.Command {
	root := &cobra.Command{
		Use:     "kubegcd",
		Short:   "Kubernetes garbage collection with an audit trail",
		Long:    strings.TrimSpace(strings.SplitN(usage, "\n\n", 2)[0]),
		Version: version(),
		Args:    cmdline.RejectCommand,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprint(p.stderr, usage)
			return cmdline.ExitCode(exitUsage)
		},
	}
	// Not -v, which Kubernetes tools keep for verbosity.
	root.Flags().Bool("version", false, "print the version and exit")
	root.SetVersionTemplate("kubegcd {{.Version}}\n")
	root.SetOut(p.stdout)
	root.SetErr(p.stderr)
	cmdline.SetHelp(root, usage)
	root.AddCommand(p.runCommand(), migrateCommand(), dbCommand(), &cobra.Command{
		Use:   "version",
		Short: "print the version",
		Args:  noArguments,
		Run:   func(c *cobra.Command, _ []string) { fmt.Fprintln(c.OutOrStdout(), "kubegcd", version()) },
	})
	root.AddCommand(clusteradd.Command(p.stdout, p.stderr))
	root.AddCommand(cli.Commands("kubegcd", p.stdout, p.stderr, Local)...)
	return root
}

// configError is a flag or config-file value kubegcd run cannot work with.
type configError struct{ error }

// exitCode is the exit code of a command's error: see the constants.
func exitCode(err error) int {
	var ce configError
	switch {
	case errors.As(err, &ce):
		return exitUsage
	case errors.Is(err, db.ErrCorrupt) || db.IsCorrupt(err):
		return exitCorrupt
	}
	return exitError
}

// noArguments is the Args of a command that takes none.
func noArguments(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return cmdline.Usagef("unexpected argument %q", args[0])
	}
	return nil
}

const runHelp = `Runs the daemon until SIGINT or SIGTERM (exit 0), or until a failure leaves it
unable to do its job: one line on stderr, exit 1 (3: the database is corrupt;
2: a bad flag or config value).

Under systemd (Type=notify, $NOTIFY_SOCKET) it says READY=1 once it serves,
what it does in STATUS=, and STOPPING=1; with WatchdogSec= it pings the
watchdog only while its loops make progress and its database writer answers.`

func (p *program) runCommand() *cobra.Command {
	f := newRunFlags()
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "run the daemon",
		Long:  runHelp,
		Args:  noArguments,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.complete(cmd.Flags())
			if err != nil {
				return configError{err}
			}
			err = p.daemon(cmd.Context(), cfg, newLogger(p.stderr, cfg.logLevel, cfg.logFormat))
			if prefix := fatalPrefix(p.stderr, cfg.logFormat); err != nil && prefix != "" {
				// In the journal, the last line at error priority, as
				// the log's own.
				fmt.Fprintf(p.stderr, "%skubegcd: %s\n", prefix, cmdline.OneLine(err.Error()))
				return cmdline.ExitCode(exitCode(err))
			}
			return err
		},
	}
	f.groups.AddTo(cmd.Flags())
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { cmdline.Help(c, &f.groups) })
	for name, words := range valueCompletions {
		complete := cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp)
		_ = cmd.RegisterFlagCompletionFunc(name, complete)
	}
	_ = cmd.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]cobra.Completion,
		cobra.ShellCompDirective) {
		return kubeContexts(f.cfg.kubeconfig), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// kubeContexts are the contexts of the kubeconfig run would read, as
// kubectl completes --context.
func kubeContexts(kubeconfig string) []cobra.Completion {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := rules.Load()
	if err != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(config.Contexts))
}

const migrateHelp = `  up       apply every migration this binary carries
  down     revert the newest applied migration
  version  print the schema version`

func migrateCommand() *cobra.Command {
	var dbPath string
	cmd := &cobra.Command{
		Use:                   "migrate up|down|version [--db PATH]",
		Short:                 "manage the database schema",
		Long:                  migrateHelp,
		ValidArgs:             []string{"up", "down", "version"},
		DisableFlagsInUseLine: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdline.Usagef("migrate needs exactly one of up, down or version")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			v, dirty, err := db.Migrate(cmd.Context(), dbPath, args[0])
			if err != nil {
				return err
			}
			state := ""
			if dirty {
				state = " (dirty)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema version %d%s (this kubegcd supports up to %d)\n",
				v, state, db.LatestVersion())
			return nil
		},
	}
	cmd.Flags().StringVar(&dbPath, "db", "kubegcd.db", "path of the SQLite database")
	return cmd
}
