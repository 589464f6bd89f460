package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/app"
	"github.com/kubegcd/kubegcd/internal/mdanchor"
)

// TestManPages: a page for kubegcd and for each of its commands, each
// listing the command's flags, and the same bytes when written again.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	opts, err := parseArgs([]string{"--dir", dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeManPages(opts.man); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{"kubegcd.1": "--version", "kubegcd-completion-bash.1": "--no-descriptions"}
	for _, c := range app.Command().Commands() {
		if c.IsAvailableCommand() {
			pages["kubegcd-"+c.Name()+".1"] = "--help"
		}
	}
	pages["kubegcd-run.1"] = "--leader-elect-renew-deadline"
	pages["kubegcd-get.1"] = "--all-namespaces"
	again := t.TempDir()
	if err := writeManPages(again); err != nil {
		t.Fatal(err)
	}
	for name, flag := range pages {
		page, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !strings.Contains(string(page), `\fB`+flag) {
			t.Errorf("%s does not list %s", name, flag)
		}
		if second, _ := os.ReadFile(filepath.Join(again, name)); string(second) != string(page) {
			t.Errorf("%s differs when written again", name)
		}
	}
	// gendocs's own flags are not kubegcd's: no page lists them.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		page, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(page), "man pages (section 1)") || strings.Contains(string(page), `\fB--markdown`) {
			t.Errorf("%s lists a flag of gendocs itself", e.Name())
		}
	}
}

// docsDir is the repository's docs/, which the references are committed in.
var docsDir = filepath.Join("..", "..", "docs")

// TestMarkdownUpToDate: the references committed in docs/ are what make
// docs writes now: written anew into a directory of their own (metrics.md
// and api.md from the committed copies, for their hand-written parts),
// each reads the same as the committed copy.
func TestMarkdownUpToDate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	for _, name := range partlyGenerated {
		if committed, err := os.ReadFile(filepath.Join(docsDir, name)); err == nil {
			if err := os.WriteFile(filepath.Join(dir, name), committed, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := writeMarkdown(ctx, dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range markdownDocs {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(docsDir, name))
		if err != nil {
			t.Errorf("docs/%s is missing: run make docs", name)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s is stale: run make docs (%s)", name, firstDifference(got, want))
		}
	}
}

// firstDifference names the first line where the committed copy differs
// from the fresh one.
func firstDifference(committed, fresh []byte) string {
	a, b := strings.Split(string(committed), "\n"), strings.Split(string(fresh), "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d is %q, make docs writes %q", i+1, x, y)
		}
	}
	return "same lines"
}

// TestEveryCommandAndFlagHasHelp: each command kubegcd has says what it
// does in a line, and each of its flags what it means.
func TestEveryCommandAndFlagHasHelp(t *testing.T) {
	if missing := missingHelp(commandTree()); len(missing) > 0 {
		t.Errorf("without help:\n%s", strings.Join(missing, "\n"))
	}
	// The check itself finds what lacks it.
	root := &cobra.Command{Use: "x", Short: "x"}
	sub := &cobra.Command{Use: "y", Run: func(*cobra.Command, []string) {}}
	sub.Flags().String("z", "", "")
	root.AddCommand(sub)
	want := []string{"x y: no short description", "x y --z: no usage"}
	if got := missingHelp(root); !slices.Equal(got, want) {
		t.Errorf("missingHelp = %q, want %q", got, want)
	}
}

// missingHelp lists the commands under root without a Short and the flags
// without a usage.
func missingHelp(root *cobra.Command) []string {
	var missing []string
	walk(root, func(c *cobra.Command) {
		if strings.TrimSpace(c.Short) == "" {
			missing = append(missing, c.CommandPath()+": no short description")
		}
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if strings.TrimSpace(f.Usage) == "" && !f.Hidden {
				missing = append(missing, c.CommandPath()+" --"+f.Name+": no usage")
			}
		})
	})
	return missing
}

// TestEveryCommandAndFlagDocumented: cli.md has a section for each command
// and flags.md or cli.md each flag; flags.md shows run's flags in their
// groups.
func TestEveryCommandAndFlagDocumented(t *testing.T) {
	cli, flags := cliDoc(), flagsDoc()
	root := commandTree()
	sections := 0
	walk(root, func(c *cobra.Command) {
		sections++
		if !bytes.Contains(cli, []byte("\n## "+c.CommandPath()+"\n")) {
			t.Errorf("cli.md has no section %s", c.CommandPath())
		}
		c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Hidden {
				return
			}
			row := []byte("| `--" + f.Name)
			if f.Shorthand != "" {
				row = []byte("| `-" + f.Shorthand + ", --" + f.Name)
			}
			if !bytes.Contains(cli, row) && !bytes.Contains(flags, row) {
				t.Errorf("%s --%s is in neither flags.md nor cli.md", c.CommandPath(), f.Name)
			}
		})
	})
	if sections < 12 {
		t.Errorf("cli.md has %d command sections; the command tree was not walked whole", sections)
	}
	for _, heading := range []string{"## run", "### Cluster flags", "### Controllers flags", "### Leader election flags",
		"## Client connection flags"} {
		if !bytes.Contains(flags, []byte("\n"+heading+"\n")) {
			t.Errorf("flags.md has no heading %q", heading)
		}
	}
	// A run flag sits under its group's heading.
	if i, j := bytes.Index(flags, []byte("### Leader election flags")), bytes.Index(flags, []byte("| `--leader-elect-renew-deadline")); i < 0 || j < i {
		t.Error("flags.md does not list --leader-elect-renew-deadline under Leader election flags")
	}
}

// TestAlertsExplained: metrics.md explains each alert deploy/ ships, by a
// heading of its name outside the generated part, and each metric an
// alert's expression names is in the generated table.
func TestAlertsExplained(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubegcd-alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(docsDir, "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(doc, []byte(beginGenerated))
	table, handWritten, _ := bytes.Cut(rest, []byte(endGenerated))
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\w+)\s*$`).FindAllSubmatch(rules, -1)
	if len(alerts) == 0 {
		t.Fatal("no alert found in deploy/kubegcd-alerts.yaml")
	}
	for _, a := range alerts {
		if !bytes.Contains(handWritten, []byte("\n### "+string(a[1])+"\n")) {
			t.Errorf("docs/metrics.md does not explain alert %s (a heading ### %s after the generated table)", a[1], a[1])
		}
	}
	for _, m := range regexp.MustCompile(`kubegcd_[a-z_]+`).FindAll(rules, -1) {
		if !bytes.Contains(table, []byte("| `"+string(m)+"` |")) {
			t.Errorf("alert rules name %s, which the metrics table does not list", m)
		}
	}
}

// TestMetricsDocKeepsHandWrittenText: only the part between the markers
// is written; a file without them is an error, not overwritten.
func TestMetricsDocKeepsHandWrittenText(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := []byte("# M\n\nbefore\n\n" + beginGenerated + "\nold table\n" + endGenerated + "\n\nafter\n")
	got, err := metricsDoc(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# M\n\nbefore\n\n" + beginGenerated + "\n", "| `kubegcd_reconcile_paused` | gauge | `reason` |",
		"`go_*` and `process_*`", endGenerated + "\n\nafter\n"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("metrics.md lacks %q:\n%s", want, got)
		}
	}
	if bytes.Contains(got, []byte("old table")) || bytes.Contains(got, []byte("| `go_")) {
		t.Errorf("the old table or a go_ family stayed:\n%s", got)
	}
	if _, err := metricsDoc(ctx, []byte("# M\nno markers\n")); err == nil {
		t.Error("a metrics.md without markers was rewritten")
	}
}

func TestMarkdownText(t *testing.T) {
	for _, tc := range []struct{ in, inline, anchor string }{
		{"kubegcd why", "kubegcd why", "kubegcd-why"},
		{"Leader election flags", "Leader election flags", "leader-election-flags"},
		{"('*': any) <6> a|b [x]", `('\*': any) \<6\> a\|b \[x\]`, "-any-6-ab-x"},
		{"$KUBEGCD_SERVER _x_ a_", `$KUBEGCD_SERVER \_x\_ a\_`, "kubegcd_server-_x_-a_"},
		{"two\n  lines", "two lines", "two--lines"},
	} {
		if got := inline(tc.in); got != tc.inline {
			t.Errorf("inline(%q) = %q, want %q", tc.in, got, tc.inline)
		}
		if got := mdanchor.Of(tc.in); got != tc.anchor {
			t.Errorf("mdanchor.Of(%q) = %q, want %q", tc.in, got, tc.anchor)
		}
	}
	got := paragraphs("A line\nwrapped.\n\n  col  one\n  col  two\n\n#### Linux:")
	want := "A line wrapped.\n\n```\n  col  one\n  col  two\n```\n\n\\#### Linux:"
	if got != want {
		t.Errorf("paragraphs = %q, want %q", got, want)
	}
}

// TestAPIReference: each operation of a document gets its section, in the
// order given, with its parameters and its answer's fields; a schema's
// fields are listed once, where it first appears, and later uses point
// there; a route missing from the document is an error.
func TestAPIReference(t *testing.T) {
	doc := []byte(`{"paths": {
  "/b": {"get": {"summary": "Bees", "description": "All of them.",
    "parameters": [{"name": "limit", "in": "query", "description": "At most.",
      "schema": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 500}},
      {"name": "uid", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}}],
    "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/List"}}}},
      "404": {"description": "x"}}}},
  "/a": {"get": {"summary": "Ays",
    "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/One"}}}}}}}},
"components": {"schemas": {
  "List": {"type": "object", "description": "A list.", "properties": {
    "zeta": {"type": "string", "description": "First in the type."},
    "items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}, "description": "The items."},
    "counts": {"type": "object", "additionalProperties": {"type": "integer"}}}},
  "Item": {"type": "object", "properties": {
    "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}], "description": "Null when never."},
    "state": {"type": "string", "enum": ["on", "off"]},
    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}}},
  "One": {"type": "object", "properties": {"item": {"$ref": "#/components/schemas/Item", "description": "The item."}}}}}}`)
	got, err := apiReference(doc, []api.Operation{{Method: "GET", Path: "/b"}, {Method: "GET", Path: "/a"}})
	if err != nil {
		t.Fatal(err)
	}
	var last int
	for _, want := range []string{
		"### `GET /b`\n\nBees.\n\nAll of them.\n",
		"| `limit` | query | integer, 1 to 10,000, default `500` | At most. |",
		"| `uid` | query | string, repeatable |  |",
		"Status codes: 200, 404",
		"Answer: A list.",
		"| `zeta` | string | First in the type. |",
		"| `items` | array of objects | The items. |",
		"| `items[].when` | string (date-time) or null | Null when never. |",
		"| `items[].state` | string: `on`, `off` |  |",
		"| `items[].children` | array of objects | Fields as in [`GET /b`](#get-b) `items[]`. |",
		"| `counts` | map to integer |  |",
		"### `GET /a`",
		"| `item` | object | The item. Fields as in [`GET /b`](#get-b) `items[]`. |",
	} {
		i := strings.Index(got, want)
		if i < last {
			t.Errorf("reference lacks %q after offset %d:\n%s", want, last, got)
			continue
		}
		last = i
	}
	if strings.Count(got, "`items[].children[].") > 0 {
		t.Errorf("a recursive schema was listed twice:\n%s", got)
	}
	if _, err := apiReference(doc, []api.Operation{{Method: "GET", Path: "/c"}}); err == nil {
		t.Error("a route the document lacks gave no error")
	}
}

// TestAPIDocKeepsHandWrittenText: api.md's text outside its markers is
// kept, and every operation of api.Operations is in the part between
// them, those the document leaves out too.
func TestAPIDocKeepsHandWrittenText(t *testing.T) {
	old := []byte("# API\n\nbefore\n\n" + beginGenerated + "\nold reference\n" + endGenerated + "\n\n## Errors\n\nafter\n")
	got, err := apiDoc(old)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(got, []byte("# API\n\nbefore\n\n"+beginGenerated+"\n<!-- Generated by hack/gendocs from the API's OpenAPI document;")) ||
		!bytes.HasSuffix(got, []byte(endGenerated+"\n\n## Errors\n\nafter\n")) || bytes.Contains(got, []byte("old reference")) {
		t.Errorf("api.md's hand-written text was not kept as it was:\n%.300s", got)
	}
	for _, r := range api.Operations {
		if !bytes.Contains(got, []byte("\n### `"+r.Method+" "+r.Path+"`\n")) {
			t.Errorf("api.md has no section for %s %s", r.Method, r.Path)
		}
	}
	for _, want := range []string{"| `enforcement.paused` | boolean |", "| `items[].target.uid` | string |",
		// A route the document leaves out has its section too.
		"### `GET /metrics`\n\nThe metrics, for Prometheus.\n", "[metrics.md](metrics.md) describes each metric",
		"The 200 answer is `text/plain`."} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("api.md lacks %q", want)
		}
	}
	if _, err := apiDoc([]byte("# API\nno markers\n")); err == nil {
		t.Error("an api.md without markers was rewritten")
	}
}
