package web

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/mdanchor"
)

// js/rules.js gives the UI each rule id's one-line title and the heading of
// docs/rules.md that explains it. docs/rules.md is the one source: this
// test makes the file from it, and fails when the committed copy differs.
var update = flag.Bool("update", false, "rewrite js/rules.js from docs/rules.md")

const rulesJS = "js/rules.js"

// rule is one entry of js/rules.js.
type rule struct {
	Title  string `json:"title"`
	Anchor string `json:"anchor"`
}

var (
	headingRE  = regexp.MustCompile(`^## +(.+?) *$`)
	idRE       = regexp.MustCompile("^`((?:BR|KG)-[0-9A-Z]+-[0-9]+)`$")
	idBulletRE = regexp.MustCompile("^- `((?:BR|KG)-[0-9A-Z]+-[0-9]+)`, (.+)$")
	// The rules about enforcement itself, which rows name instead of an id.
	nameBulletRE = regexp.MustCompile("^- \\*\\*`([a-z-]+)`\\.\\*\\* (.+)$")
	sentenceRE   = regexp.MustCompile(`^(.+?\.)(?:\s|$)`)
)

// plain drops Markdown's code and emphasis marks.
func plain(s string) string {
	return strings.NewReplacer("`", "", "**", "", "*", "").Replace(strings.TrimSpace(s))
}

// firstSentence is a cell's or bullet's first sentence, its title.
func firstSentence(s string) string {
	s = plain(s)
	if m := sentenceRE.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

// parseRules reads each rule's title from docs/rules.md: from its table
// rows (a row per action joined by "; "), or from the bullet that
// introduces it.
func parseRules(md string) map[string]rule {
	out := map[string]rule{}
	add := func(id, section, title string) {
		r, ok := out[id]
		if !ok {
			r = rule{Title: section + " · " + title, Anchor: mdanchor.Of(section)}
		} else {
			r.Title = strings.TrimSuffix(r.Title, ".") + "; " + title
		}
		out[id] = r
	}
	var section string
	var header []string
	for _, line := range strings.Split(md, "\n") {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			section, header = m[1], nil
			continue
		}
		if m := idBulletRE.FindStringSubmatch(line); m != nil {
			add(m[1], section, firstSentence(m[2]))
			continue
		}
		if m := nameBulletRE.FindStringSubmatch(line); m != nil {
			add(m[1], section, firstSentence(m[2]))
			continue
		}
		if !strings.HasPrefix(line, "| ") {
			header = nil
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if header == nil {
			header = cells
			continue
		}
		if len(cells) != len(header) || header[0] != "id" || !idRE.MatchString(cells[0]) {
			continue
		}
		var facts []string
		var desc string
		for i, h := range header[1:] {
			v := cells[i+1]
			switch h {
			case "upstream", "flag (default)":
			case "decides", "deletes", "finds":
				desc = firstSentence(v)
			case "action", "name":
				facts = append(facts, plain(v))
			default:
				facts = append(facts, h+" "+plain(v))
			}
		}
		title := strings.Join(facts, ", ")
		if desc != "" {
			title = strings.TrimPrefix(title+": "+desc, ": ")
		}
		add(idRE.FindStringSubmatch(cells[0])[1], section, title)
	}
	return out
}

// renderRules is js/rules.js for rules.
func renderRules(rules map[string]rule) []byte {
	body, err := json.MarshalIndent(rules, "", "  ")
	if err != nil {
		panic(err)
	}
	var b bytes.Buffer
	b.WriteString("// Made from docs/rules.md by `go test ./web -run TestRulesJS -update`: edit docs/rules.md, not this file.\n")
	b.WriteString("// Each rule id (and each rule name of enforcement itself) with a one-line title and\n")
	b.WriteString("// the anchor of the docs/rules.md heading that explains it.\n")
	b.WriteString("export const rules = ")
	b.Write(body)
	b.WriteString(";\n")
	return b.Bytes()
}

func TestRulesJS(t *testing.T) {
	md, err := os.ReadFile("../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	rules := parseRules(string(md))
	want := renderRules(rules)
	if *update {
		if err := os.WriteFile(rulesJS, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(rulesJS)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what docs/rules.md makes: run go test ./web -run TestRulesJS -update", rulesJS)
	}

	// Every rule id the code can write into a row or a finding has a
	// title, a heading to link to, and the heading is in docs/rules.md.
	ids := codeRuleIDs(t)
	if len(ids) < 10 {
		t.Fatalf("found %d rule ids in the code: the pattern no longer matches how rules are named", len(ids))
	}
	ids = append(ids, "blast-radius-cap", "audit-store")
	headings := map[string]bool{}
	for _, line := range strings.Split(string(md), "\n") {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			headings[mdanchor.Of(m[1])] = true
		}
	}
	for _, id := range ids {
		r, ok := rules[id]
		switch {
		case !ok:
			t.Errorf("rule %s has no entry in %s: docs/rules.md explains it in no table row or bullet the UI reads", id, rulesJS)
		case r.Title == "" || strings.Contains(r.Title, "\n"):
			t.Errorf("rule %s: title %q, want one line", id, r.Title)
		case !headings[r.Anchor]:
			t.Errorf("rule %s: anchor #%s is no heading of docs/rules.md", id, r.Anchor)
		}
	}
}

// codeRuleIDs are the rule ids written in the code's Go files (tests
// left out), as docs' TestEveryRuleIDDocumented finds them.
func codeRuleIDs(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`"((?:BR|KG)-[0-9A-Z]+-[0-9]+)"`)
	seen := map[string]bool{}
	err := filepath.WalkDir("../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			seen[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// The parser reads each form docs/rules.md gives a rule in.
func TestParseRules(t *testing.T) {
	md := "## ownergc\n\n| id | action | decides | upstream |\n| --- | --- | --- | --- |\n" +
		"| `BR-21-01` | `delete` | No owner is solid. The object goes. | `x` |\n" +
		"| `BR-21-01` | `remove-owner-refs` | One owner is solid. | `x` |\n\n" +
		"## ttl\n\n| id | step | TTL |\n| --- | --- | --- |\n| `BR-19-01` | 0 | 0 s |\n\n" +
		"- `BR-19-06`, hysteresis (*not in rows*): the band moves up. It moves down.\n\n" +
		"## Every controller\n\n- **`audit-store`.** No write is sent that kubegcd cannot record.\n  More.\n\n" +
		"## Lint\n\n| id | name | severity | finds |\n| --- | --- | --- | --- |\n" +
		"| `KG-LINT-01` | `dangling-owner` | warning | No object with the reference's UID (`x`). Once… |\n"
	want := map[string]rule{
		"BR-21-01":    {Title: "ownergc · delete: No owner is solid; remove-owner-refs: One owner is solid.", Anchor: "ownergc"},
		"BR-19-01":    {Title: "ttl · step 0, TTL 0 s", Anchor: "ttl"},
		"BR-19-06":    {Title: "ttl · hysteresis (not in rows): the band moves up.", Anchor: "ttl"},
		"audit-store": {Title: "Every controller · No write is sent that kubegcd cannot record.", Anchor: "every-controller"},
		"KG-LINT-01":  {Title: "Lint · dangling-owner, severity warning: No object with the reference's UID (x).", Anchor: "lint"},
	}
	got := parseRules(md)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseRules:\n got %v\nwant %v", got, want)
	}
}
