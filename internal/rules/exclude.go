package rules

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Query returns the SQL that runs for r: its SELECT as written when it
// excludes nothing, else that SELECT as a subquery whose rows are joined
// to their objects and filtered by Exclude. The rule's own text is never
// edited.
func (r *Rule) Query() (string, error) {
	if r.Exclude.empty() {
		return r.Select, nil
	}
	stmt, err := db.RuleStatement(r.Select)
	if err != nil {
		return "", err
	}
	cond, err := excludeSQL(r.Exclude, "x")
	if err != nil {
		return "", err
	}
	// The newline before ")" ends a comment the SELECT may end with.
	return "SELECT m.* FROM (\n" + stmt + "\n) AS m JOIN objects AS x ON x.uid = m.uid\nWHERE NOT (" + cond + ")", nil
}

// excludeSQL is the condition that object o is one e leaves out.
func excludeSQL(e Exclude, o string) (string, error) {
	var terms []string
	for _, ns := range e.Namespaces {
		terms = append(terms, fmt.Sprintf("%[1]s.namespace GLOB %[2]s"+
			" OR (%[1]s.kind = 'Namespace' AND %[1]s.api_group = '' AND %[1]s.name GLOB %[2]s)", o, quote(ns)))
	}
	for _, n := range e.Names {
		terms = append(terms, o+".name GLOB "+quote(n))
	}
	for _, s := range e.Labels {
		t, err := selectorSQL(s, o)
		if err != nil {
			return "", err
		}
		terms = append(terms, t)
	}
	return "(" + strings.Join(terms, ")\n  OR (") + ")", nil
}

// selectorSQL is the condition that object o's labels match the label
// selector s, as Kubernetes matches them: a != or notin requirement is
// met by an object without the label.
func selectorSQL(s, o string) (string, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return "", err
	}
	reqs, _ := sel.Requirements()
	if len(reqs) == 0 {
		return "", fmt.Errorf("the label selector %q selects everything", s)
	}
	var and []string
	for _, req := range reqs {
		has := func(extra string) string {
			return "EXISTS (SELECT 1 FROM labels l WHERE l.uid = " + o + ".uid AND l.key = " + quote(req.Key()) + extra + ")"
		}
		values := slices.Sorted(slices.Values(req.ValuesUnsorted()))
		switch req.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			and = append(and, has(" AND l.value IN "+sqlList(values)))
		case selection.NotEquals, selection.NotIn:
			and = append(and, "NOT "+has(" AND l.value IN "+sqlList(values)))
		case selection.Exists:
			and = append(and, has(""))
		case selection.DoesNotExist:
			and = append(and, "NOT "+has(""))
		case selection.GreaterThan, selection.LessThan:
			n, err := strconv.ParseInt(values[0], 10, 64)
			if err != nil {
				return "", fmt.Errorf("the label selector %q: %w", s, err)
			}
			op := ">"
			if req.Operator() == selection.LessThan {
				op = "<"
			}
			// Kubernetes compares only values that are integers.
			and = append(and, has(fmt.Sprintf(" AND l.value GLOB '[0-9-]*' AND l.value NOT GLOB '?*[^0-9]*'"+
				" AND CAST(l.value AS INTEGER) %s %d", op, n)))
		default:
			return "", fmt.Errorf("the label selector %q: operator %s is not supported", s, req.Operator())
		}
	}
	return strings.Join(and, " AND "), nil
}

// Excludes reports whether e leaves out an object of this API group,
// kind, namespace, name and labels. It judges a live object as excludeSQL
// judges the mirror, before a rule deletes it; it sees every label, not
// only those the mirror keeps. A selector that does not parse excludes:
// the load refuses such a rule, and a doubt never deletes.
func (e Exclude) Excludes(group, kind, namespace, name string, objLabels map[string]string) bool {
	glob := func(pattern, s string) bool {
		ok, err := path.Match(pattern, s)
		return ok || err != nil
	}
	for _, ns := range e.Namespaces {
		if glob(ns, namespace) || group == "" && kind == "Namespace" && glob(ns, name) {
			return true
		}
	}
	for _, n := range e.Names {
		if glob(n, name) {
			return true
		}
	}
	for _, s := range e.Labels {
		sel, err := labels.Parse(s)
		if err != nil || sel.Matches(labels.Set(objLabels)) {
			return true
		}
	}
	return false
}
