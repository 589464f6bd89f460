package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	lookupEnv      func(string) (string, bool)
	now            func() time.Time
}

type command struct {
	name string
	// synopsis is the usage line after the program's name, and what
	// follows it in the command list.
	synopsis, summary string
	run               func(ctx context.Context, e *env, args []string) error
}

// commands are the client commands, in the order help lists them.
var commands = []command{
	{"get", "get pending|audit|stuck|lint|leases [flags]", "list what kubegcd holds, decided, or found", runGet},
	{"why", "why KIND/NAME [-n NS] [flags]", "explain in words why an object is, or is not, collected", runWhy},
	{"tree", "tree KIND/NAME [-n NS] [-o tree|json|yaml|dot] [--at TIME]", "an object's owners up and dependents down", runTree},
	{"cascade", "cascade KIND/NAME [-n NS] [--propagation P]", "what deleting an object would take with it", runCascade},
	{"status", "status [flags]", "mode, leader, mirror and controllers", runStatus},
	{"release", "release [--reason TEXT]", "resume enforcement held by the blast-radius cap", runRelease},
	{"kubectl-plugin", "kubectl-plugin install [--dir DIR]", "install the kubectl plugin: kubectl gc …", runPlugin},
}

// IsCommand reports whether name is a client command.
func IsCommand(name string) bool {
	_, ok := lookupCommand(name)
	return ok
}

func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// Synopsis lists the client commands for prog's help.
func Synopsis(prog string) string {
	var b strings.Builder
	for _, c := range commands {
		line := "  " + prog + " " + c.synopsis
		if len(line) < 41 {
			fmt.Fprintf(&b, "%-41s%s\n", line, c.summary)
		} else {
			fmt.Fprintf(&b, "%s\n%41s%s\n", line, "", c.summary)
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

// Main runs a client command (args[0]) as prog and returns the exit code:
// 0, 1 when kubegcd cannot be reached or answers an error, 2 on a usage
// error. It answers help too, for the kubectl plugin, which has no
// kubegcd help to ask.
func Main(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	e := &env{prog: prog, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv, now: time.Now}
	return e.main(ctx, args)
}

func (e *env) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, pluginUsage())
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) > 1 {
			return e.main(ctx, []string{args[1], "--help"})
		}
		fmt.Fprint(e.stdout, pluginUsage())
		return 0
	}
	c, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(e.stderr, "%s: unknown command %q (see '%s help')\n", e.prog, args[0], e.prog)
		return 2
	}
	err := c.run(ctx, e, args[1:])
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(e.stderr, "%s: %s (see '%s help %s')\n", e.prog, ue.msg, e.prog, c.name)
		return 2
	default:
		fmt.Fprintf(e.stderr, "%s: %s\n", e.prog, oneLine(err.Error()))
		return 1
	}
}

// flagSet is a command's flags with their help text.
func (e *env) flagSet(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(e.prog+" "+name, flag.ContinueOnError)
	// The flag package prints the usage at every parse error too: it goes
	// nowhere then, and parse prints it for -h alone.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s\n\n%s\n\nFlags:\n", e.prog, synopsis, strings.TrimSpace(description))
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags and arguments in any order, as kubectl takes them
// (why deploy/web -n prod), and returns the arguments; -h prints the
// usage to helpOut.
func parse(fs *flag.FlagSet, args []string, helpOut io.Writer) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(helpOut)
				fs.Usage()
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		// After "--", everything is an argument.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
}
