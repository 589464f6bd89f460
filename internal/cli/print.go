package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// Output formats.
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
	outTree  = "tree"
	outDOT   = "dot"
)

// printRaw prints the API's answer as it came (json) or as YAML: what a
// script reads is the API's own document, not a re-encoding of the
// client's structs.
func printRaw(w io.Writer, output string, body []byte) error {
	if output == outYAML {
		y, err := yaml.JSONToYAML(body)
		if err != nil {
			return fmt.Errorf("converting the answer to YAML: %w", err)
		}
		body = y
	} else {
		// The API answers programs compactly; people read it indented, as
		// kubectl prints it. Only whitespace changes.
		var b bytes.Buffer
		if err := json.Indent(&b, bytes.TrimSpace(body), "", "  "); err != nil {
			return fmt.Errorf("the answer is not JSON: %w", err)
		}
		body = append(b.Bytes(), '\n')
	}
	_, err := w.Write(body)
	return err
}

// table prints rows as kubectl does: upper-case headers, columns aligned
// with three spaces between them.
type table struct {
	header []string
	rows   [][]string
}

func newTable(header ...string) *table { return &table{header: header} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	for _, row := range append([][]string{t.header}, t.rows...) {
		cells := make([]string, len(row))
		for i, c := range row {
			// A tab or newline in a name or message would break the columns;
			// anything else a terminal acts on is spelled out.
			cells[i] = cmdline.Printable(strings.Map(func(r rune) rune {
				if r == '\t' || r == '\n' || r == '\r' {
					return ' '
				}
				return r
			}, c))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// printf is fmt.Fprintf for the lines people read: every string argument,
// of the api vocabulary's string types too, and every fmt.Stringer's text,
// is made printable (cmdline.Printable), as they carry names and messages
// the server, or whoever wrote an object, chose. The format's own newlines
// stay.
func printf(w io.Writer, format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = cmdline.Printable(v)
		case fmt.Stringer:
			args[i] = cmdline.Printable(v.String())
		default:
			if rv := reflect.ValueOf(a); rv.Kind() == reflect.String {
				args[i] = cmdline.Printable(rv.String())
			}
		}
	}
	fmt.Fprintf(w, format, args...)
}

// age is kubectl's AGE: how long ago t was, as 5m, 2d or 3h10m.
func age(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(*t))
}

// ago is age with "ago", for a time that is not the object's creation;
// <never> when unset.
func ago(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<never>"
	}
	return age(t, now) + " ago"
}

// count is n and the noun, singular or plural: "1 object", "2 objects".
func count[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// kindPlural is a kind's plural as English forms it, the group after a
// dot kept: Pods, NetworkPolicies, Ingresses, ReplicaSets.apps. A kind
// that ends in s already (Endpoints) stays.
func kindPlural(kind string) string {
	name, group, dotted := strings.Cut(kind, ".")
	lower := strings.ToLower(name)
	switch {
	case name == "":
	case strings.HasSuffix(lower, "ss"), strings.HasSuffix(lower, "sh"), strings.HasSuffix(lower, "ch"),
		strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"):
		name += "es"
	case strings.HasSuffix(lower, "s"):
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		name = name[:len(name)-1] + "ies"
	default:
		name += "s"
	}
	if dotted {
		return name + "." + group
	}
	return name
}

// orNone shows an empty cell as kubectl shows a missing value.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// useColor: colours only on a terminal, and never when NO_COLOR is set to
// anything but "" (https://no-color.org).
func useColor(w io.Writer, lookupEnv func(string) (string, bool)) bool {
	if v, _ := lookupEnv("NO_COLOR"); v != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
