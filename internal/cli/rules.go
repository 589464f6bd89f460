package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// Local is what the client commands do without a daemon, which the binary
// that holds them gives: the CLI itself reads no rule.
type Local struct {
	// CheckRules reads a rules file as kubegcd run would load it, without
	// a database, and returns why each refused rule is refused.
	CheckRules func(file string, data []byte) []api.RuleError
}

// ruleSource is where a rule comes from, in a few words: built-in, the
// file and line that define it, or both for an overridden built-in.
func ruleSource(r api.RuleInfo) string {
	at := ""
	if r.File != "" {
		at = filepath.Base(r.File) + ":" + strconv.Itoa(r.Line)
	}
	switch {
	case r.BuiltIn && at != "":
		return "built-in (" + at + ")"
	case r.BuiltIn:
		return "built-in"
	}
	return at
}

// rulesTable is get rules: each rule loaded, then each refused one, whose
// ERROR says why.
func rulesTable(body []byte, f *getFlags, now time.Time) (*table, int, error) {
	var a api.RuleList
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	header := []string{"ID", "SOURCE", "ACTION", "PASSES", "CAP", "MATCHES", "LAST PASS", "OUTCOME", "ERROR"}
	if f.output == outWide {
		header = append(header, "FINDINGS", "DURATION", "HASH", "DESCRIPTION")
	}
	t := newTable(header...)
	for _, r := range a.Items {
		last, outcome, errText, took := "<never>", "<none>", "<none>", "<none>"
		if p := r.LastPass; p != nil {
			last = ago(&p.StartedAt, now)
			outcome, errText = passOutcome(p), orNone(p.Error)
			took = (time.Duration(p.DurationSeconds * float64(time.Second))).Round(time.Millisecond).String()
		}
		cells := []string{r.ID, ruleSource(r), r.Action, rulePasses(r), ruleCap(r.Limits), strconv.Itoa(r.Matches), last,
			outcome, errText}
		if f.output == outWide {
			cells = append(cells, strconv.Itoa(r.Findings), took, shortHash(r.Hash), r.Description)
		}
		t.add(cells...)
	}
	for _, e := range a.Errors {
		source := filepath.Base(e.File)
		if e.Line > 0 {
			source += ":" + strconv.Itoa(e.Line)
		}
		detail := e.Detail
		if e.Field != "" {
			detail = e.Field + ": " + detail
		}
		cells := []string{orNone(e.Rule), source, "<none>", "<none>", "<none>", "<none>", "<never>", "<none>",
			"refused: " + detail}
		if f.output == outWide {
			cells = append(cells, "<none>", "<none>", "<none>", "<none>")
		}
		t.add(cells...)
	}
	return t, len(a.Items) + len(a.Errors), nil
}

// rulePasses says when a rule makes its passes: "every 5m", or its
// schedule's cron expression.
func rulePasses(r api.RuleInfo) string {
	if r.Schedule != "" {
		return r.Schedule
	}
	if d, err := time.ParseDuration(r.Interval); err == nil {
		return "every " + shortDuration(d)
	}
	return orNone(r.Interval)
}

// ruleCap is a rule's limits in a few words: "10", "5%", "10, 5%".
func ruleCap(l api.RuleLimits) string {
	var parts []string
	if l.MaxCount > 0 {
		parts = append(parts, strconv.Itoa(l.MaxCount))
	}
	if l.MaxPercent > 0 {
		parts = append(parts, strconv.FormatFloat(l.MaxPercent, 'f', -1, 64)+"%")
	}
	if len(parts) == 0 {
		return "<none>"
	}
	return strings.Join(parts, ", ")
}

// passOutcome is what a rule's last pass came to, in a few words:
// "reported" for a rule that reports, what a rule that deletes did
// otherwise.
func passOutcome(p *api.RulePass) string {
	a := p.Acted
	switch {
	case p.Error != "":
		return "failed"
	case a == nil:
		return "reported"
	case a.Capped != "":
		return "capped"
	}
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, what+" "+strconv.Itoa(n))
		}
	}
	add(a.Deleted, "deleted")
	add(a.DryRun, "dry-run")
	add(a.Notified, "notified")
	add(a.Waiting, "waiting")
	skipped := 0
	for _, n := range a.Skipped {
		skipped += n
	}
	add(skipped, "left")
	add(a.Failed, "failed")
	if len(parts) == 0 {
		return "nothing due"
	}
	return strings.Join(parts, ", ")
}

// shortDuration is d as people write it: 5m rather than 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// shortHash is a rule hash's start, as git shows a commit.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return orNone(h)
}

// unusedItem is one row of get unused: a match of an unused-* rule.
type unusedItem struct {
	Rule string `json:"rule"`
	api.RuleMatch
}

// unusedDefaultLimit is how many matches get unused reads unless --limit
// says.
const unusedDefaultLimit = 10000

// fetchUnused reads the matches of every unused-* built-in rule, in -n's
// namespace and of --kind when given, following each rule's cursor, up to
// --limit in all; the answer is one list of them, by namespace, kind, name
// and rule.
func fetchUnused(ctx context.Context, c *Client, q url.Values, f *getFlags) ([]byte, error) {
	var list api.RuleList
	if _, err := c.GetJSON(ctx, "/rules", nil, &list); err != nil {
		return nil, err
	}
	want := cmp.Or(f.limit, unusedDefaultLimit)
	items := []unusedItem{}
	for _, r := range list.Items {
		if !r.BuiltIn || !strings.HasPrefix(r.ID, "unused-") {
			continue
		}
		path := "/rules/" + url.PathEscape(r.ID) + "/matches"
		pq := url.Values{}
		for _, k := range []string{"namespace", "kind"} {
			if v := q.Get(k); v != "" {
				pq.Set(k, v)
			}
		}
		for len(items) < want {
			pq.Set("limit", strconv.Itoa(min(want-len(items), 1000)))
			var page api.RuleMatchList
			if _, err := c.GetJSON(ctx, path, pq, &page); err != nil {
				return nil, err
			}
			for _, m := range page.Items {
				items = append(items, unusedItem{Rule: r.ID, RuleMatch: m})
			}
			if page.Next == "" {
				break
			}
			pq.Set("cursor", page.Next)
		}
	}
	slices.SortStableFunc(items, func(a, b unusedItem) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Rule, b.Rule))
	})
	return json.MarshalIndent(struct {
		Items []unusedItem `json:"items"`
	}{items}, "", "  ")
}

func unusedTable(body []byte, f *getFlags, now time.Time) (*table, int, error) {
	var a struct {
		Items []unusedItem `json:"items"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	header := []string{"KIND", "NAME", "RULE", "MATCHED", "REASON"}
	if f.output == outWide {
		header = append(header, "API VERSION", "UID")
	}
	t := withNamespace(f, header...)
	for _, m := range a.Items {
		cells := []string{m.Kind, m.Name, m.Rule, age(m.Since, now), m.Reason}
		if f.output == outWide {
			cells = append(cells, m.APIVersion, m.UID)
		}
		addRow(t, f, m.Namespace, cells...)
	}
	return t, len(a.Items), nil
}

const rulesHelp = `Tests or checks a cleanup rules file, as kubegcd run loads those of
--rules-dir.

  test FILE   sends the file to a running kubegcd (POST /rules/evaluate),
              which checks each rule and runs it once against its mirror,
              storing nothing: what each rule would match now
  check FILE  reads the file here, without a daemon: its fields, and that
              each select is one statement that reads (what it may read,
              only a daemon can tell)

FILE is a path, or - for standard input. Refused rules are printed to
stderr as FILE:LINE: field: why, and the exit code is then 1, as it is
when a rule's evaluation fails; otherwise 0. -o json or yaml prints the
API's answer of test.

` + connHelp

// rulesFlags are the flags of rules.
type rulesFlags struct {
	conn   connFlags
	output string
}

func rulesCommand(e *env) *cobra.Command {
	f := &rulesFlags{}
	cmd := newCommand("rules test|check FILE [-o text|json|yaml]", "test a cleanup rules file against kubegcd, or check it here",
		rulesHelp)
	cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return []cobra.Completion{"test", "check"}, noFiles
		}
		if len(args) == 1 {
			return []cobra.Completion{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
		}
		return nil, noFiles
	}
	f.conn.register(cmd.Flags())
	registerOutput(cmd, &f.output, "text", outJSON, outYAML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return f.run(cmd.Context(), e, args) }
	return cmd
}

func (f *rulesFlags) run(ctx context.Context, e *env, args []string) error {
	if len(args) != 2 || args[0] != "test" && args[0] != "check" {
		return usagef("want rules test FILE or rules check FILE")
	}
	path := args[1]
	data, err := readRulesFile(path, e.stdin)
	if err != nil {
		return err
	}
	if args[0] == "check" {
		if f.output != "text" {
			return usagef("-o %s applies to rules test only", f.output)
		}
		return checkRules(e, path, data)
	}
	c, err := f.conn.client(e.lookupEnv, e.stderr)
	if err != nil {
		return err
	}
	body, err := c.PostBody(ctx, "/rules/evaluate", "application/yaml", data)
	if err != nil {
		return fmt.Errorf("rules test: %w", err)
	}
	var ev api.RuleEvaluation
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("POST /rules/evaluate: the answer is not the JSON expected (is --server a kubegcd?): %w", err)
	}
	if f.output != "text" {
		if err := printRaw(e.stdout, f.output, body); err != nil {
			return err
		}
	} else if err := printEvaluation(e.stdout, &ev); err != nil {
		return err
	}
	failed := printRuleErrors(e.stderr, path, ev.Errors)
	for _, r := range ev.Rules {
		failed = failed || r.Error != ""
	}
	if failed {
		return cmdline.ExitCode(cmdline.ExitError)
	}
	return nil
}

// readRulesFile reads path, or stdin for "-", up to what the API takes
// (api.MaxRulesBody).
func readRulesFile(path string, stdin io.Reader) ([]byte, error) {
	var r io.Reader = stdin
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		r = file
	}
	if r == nil {
		r = os.Stdin
	}
	data, err := io.ReadAll(io.LimitReader(r, api.MaxRulesBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > api.MaxRulesBody {
		return nil, fmt.Errorf("%s is larger than %d bytes, the most kubegcd takes of a rules file", path, api.MaxRulesBody)
	}
	return data, nil
}

func checkRules(e *env, path string, data []byte) error {
	if e.local.CheckRules == nil {
		return fmt.Errorf("rules check: this program cannot read rules itself: run 'kubegcd rules check', " +
			"or 'rules test' against a daemon")
	}
	errs := e.local.CheckRules(path, data)
	if printRuleErrors(e.stderr, path, errs) {
		return cmdline.ExitCode(cmdline.ExitError)
	}
	printf(e.stdout, "%s: the rules' fields are valid; 'rules test' checks what each reads, against a daemon\n", path)
	return nil
}

// printRuleErrors prints each error as FILE:LINE: field: detail, FILE
// being path (the server names the body it was sent "body"), and reports
// whether there was any.
func printRuleErrors(w io.Writer, path string, errs []api.RuleError) bool {
	for _, e := range errs {
		where := path
		if e.Line > 0 {
			where += ":" + strconv.Itoa(e.Line)
		}
		field := ""
		if e.Field != "" {
			field = e.Field + ": "
		}
		printf(w, "%s: %s%s\n", where, field, e.Detail)
	}
	return len(errs) > 0
}

// printEvaluation prints each rule's matches, or why it failed.
func printEvaluation(w io.Writer, ev *api.RuleEvaluation) error {
	for i, r := range ev.Rules {
		if i > 0 {
			fmt.Fprintln(w)
		}
		took := time.Duration(r.DurationSeconds * float64(time.Second)).Round(time.Millisecond)
		if r.Error != "" {
			printf(w, "%s: failed after %s: %s\n", r.ID, took.String(), r.Error)
			continue
		}
		findings := 0
		for _, m := range r.Matches {
			if m.Finding {
				findings++
			}
		}
		summary := count(len(r.Matches)-findings, "match", "matches")
		if findings > 0 {
			summary += ", " + count(findings, "finding", "findings")
		}
		printf(w, "%s: %s (%s)\n", r.ID, summary, took.String())
		if len(r.Matches) == 0 {
			continue
		}
		t := newTable("  NAMESPACE", "KIND", "NAME", "REASON")
		for _, m := range r.Matches {
			reason := m.Reason
			if m.Finding {
				reason = "finding: " + reason
			}
			t.add("  "+orNone(m.Namespace), m.Kind, m.Name, reason)
		}
		if err := t.print(w); err != nil {
			return err
		}
	}
	if len(ev.Rules) == 0 && len(ev.Errors) == 0 {
		fmt.Fprintln(w, "No rules in the file.")
	}
	return nil
}
