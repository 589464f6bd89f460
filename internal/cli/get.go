package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/api"
)

const getHelp = `Lists what kubegcd holds (pending, deleted-copies), decided (audit), or
found (stuck, lint, leases, rules, unused), as tables like kubectl's, or as
the API's own JSON or YAML.

  pending  decisions held: quarantined, backing off, or recorded in dry-run;
           those waiting longest, up to --limit (follows the API's cursor)
  audit    decisions made, newest first (follows the API's cursor up to --limit)
  stuck    deletions that do not finish, and what holds each
  lint     ownerReferences that are wrong, and why
  leases   the Lease inventory, expired ones first: holder, preferred holder,
           candidates (live/all) and findings; a Lease that candidates
           name but that does not exist shows with role <missing>
  rules    the cleanup rules: each one's source, action, interval, what it
           matches now and its last pass; a refused file or rule is a row
           whose ERROR says why
  unused   what the unused-* built-in rules match now: ConfigMaps, Secrets,
           PersistentVolumeClaims and ServiceAccounts nothing references;
           -o json is one list joined from each rule's matches, each with
           its rule
  deleted-copies
           the copies of deleted objects that 'restore' re-creates them
           from, newest first (follows the API's cursor up to --limit)

The tables of pending, stuck, lint and unused list their rows by namespace,
then kind, then name; -o json and yaml keep the API's order.

Every namespace unless -n NS. A namespace that kubegcd's mirror does not
hold is an error (exit 1) that names the namespaces it may mean, as why
says of an object it does not find; -o json and yaml print the API's
answer as it came. Each filter fits some lists only. A filter on a list it
does not fit is an error, not ignored: --controller (pending, audit),
--kind (pending, audit, stuck, unused, deleted-copies), --since (audit), --outcome (audit),
--min-age (stuck), --rule (audit, lint), --severity (lint), --limit (all
but leases and rules), -n (all but rules).

` + connHelp

// getFlags are get's filters.
type getFlags struct {
	conn                             connFlags
	namespace, output                string
	allNamespaces                    bool
	controller, kind, since, outcome string
	minAge, rule, severity           string
	limit                            int
}

// listing is one of get's lists: its endpoint, the filters it takes and
// how its table looks.
type listing struct {
	path    string
	filters []string
	// fetch reads the list; the default is one GET of path.
	fetch func(ctx context.Context, c *Client, q url.Values, f *getFlags) ([]byte, error)
	table func(body []byte, f *getFlags, now time.Time) (*table, int, error)
	what  string
	// order, when set, is the API's order parameter: the CLI says which
	// order it lists in rather than take the server's default.
	order string
	// clusterWide: -n does not apply.
	clusterWide bool
}

var listings = map[string]listing{
	"pending": {path: "/pending", filters: []string{"controller", "kind", "limit"}, fetch: pager{"/pending", 10000, 1000}.fetch,
		table: pendingTable, what: "pending decisions", order: "oldest"},
	"audit": {path: "/audit", filters: []string{"controller", "kind", "rule", "since", "outcome", "limit"}, fetch: pager{"/audit", 1000, 100}.fetch,
		table: auditTable, what: "audit rows"},
	"stuck":  {path: "/stuck", filters: []string{"kind", "min-age", "limit"}, table: stuckTable, what: "stuck deletions"},
	"lint":   {path: "/lint", filters: []string{"rule", "severity", "limit"}, table: lintTable, what: "lint findings"},
	"leases": {path: "/leases", table: leasesTable, what: "leases"},
	"rules":  {path: "/rules", table: rulesTable, what: "rules", clusterWide: true},
	"unused": {path: "/rules", filters: []string{"kind", "limit"}, fetch: fetchUnused, table: unusedTable,
		what: "unused objects"},
	"deleted-copies": {path: "/deleted-copies", filters: []string{"kind", "limit"},
		fetch: pager{"/deleted-copies", 1000, 100}.fetch, table: deletedCopiesTable, what: "copies of deleted objects"},
}

// listingNames are get's lists, as its errors name them.
const listingNames = "pending, audit, stuck, lint, leases, rules, unused, deleted-copies"

// apiParams maps get's filter flags to the API's query parameters.
var apiParams = map[string]string{"controller": "controller", "kind": "kind", "since": "since", "outcome": "outcome",
	"min-age": "minAge", "rule": "rule", "severity": "severity", "limit": "limit"}

func getCommand(e *env) *cobra.Command {
	f := &getFlags{}
	cmd := newCommand("get pending|audit|stuck|lint|leases|rules|unused|deleted-copies [-n NS|-A] [--controller C] [--kind K] [--rule R] [--since D] [--limit N] [-o table|wide|json|yaml]",
		"list what kubegcd holds, decided, or found", getHelp)
	cmd.ValidArgs = slices.Sorted(maps.Keys(listings))
	f.conn.register(cmd.Flags())
	fs := cmd.Flags()
	namespaceVar(fs, &f.namespace, "only this namespace (default: every namespace)")
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "every namespace (the default)")
	registerOutput(cmd, &f.output, outTable, outWide, outJSON, outYAML)
	choiceVar(fs, &f.controller, "controller", api.Strings(api.AuditControllers), "only this controller's: "+strings.Join(api.Strings(api.AuditControllers), ", "))
	checkedVar(fs, &f.kind, "kind", "", "string", "only this kind (a kind, or a resource's plural): pending, audit, stuck, unused, deleted-copies",
		"want a kind or a resource's plural, such as Pod or deployments.apps", isToken)
	checkedVar(fs, &f.since, "since", "", "string", "only rows newer than this: a duration such as 1h, or an RFC 3339 time",
		sinceWant, isPast)
	choiceVar(fs, &f.outcome, "outcome", api.Strings(api.Outcomes), "only this outcome: "+strings.Join(api.Strings(api.Outcomes), ", "))
	checkedVar(fs, &f.minAge, "min-age", "", "duration",
		"only deletions requested longer ago than this, such as 5m; 0 for all (default: the daemon's --stuck-after)",
		"want a duration such as 30s, 5m or 1h, or 0 for every deletion", isMinAge)
	checkedVar(fs, &f.rule, "rule", "", "string",
		"only this rule's: audit rows of a rule id such as BR-21-03, lint findings of an id such as KG-LINT-01 or its name",
		"want a rule id such as BR-21-03 or KG-LINT-01, or a lint rule's name", isToken)
	choiceVar(fs, &f.severity, "severity", api.Strings(api.Severities), "only findings of this severity: "+orList(api.Strings(api.Severities)))
	fs.IntVar(&f.limit, "limit", 0, "at most this many rows, across pages for pending, audit, unused and deleted-copies (default: 1000 pending, 100 audit and deleted-copies, 10000 unused, the API's for the others)")
	for name, values := range map[string][]string{
		"controller": api.Strings(api.AuditControllers),
		"outcome":    api.Strings(api.Outcomes),
		"severity":   api.Strings(api.Severities),
	} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return f.run(cmd.Context(), e, fs, args) }
	return cmd
}

func (f *getFlags) run(ctx context.Context, e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) != 1 {
		return usagef("want one of %s", listingNames)
	}
	l, ok := listings[args[0]]
	if !ok {
		return usagef("cannot get %q: want one of %s", args[0], listingNames)
	}
	if f.namespace != "" && f.allNamespaces {
		return usagef("-n and -A exclude each other")
	}
	if f.namespace != "" && l.clusterWide {
		return usagef("-n does not apply to get %s", args[0])
	}
	q := url.Values{}
	if f.namespace != "" {
		q.Set("namespace", f.namespace)
	}
	if l.order != "" {
		q.Set("order", l.order)
	}
	for name, param := range apiParams {
		if !fs.Changed(name) {
			continue
		}
		if !slices.Contains(l.filters, name) {
			return usagef("--%s does not apply to get %s", name, args[0])
		}
		v := fs.Lookup(name).Value.String()
		switch name {
		case "since":
			since, err := sinceTime(v, e.now())
			if err != nil {
				return err
			}
			v = since.Format(time.RFC3339Nano)
		case "limit":
			if f.limit < 1 {
				return usagef("invalid --limit %d: want a number from 1", f.limit)
			}
			// A list read in one page takes what the API does.
			if max := limitMax(l.path); l.fetch == nil && f.limit > max {
				return usagef("invalid --limit %d: get %s lists at most %d", f.limit, args[0], max)
			}
		}
		q.Set(param, v)
	}
	c, err := f.conn.client(e.lookupEnv, e.stderr)
	if err != nil {
		return err
	}
	fetch := l.fetch
	if fetch == nil {
		fetch = func(ctx context.Context, c *Client, q url.Values, _ *getFlags) ([]byte, error) {
			return c.Get(ctx, l.path, q)
		}
	}
	body, err := fetch(ctx, c, q, f)
	if err != nil {
		return err
	}
	if f.output == outJSON || f.output == outYAML {
		return printRaw(e.stdout, f.output, body)
	}
	t, n, err := l.table(body, f, e.now())
	if err != nil {
		return fmt.Errorf("GET %s: the answer is not the JSON expected: %w", l.path, err)
	}
	if n == 0 {
		where := ""
		if f.namespace != "" {
			// A mistyped namespace is an error, not an empty answer.
			if err := namespaceInMirror(ctx, c, f.namespace); err != nil {
				return err
			}
			where = " in namespace " + f.namespace
		}
		// As kubectl: the table's absence is news, not data.
		printf(e.stderr, "No %s found%s.\n", l.what, where)
		return nil
	}
	return t.print(e.stdout)
}

// limitMax is the most ?limit= of the API's GET path takes.
func limitMax(path string) int {
	for _, op := range api.Operations {
		if p := op.Param("limit"); op.Method == "GET" && op.Path == path && p != nil {
			return p.Max
		}
	}
	return math.MaxInt
}

// sinceTime reads --since: a duration back from now, or a time.
func sinceTime(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("invalid --since %q: %s", v, sinceWant)
}

// sinceWant is what --since wants.
const sinceWant = "want a duration such as 30m or 2h, or an RFC 3339 time"

// pager follows a list's cursor: the API's largest page, and how many
// rows get reads when --limit is not given.
type pager struct {
	path              string
	pageMax, defLimit int
}

// fetch follows the cursor until --limit rows or the end. One page is the
// API's answer as it came; several are joined into one answer of the same
// shape, next being the last page's.
func (pg pager) fetch(ctx context.Context, c *Client, q url.Values, f *getFlags) ([]byte, error) {
	want := cmp.Or(f.limit, pg.defLimit)
	var items []json.RawMessage
	var next string
	for pages := 0; ; pages++ {
		q.Set("limit", strconv.Itoa(min(want-len(items), pg.pageMax)))
		var page struct {
			Items []json.RawMessage `json:"items"`
			Next  string            `json:"next"`
		}
		body, err := c.GetJSON(ctx, pg.path, q, &page)
		if err != nil {
			return nil, err
		}
		if pages == 0 && (page.Next == "" || len(page.Items) >= want) {
			return body, nil
		}
		items, next = append(items, page.Items...), page.Next
		if next == "" || len(items) >= want {
			break
		}
		q.Set("cursor", next)
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	return json.MarshalIndent(struct {
		Items []json.RawMessage `json:"items"`
		Next  string            `json:"next,omitempty"`
	}{items, next}, "", "  ")
}

// withNamespace puts the NAMESPACE column first when every namespace is
// listed, as kubectl -A does.
func withNamespace(f *getFlags, header ...string) *table {
	if f.namespace == "" {
		header = append([]string{"NAMESPACE"}, header...)
	}
	return newTable(header...)
}

func addRow(t *table, f *getFlags, namespace string, cells ...string) {
	if f.namespace == "" {
		cells = append([]string{namespace}, cells...)
	}
	t.add(cells...)
}

// sortByObject orders a list's items as its table lists them: by
// namespace (the cluster's objects first), then kind, then name; items
// about one object keep the API's order. What a table leaves out (the
// order the API chose, such as waiting longest first) the AGE column shows,
// and -o json keeps.
func sortByObject[T any](items []T, target func(T) api.Target) {
	slices.SortStableFunc(items, func(x, y T) int {
		a, b := target(x), target(y)
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
}

func pendingTable(body []byte, f *getFlags, now time.Time) (*table, int, error) {
	var a api.PendingList
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	header := []string{"KIND", "NAME", "CONTROLLER", "ACTION", "RULE", "WAITS", "AGE"}
	if f.output == outWide {
		header = append(header, "API VERSION", "UID", "REASON")
	}
	t := withNamespace(f, header...)
	sortByObject(a.Items, func(p api.Pending) api.Target { return p.Target })
	for _, p := range a.Items {
		cells := []string{p.Target.Kind, p.Target.Name, string(p.Controller), string(p.Action), p.Rule, orNone(p.TimeLeft), age(&p.Since, now)}
		if f.output == outWide {
			cells = append(cells, p.Target.APIVersion, p.Target.UID, p.Reason)
		}
		addRow(t, f, p.Target.Namespace, cells...)
	}
	return t, len(a.Items), nil
}

func auditTable(body []byte, f *getFlags, now time.Time) (*table, int, error) {
	var a api.AuditList
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	header := []string{"AGE", "CONTROLLER", "ACTION", "KIND", "NAME", "OUTCOME", "RULE"}
	if f.output == outWide {
		header = append(header, "ID", "TIME", "DRY RUN", "UID", "REASON", "ERROR")
	}
	// NAMESPACE goes by the object's kind and name, after the decision.
	if f.namespace == "" {
		header = slices.Insert(header, 3, "NAMESPACE")
	}
	t := newTable(header...)
	for _, r := range a.Items {
		cells := []string{age(&r.Time, now), string(r.Controller), string(r.Action), r.Target.Kind, r.Target.Name, string(r.Outcome), r.Rule}
		if f.namespace == "" {
			cells = slices.Insert(cells, 3, r.Target.Namespace)
		}
		if f.output == outWide {
			cells = append(cells, strconv.FormatInt(r.ID, 10), r.Time.UTC().Format(time.RFC3339), strconv.FormatBool(r.DryRun),
				r.Target.UID, r.Reason, orNone(r.Error))
		}
		t.add(cells...)
	}
	return t, len(a.Items), nil
}

func stuckTable(body []byte, f *getFlags, now time.Time) (*table, int, error) {
	var a api.StuckList
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	header := []string{"KIND", "NAME", "STATE", "BLOCKED BY", "AGE"}
	if f.output == outWide {
		header = append(header, "UID", "EXPLANATION")
	}
	t := withNamespace(f, header...)
	sortByObject(a.Items, func(s api.StuckItem) api.Target { return s.Target })
	for _, s := range a.Items {
		blocked := "<none>"
		if len(s.Blockers) > 0 {
			blocked = blockerText(s.Blockers[0])
			if n := len(s.Blockers) - 1; n > 0 {
				blocked += fmt.Sprintf(" (+%d more)", n)
			}
		}
		cells := []string{s.Target.Kind, s.Target.Name, string(s.State), blocked, age(&s.DeletionRequested, now)}
		if f.output == outWide {
			cells = append(cells, s.Target.UID, s.Explanation)
		}
		addRow(t, f, s.Target.Namespace, cells...)
	}
	return t, len(a.Items), nil
}

// blockerText names what a blocker is, in a few words.
func blockerText(b api.Blocker) string {
	switch {
	case b.Finalizer != "":
		return "finalizer " + b.Finalizer
	case b.Target != nil:
		return string(b.Type) + " " + b.Target.String()
	case b.GroupVersion != "":
		return "discovery of " + b.GroupVersion
	case len(b.Counts) > 0:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(b.Counts)) {
			parts = append(parts, fmt.Sprintf("%d %s", b.Counts[k], k))
		}
		return "content: " + strings.Join(parts, ", ")
	default:
		return b.Reason
	}
}

func lintTable(body []byte, f *getFlags, _ time.Time) (*table, int, error) {
	var a api.LintReport
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	header := []string{"KIND", "NAME", "RULE", "SEVERITY", "OWNER"}
	if f.output == outWide {
		header = append(header, "UID", "MESSAGE")
	}
	t := withNamespace(f, header...)
	sortByObject(a.Items, func(fd api.LintFinding) api.Target { return fd.Target })
	for _, fd := range a.Items {
		cells := []string{fd.Target.Kind, fd.Target.Name, fd.Rule + " " + fd.Name, string(fd.Severity),
			fd.OwnerReference.Kind + "/" + fd.OwnerReference.Name}
		if f.output == outWide {
			cells = append(cells, fd.Target.UID, fd.Message)
		}
		addRow(t, f, fd.Target.Namespace, cells...)
	}
	return t, len(a.Items), nil
}

func leasesTable(body []byte, f *getFlags, now time.Time) (*table, int, error) {
	var a api.LeaseList
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	// Expired first: those are the ones to look at.
	slices.SortStableFunc(a.Items, func(x, y api.LeaseItem) int {
		switch {
		case x.Expired == y.Expired:
			return 0
		case x.Expired:
			return -1
		}
		return 1
	})
	header := []string{"NAME", "ROLE", "HOLDER", "PREFERRED", "EXPIRED", "RENEWED", "ACQUIRED", "CANDIDATES", "FINDINGS"}
	if f.output == outWide {
		header = append(header, "STRATEGY", "DURATION", "TRANSITIONS", "GAPS", "UID")
	}
	t := withNamespace(f, header...)
	findings := map[[2]string][]string{}
	for _, fd := range a.Findings {
		k := [2]string{fd.Namespace, fd.Lease}
		findings[k] = append(findings[k], string(fd.Kind))
	}
	for _, l := range a.Items {
		holder := "<none>"
		if l.HolderIdentity != nil && *l.HolderIdentity != "" {
			holder = *l.HolderIdentity
		}
		cells := []string{l.Name, string(l.Role), holder, orNone(deref(l.PreferredHolder)), strconv.FormatBool(l.Expired), ago(l.RenewTime, now),
			ago(l.AcquireTime, now), candidateCount(l.Candidates), findingKinds(findings[[2]string{l.Namespace, l.Name}])}
		if f.output == outWide {
			dur, trans := "<none>", "<none>"
			if l.LeaseDurationSeconds != nil {
				dur = (time.Duration(*l.LeaseDurationSeconds) * time.Second).String()
			}
			if l.LeaseTransitions != nil {
				trans = strconv.Itoa(int(*l.LeaseTransitions))
			}
			cells = append(cells, orNone(deref(l.Strategy)), dur, trans, strconv.Itoa(len(l.Gaps)), l.UID)
		}
		addRow(t, f, l.Namespace, cells...)
	}
	// A Lease that candidates name but that does not exist is a row of
	// its own, after the others: role <missing>.
	missing := map[[2]string][]api.LeaseCandidate{}
	var order [][2]string
	for _, c := range a.CandidatesWithoutLease {
		k := [2]string{c.Namespace, c.LeaseName}
		if missing[k] == nil {
			order = append(order, k)
		}
		missing[k] = append(missing[k], c)
	}
	for _, k := range order {
		cells := []string{k[1], "<missing>", "<none>", "<none>", "<none>", "<never>", "<never>", candidateCount(missing[k]),
			findingKinds(findings[k])}
		if f.output == outWide {
			cells = append(cells, "<none>", "<none>", "<none>", "0", "<none>")
		}
		addRow(t, f, k[0], cells...)
	}
	return t, len(a.Items) + len(order), nil
}

// candidateCount is a Lease's candidates as live/all, as kubectl shows a
// Pod's ready containers; <none> without candidates.
func candidateCount(cs []api.LeaseCandidate) string {
	if len(cs) == 0 {
		return "<none>"
	}
	live := 0
	for _, c := range cs {
		if !c.Expired {
			live++
		}
	}
	return fmt.Sprintf("%d/%d", live, len(cs))
}

// findingKinds is the kinds of a Lease's findings, each once, with how
// many times where more than once: candidate-expired(2),no-live-candidate.
func findingKinds(kinds []string) string {
	if len(kinds) == 0 {
		return "<none>"
	}
	kinds = slices.Sorted(slices.Values(kinds))
	var out []string
	for i := 0; i < len(kinds); {
		j := i
		for j < len(kinds) && kinds[j] == kinds[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s(%d)", kinds[i], j-i))
		} else {
			out = append(out, kinds[i])
		}
		i = j
	}
	return strings.Join(out, ",")
}

// deref is the string p points at, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// deletedCopiesTable lists the copies newest first, as the API does: the
// order is when each object went.
func deletedCopiesTable(body []byte, f *getFlags, now time.Time) (*table, int, error) {
	var a api.DeletedCopyList
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, 0, err
	}
	header := []string{"KIND", "NAME", "DELETED BY", "AGE", "RESTORED AS"}
	if f.output == outWide {
		header = append(header, "API VERSION", "UID", "SIZE", "SECRET DATA")
	}
	t := withNamespace(f, header...)
	for _, dc := range a.Items {
		by := string(dc.Controller)
		if dc.Rule != "" {
			by = "rule " + dc.Rule
		}
		cells := []string{dc.Target.Kind, dc.Target.Name, by, age(&dc.TakenAt, now), orNone(dc.RestoredUID)}
		if f.output == outWide {
			data := ""
			if dc.Target.Kind == "Secret" && dc.Target.APIVersion == "v1" {
				data = "kept"
				if dc.SecretDataDropped {
					data = "dropped"
				}
			}
			cells = append(cells, dc.Target.APIVersion, dc.Target.UID, strconv.FormatInt(dc.Size, 10), orNone(data))
		}
		addRow(t, f, dc.Target.Namespace, cells...)
	}
	return t, len(a.Items), nil
}
