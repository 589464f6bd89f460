package app

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Text flags take a string, which the command checks after parsing, if at
// all. freeText take any (a path, a name, a reason); refusedText map each
// of the others to a value its command refuses. A string flag in neither
// fails TestBadFlagValues: say what it takes.
var (
	freeText = map[string]bool{
		"run --allowed-hosts": true, "run --auth-token-file": true, "run --client-ca-file": true, "run --config": true,
		"run --context": true, "run --db": true, "run --kubeconfig": true, "run --tls-cert-file": true,
		"run --tls-private-key-file": true, "run --rules-dir": true, "migrate --db": true, "db --db": true, "kubectl-plugin --dir": true,
		"release --reason":            true,
		"get --certificate-authority": true, "get --token-file": true, "why --certificate-authority": true,
		"why --token-file": true, "tree --certificate-authority": true, "tree --token-file": true,
		"cascade --certificate-authority": true, "cascade --token-file": true, "status --certificate-authority": true,
		"status --token-file": true, "release --certificate-authority": true, "release --token-file": true,
		"rules --certificate-authority": true, "rules --token-file": true,
		"restore --certificate-authority": true, "restore --token-file": true, "restore --uid": true,
		"cluster add --config-dir": true, "cluster add --context": true, "cluster add --kubeconfig": true,
		"cluster add --out": true, "cluster remove --config-dir": true, "cluster remove --context": true,
		"cluster remove --kubeconfig": true, "cluster remove --out": true,
		"run --audit-peer-ca-file": true, "run --audit-peer-cert-file": true, "run --audit-peer-key-file": true,
		"run --audit-peer-token-file": true,
	}
	refusedText = map[string]string{
		"run --blast-radius-resume": "never", "run --controllers": "nope", "run --deleted-copies-for": "rules", "run --leader-elect-name": "",
		"run --leader-elect-namespace": "", "run --listen": "nohostport", "run --log-format": "xml", "run --log-level": "loud",
		"cluster add --name": "Prod/1", "cluster remove --name": "Prod/1",
		"run --advertise-url": "ftp://peer", "run --audit-peers": "peer:8080",
		"run --audit-log-path": "/no-such-dir/audit.log", "run --audit-webhook-config-file": "/no-such-file",
	}
)

// flagArgs are the arguments a command takes beside the flag under test,
// so that a check of the flag after parsing is reached; get's depend on
// the list the flag filters.
func flagArgs(cmd, flag string) []string {
	switch cmd {
	case "get":
		switch flag {
		case "min-age":
			return []string{"stuck"}
		case "since", "outcome", "rule":
			return []string{"audit"}
		case "severity":
			return []string{"lint"}
		}
		return []string{"pending"}
	case "why", "tree", "cascade":
		return []string{"cm/x"}
	case "rules":
		return []string{"test", "rules.yaml"}
	case "kubectl-plugin":
		return []string{"install"}
	case "migrate":
		return []string{"version"}
	case "db":
		return []string{"check"}
	}
	return nil
}

// TestBadFlagValues walks every command and every flag: a bad value is
// refused by the command line itself, before any work, with exit code 2
// and one line that names the flag and says what it wants, in words rather
// than Go's parse errors. A typed flag (a number, a duration, a boolean,
// one of a few words…) is given a value no type takes; a text flag the bad
// value textFlags names.
func TestBadFlagValues(t *testing.T) {
	// A client command that let a bad value through would ask this
	// server, which nothing answers.
	t.Setenv("KUBEGCD_SERVER", "http://127.0.0.1:1")
	t.Setenv("KUBEGCD_TOKEN", "")
	root := (&program{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}).command()
	root.InitDefaultCompletionCmd()
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		path := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return // cobra's, for every command
			}
			key := path + " --" + f.Name
			seen[key] = true
			bad := "x!"
			if !pflagText(f.Value) && (freeText[key] || refusedText[key] != "") {
				t.Errorf("%s is typed, so no text flag: take it out of freeText and refusedText", key)
			}
			if pflagText(f.Value) {
				v, refused := refusedText[key]
				switch {
				case freeText[key]:
					return
				case !refused:
					t.Errorf("%s takes text: add it to freeText, or to refusedText with a value it refuses", key)
					return
				}
				bad = v
			}
			args := append(strings.Fields(path), flagArgs(path, f.Name)...)
			args = append(args, "--"+f.Name+"="+bad)
			t.Run(key, func(t *testing.T) {
				var out, errb bytes.Buffer
				p := &program{stdout: &out, stderr: &errb, daemon: func(context.Context, *runConfig, *slog.Logger) error {
					t.Error("the daemon ran")
					return nil
				}}
				code := p.main(context.Background(), args)
				if msg := errb.String(); code != 2 || !flagLine(msg, f.Name) {
					t.Errorf("kubegcd %s: exit %d, stderr %q; want exit 2 and one line "+
						"\"kubegcd: invalid --%s …\" saying what it wants, in words rather than Go's",
						strings.Join(args, " "), code, msg, f.Name)
				}
			})
		})
	}
	walk(root)
	for key := range freeText {
		if !seen[key] {
			t.Errorf("freeText names %s, which no command has", key)
		}
	}
	for key := range refusedText {
		if !seen[key] {
			t.Errorf("refusedText names %s, which no command has", key)
		}
	}
}

// flagLine reports whether msg is one line naming flag and what it wants,
// in words rather than Go's parse errors.
func flagLine(msg, flag string) bool {
	if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "kubegcd: invalid --"+flag) {
		return false
	}
	if !strings.Contains(msg, "want") && !strings.Contains(msg, "must") && !strings.Contains(msg, "unknown") {
		return false
	}
	for _, goWords := range []string{"strconv", "Parse", "time: ", "invalid argument"} {
		if strings.Contains(msg, goWords) {
			return false
		}
	}
	return true
}

// pflagText reports whether v is one of pflag's own text values, which
// take any string: what a command checks of it, it checks after parsing.
func pflagText(v pflag.Value) bool {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() != reflect.TypeFor[pflag.FlagSet]().PkgPath() {
		return false
	}
	switch v.Type() {
	case "string", "stringSlice", "stringArray":
		return true
	}
	return false
}
