// Package cmdline is what kubegcd's commands share on the command line
// (spf13/cobra and spf13/pflag, as kubectl and kube-controller-manager):
// one line and exit code 2 for a usage error, one help layout, and flags in
// named groups as Kubernetes components print them.
package cmdline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Exit codes every command shares; a command may add its own.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// UsageError is a command line that cannot work: exit code 2, and the
// message points at the command's help.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}

// ExitCode is an error whose message was printed already (or needs none):
// the process ends with this code and prints nothing more.
type ExitCode int

func (c ExitCode) Error() string { return fmt.Sprintf("exit code %d", int(c)) }

// Execute runs root with args and returns the process's exit code: 0; 2 for
// a usage error, printed as one line on stderr that points at the help; or
// code(err) for any other error (1 when code is nil), printed as one line.
func Execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer, code func(error) int) int {
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetFlagErrorFunc(flagError)
	cmd, rest, err := root.Find(args)
	if err == nil && (len(args) == 0 || args[0] != cobra.ShellCompRequestCmd) {
		err = singleDash(cmd, rest)
	}
	if err == nil {
		cmd, err = root.ExecuteContextC(ctx)
	}
	if err == nil {
		return ExitOK
	}
	if cmd == nil {
		cmd = root
	}
	prog := root.DisplayName()
	var ec ExitCode
	var ue *UsageError
	switch {
	case errors.As(err, &ec):
		return int(ec)
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s (see '%s')\n", prog, OneLine(ue.Msg), helpCommandLine(cmd))
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %s\n", prog, OneLine(err.Error()))
	if code == nil {
		return ExitError
	}
	return code(err)
}

// flagError is the usage error of a flag the command line cannot parse.
// A bad value is one line naming the flag and what it wants, as a
// command's own checks say it, rather than pflag's "invalid argument … for
// … flag: strconv.ParseInt: …".
func flagError(_ *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return &UsageError{err.Error()}
	}
	return Usagef("invalid --%s %q: %s", bad.GetFlag().Name, bad.GetValue(), Wants(err))
}

// Wants says, of an error setting a flag (pflag's FlagSet.Set, Parse),
// what the flag wants when the error is a bad value (see flagError), and
// is the error's own text otherwise.
func Wants(err error) string {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err.Error()
	}
	return wants(bad.GetFlag().Value, bad.Unwrap())
}

// pflagWants says what each of pflag's own value types wants, by its type
// name.
var pflagWants = map[string]string{
	"bool":     "want true or false",
	"int":      "want a whole number",
	"int8":     "want a whole number",
	"int16":    "want a whole number",
	"int32":    "want a whole number",
	"int64":    "want a whole number",
	"uint":     "want a whole number from 0",
	"uint8":    "want a whole number from 0",
	"uint16":   "want a whole number from 0",
	"uint32":   "want a whole number from 0",
	"uint64":   "want a whole number from 0",
	"float32":  "want a number such as 2.5",
	"float64":  "want a number such as 2.5",
	"duration": "want a duration such as 90s, 5m or 168h, whose largest unit is h",
	"count":    "want a whole number",

	"stringToInt":   "want NAME=NUMBER pairs separated by commas",
	"stringToInt64": "want NAME=NUMBER pairs separated by commas",
	"stringSlice":   "want values separated by commas, quoted as in CSV",
	"intSlice":      "want whole numbers separated by commas",
	"durationSlice": "want durations separated by commas, such as 30s,5m",
}

// wants says what a flag's value v wants, given why Set refused a value:
// pflag's own types fail with Go's parse errors (strconv, time), which
// pflagWants puts in words; any other Value's error is its own, which says
// what it wants.
func wants(v pflag.Value, cause error) string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == reflect.TypeFor[pflag.FlagSet]().PkgPath() {
		if w, ok := pflagWants[v.Type()]; ok {
			return w
		}
	}
	if cause == nil {
		return "want another value"
	}
	return cause.Error()
}

// singleDash refuses a long flag given with one dash, as kubegcd took them
// before pflag: pflag reads -db as the shorthands d and b, and, worse,
// -namespace=prod as -n with the value "amespace=prod". args are cmd's,
// flags and arguments; a flag's value in the next argument is skipped.
func singleDash(cmd *cobra.Command, args []string) error {
	fs := cmd.Flags()
	for i := 0; i < len(args); i++ {
		a := args[i]
		var f *pflag.Flag
		switch {
		case a == "--":
			return nil
		case strings.HasPrefix(a, "--"):
			f = fs.Lookup(a[2:]) // nil with "=value": nothing to skip
		case len(a) == 2 && a[0] == '-':
			f = fs.ShorthandLookup(a[1:])
		case len(a) > 2 && a[0] == '-':
			name, _, _ := strings.Cut(a[1:], "=")
			if fs.Lookup(name) != nil {
				return Usagef("unknown flag %s: long flags take two dashes, --%s", a, name)
			}
		}
		if f != nil && f.NoOptDefVal == "" {
			i++ // its value
		}
	}
	return nil
}

// helpCommandLine is the command line that shows cmd's help: "kubegcd help
// get", "kubectl gc help why".
func helpCommandLine(cmd *cobra.Command) string {
	root := cmd.Root()
	if cmd.Parent() == root && cmd.Name() == "help" {
		cmd = root // help's own error: a command that does not exist
	}
	return root.DisplayName() + " help" + strings.TrimPrefix(cmd.CommandPath(), root.DisplayName())
}

// RejectCommand is the Args of a root command: an argument is a command
// that does not exist, and the message names those it may have meant.
// (cobra's own message spans lines.)
func RejectCommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return Usagef("unknown command %q%s", args[0], didYouMean(cmd, args[0]))
	}
	return nil
}

// didYouMean names the commands of root near typed, as cobra suggests
// them (two edits away, or starting with it): ", did you mean "get"?".
func didYouMean(root *cobra.Command, typed string) string {
	if root.SuggestionsMinimumDistance <= 0 {
		root.SuggestionsMinimumDistance = 2
	}
	return meant(root.SuggestionsFor(typed))
}

// meant is ", did you mean "a" or "b"?" for words, each once, or "" for
// none.
func meant(words []string) string {
	var quoted []string
	for _, s := range words {
		if q := strconv.Quote(s); !slices.Contains(quoted, q) {
			quoted = append(quoted, q)
		}
	}
	if len(quoted) == 0 {
		return ""
	}
	return ", did you mean " + strings.Join(quoted, " or ") + "?"
}

// maxSuggestions is how many words DidYouMean names at most.
const maxSuggestions = 3

// DidYouMean names the words near typed as cobra suggests commands (at
// most two edits away, case aside, or starting with it), nearest first,
// at most maxSuggestions: ", did you mean "demo-shop"?"; "" when none is
// near. Names in a cluster (a namespace, say) are suggested as commands
// are.
func DidYouMean(typed string, words []string) string {
	if typed == "" {
		return ""
	}
	type near struct {
		word string
		dist int
	}
	var found []near
	lower := strings.ToLower(typed)
	for _, w := range words {
		d := editDistance(lower, strings.ToLower(w))
		if d <= 2 || strings.HasPrefix(strings.ToLower(w), lower) {
			found = append(found, near{w, d})
		}
	}
	slices.SortStableFunc(found, func(a, b near) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.word, b.word)
	})
	var out []string
	for _, n := range found {
		if n.word != typed && len(out) < maxSuggestions {
			out = append(out, n.word)
		}
	}
	return meant(out)
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// SetHelp gives root the help command and the help layout of this package:
// text is root's own help, every other command's is Help's.
func SetHelp(root *cobra.Command, text string) {
	root.SetHelpCommand(helpCommand())
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if c == root {
			fmt.Fprint(c.OutOrStdout(), text)
			return
		}
		Help(c, nil)
	})
}

// helpCommand is `help [command]`: the command's help on stdout, or a usage
// error for a command that does not exist (cobra's own prints the root's
// help and exits 0).
func helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "show a command's help",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range c.Root().Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			cmd, _, err := root.Find(args)
			if err != nil || (cmd == root && len(args) > 0) {
				return Usagef("unknown command %q%s", strings.Join(args, " "), didYouMean(root, args[0]))
			}
			cmd.InitDefaultHelpFlag() // for the help to list it
			return cmd.Help()
		},
	}
}

// Help prints cmd's help: its usage line, what it does, its commands and
// its flags, in the groups of flags when it has them (nil: one list).
func Help(cmd *cobra.Command, groups *NamedFlagSets) {
	w := cmd.OutOrStdout()
	use := cmd.UseLine()
	if !cmd.Runnable() && cmd.HasAvailableSubCommands() {
		use = cmd.CommandPath() + " COMMAND"
	}
	fmt.Fprintf(w, "Usage: %s\n", use)
	// Trim only newlines: a description may start indented.
	if long := strings.Trim(cmd.Long, "\n"); long != "" {
		fmt.Fprintf(w, "\n%s\n", long)
	} else if short := strings.TrimSuffix(cmd.Short, "."); short != "" {
		// The summary, as a sentence.
		fmt.Fprintf(w, "\n%s%s.\n", strings.ToUpper(short[:1]), short[1:])
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprint(w, "\nCommands:\n")
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(w, "  %-*s  %s\n", cmd.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	cols := width(w)
	if groups != nil {
		groups.print(w, cols)
		return
	}
	if flags := cmd.LocalFlags(); flags.HasAvailableFlags() {
		fmt.Fprintf(w, "\nFlags:\n%s", flags.FlagUsagesWrapped(cols))
	}
}

// width is the terminal's width when w is one, else 0: no wrapping, for
// what reads a pipe or a file.
func width(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// NamedFlagSets are a command's flags in named groups, in the order help
// prints them: k8s.io/component-base/cli/flag's NamedFlagSets, without
// pulling component-base in.
type NamedFlagSets struct {
	Order []string
	Sets  map[string]*pflag.FlagSet
}

// FlagSet returns the group named name, creating it last in the order.
func (n *NamedFlagSets) FlagSet(name string) *pflag.FlagSet {
	if n.Sets == nil {
		n.Sets = map[string]*pflag.FlagSet{}
	}
	if _, ok := n.Sets[name]; !ok {
		n.Sets[name] = pflag.NewFlagSet(name, pflag.ContinueOnError)
		n.Order = append(n.Order, name)
	}
	return n.Sets[name]
}

// GroupAnnotation is the flag annotation AddTo sets to a flag's group, so
// that the tools that document a command's flags (hack/gendocs) show the
// groups its help shows.
const GroupAnnotation = "kubegcd.io/flag-group"

// AddTo adds every group's flags to fs, the command's own.
func (n *NamedFlagSets) AddTo(fs *pflag.FlagSet) {
	for _, name := range n.Order {
		set := n.Sets[name]
		set.VisitAll(func(f *pflag.Flag) { _ = set.SetAnnotation(f.Name, GroupAnnotation, []string{name}) })
		fs.AddFlagSet(set)
	}
}

func (n *NamedFlagSets) print(w io.Writer, cols int) {
	for _, name := range n.Order {
		fs := n.Sets[name]
		if !fs.HasAvailableFlags() {
			continue
		}
		fmt.Fprintf(w, "\n%s flags:\n%s", strings.ToUpper(name[:1])+name[1:], fs.FlagUsagesWrapped(cols))
	}
}

// OneLine joins the lines of an error's text, so that it stays one line on
// stderr, and spells out what else a terminal would act on (Printable): an
// error may quote a name or a server's message.
func OneLine(s string) string {
	return Printable(strings.Join(strings.Fields(s), " "))
}
