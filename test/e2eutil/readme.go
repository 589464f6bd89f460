package e2eutil

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Example is one command of a document's console block and the answer the
// document shows for it.
type Example struct {
	// Line is the document's line of the command, from 1.
	Line int
	// Args are the command's words after the program's name.
	Args []string
	// Want are the answer's lines, as the document shows them.
	Want []string
}

// Elided is how a document leaves lines out of an answer: alone on a line,
// any number of lines, none included; at the end of a line, the rest of
// that line.
const Elided = "…"

// ConsoleExamples reads the examples of prog in the ```console blocks of a
// Markdown document: each line "$ PROG ARGS" and the lines after it, up to
// the next "$ " line or the block's end, less the blank lines that end it.
// A command's words are split at spaces; one that needs quotes is an error,
// as is a console block that starts with anything but a command.
func ConsoleExamples(doc io.Reader, prog string) ([]Example, error) {
	var out []Example
	in := false
	sc := bufio.NewScanner(doc)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !in:
			in = strings.TrimSpace(line) == "```console"
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case strings.HasPrefix(line, "$ "):
			args := strings.Fields(strings.TrimPrefix(line, "$ "))
			if len(args) == 0 || args[0] != prog {
				return nil, fmt.Errorf("line %d: %q is no command of %s", n, line, prog)
			}
			if strings.ContainsAny(line, `'"\`) {
				return nil, fmt.Errorf("line %d: %q: quotes are not read, write the command without them", n, line)
			}
			out = append(out, Example{Line: n, Args: args[1:]})
		case len(out) == 0:
			return nil, fmt.Errorf("line %d: a console block starts with %q, not a command", n, line)
		default:
			out[len(out)-1].Want = append(out[len(out)-1].Want, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		w := out[i].Want
		for len(w) > 0 && strings.TrimSpace(w[len(w)-1]) == "" {
			w = w[:len(w)-1]
		}
		out[i].Want = w
	}
	return out, nil
}

// What changes from one run of the same commands to the next: UIDs, times,
// ages and durations, and the version of kubegcd.
var (
	uidRE      = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	timeRE     = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	durationRE = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h|d|y)(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))*\b`)
	versionRE  = regexp.MustCompile(`^kubegcd \S+ at `)
)

// Normalize is a line of an answer without what changes between runs:
// UIDs, times and durations (ages among them) become UID, TIME and AGE, the
// version after "kubegcd" VERSION, and every run of spaces one space, so
// that columns that widen or narrow with an age still compare.
func Normalize(line string) string {
	line = strings.Join(strings.Fields(line), " ")
	line = uidRE.ReplaceAllString(line, "UID")
	line = timeRE.ReplaceAllString(line, "TIME")
	line = durationRE.ReplaceAllString(line, "AGE")
	return versionRE.ReplaceAllString(line, "kubegcd VERSION at ")
}

// MatchAnswer reports how got, an answer's lines, differs from want, the
// lines a document shows for it, both normalized (Normalize); want may
// elide lines (Elided). nil when they match.
func MatchAnswer(want, got []string) error {
	w := make([]string, len(want))
	for i, l := range want {
		w[i] = Normalize(l)
	}
	g := make([]string, len(got))
	for i, l := range got {
		g[i] = Normalize(l)
	}
	if matchFrom(w, g) {
		return nil
	}
	return fmt.Errorf("the answer, normalized:\n%s\ndoes not match the document's, normalized:\n%s",
		indent(g), indent(w))
}

// matchFrom reports whether want, normalized, matches all of got.
func matchFrom(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == Elided {
		for skip := 0; skip <= len(got); skip++ {
			if matchFrom(want[1:], got[skip:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 {
		return false
	}
	if prefix, cut := strings.CutSuffix(want[0], Elided); cut {
		if !strings.HasPrefix(got[0], strings.TrimSpace(prefix)) {
			return false
		}
	} else if want[0] != got[0] {
		return false
	}
	return matchFrom(want[1:], got[1:])
}

func indent(lines []string) string {
	return "    " + strings.Join(lines, "\n    ")
}
