package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"
)

// series are the series names a scrape of kubegcd's /metrics holds, each
// with the label names it carries.
type series map[string][]string

// scrapeLabels are the labels Prometheus adds to every series it scrapes:
// queries may select by them although kubegcd does not export them.
var scrapeLabels = []string{"job", "instance"}

// metricsDoc is docs/metrics.md: its generated table lists every family
// kubegcd registers, and hack/gendocs' test fails when the table is not
// what the daemon's descriptors say.
const metricsDoc = "../docs/metrics.md"

// exportedSeries are the series kubegcd exports: the families of
// docs/metrics.md's generated table, and those of the Go and process
// collectors the table's note names.
func exportedSeries(t *testing.T) series {
	t.Helper()
	doc, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseMetricsTable(doc)
	if err != nil {
		t.Fatalf("%s: %v", metricsDoc, err)
	}
	// The table names the collectors rather than listing what client_golang
	// makes of them: gather the same collectors.
	for _, c := range []string{"collectors.NewGoCollector", "collectors.NewProcessCollector"} {
		if !bytes.Contains(doc, []byte("`"+c+"`")) {
			t.Fatalf("%s no longer says kubegcd registers %s: the dashboard test's runtime families need another source", metricsDoc, c)
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		typ := strings.ToLower(f.GetType().String())
		if f.GetType() == dto.MetricType_GAUGE_HISTOGRAM {
			typ = "histogram"
		}
		s.add(f.GetName(), typ, slices.Sorted(maps.Keys(labels)))
	}
	return s
}

// Markers of the part of metrics.md hack/gendocs writes.
const (
	beginGenerated = "<!-- BEGIN GENERATED -->"
	endGenerated   = "<!-- END GENERATED -->"
)

// tableRow is one family of the generated table: | `name` | type | labels | meaning |.
var tableRow = regexp.MustCompile("^\\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \\| (counter|gauge|histogram|summary|untyped) \\| ([^|]*) \\|")

// backquoted are the words in backquotes of a table cell.
var backquoted = regexp.MustCompile("`([^`]+)`")

// parseMetricsTable reads the families of metrics.md's generated table.
func parseMetricsTable(doc []byte) (series, error) {
	_, rest, ok := bytes.Cut(doc, []byte(beginGenerated))
	if !ok {
		return nil, errors.New("no " + beginGenerated + " line")
	}
	table, _, ok := bytes.Cut(rest, []byte(endGenerated))
	if !ok {
		return nil, errors.New("no " + endGenerated + " line")
	}
	s := series{}
	for line := range strings.Lines(string(table)) {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		m := tableRow.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("a row of the generated table reads %q, not | `name` | type | labels | meaning |", strings.TrimSpace(line))
		}
		var labels []string
		for _, l := range backquoted.FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, l[1])
		}
		s.add(m[1], m[2], labels)
	}
	if len(s) == 0 {
		return nil, errors.New("no metric in the generated table")
	}
	return s, nil
}

// add adds a family's series as Prometheus' text format serves them: a
// histogram as _bucket (with le), _sum and _count, a summary as itself
// (with quantile), _sum and _count.
func (s series) add(name, typ string, labels []string) {
	switch typ {
	case "histogram":
		s[name+"_bucket"] = append(slices.Clone(labels), "le")
		s[name+"_sum"], s[name+"_count"] = labels, labels
	case "summary":
		s[name] = append(slices.Clone(labels), "quantile")
		s[name+"_sum"], s[name+"_count"] = labels, labels
	default:
		s[name] = labels
	}
}

// hasLabel reports whether the series name carries label, its own or one a
// scrape adds.
func (s series) hasLabel(name, label string) bool {
	return slices.Contains(s[name], label) || slices.Contains(scrapeLabels, label)
}

// checkExpr parses a PromQL expression and returns what in it kubegcd does
// not export: a metric, a label a selector matches, a label an
// aggregation or a vector match groups by; and the labels the expression's
// series can carry, for a legend to name (nil when a metric is unknown:
// its labels are, too).
func checkExpr(expr string, s series) (problems, labels []string) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{err.Error()}, nil
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if _, known := s[vs.Name]; !known {
				problems = append(problems, fmt.Sprintf("metric %q is not one kubegcd exports", vs.Name))
			}
		}
		return nil
	})
	if problems != nil {
		return problems, nil
	}
	labels = selectorLabels(e, s)
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			for _, m := range n.LabelMatchers {
				if m.Name != "__name__" && !s.hasLabel(n.Name, m.Name) {
					problems = append(problems, fmt.Sprintf("%s has no label %q (its labels: %s)", n.Name, m.Name, strings.Join(s[n.Name], ", ")))
				}
			}
		case *parser.AggregateExpr:
			what := "by"
			if n.Without {
				what = "without"
			}
			problems = append(problems, grouping(n.Grouping, selectorLabels(n.Expr, s), what+" ("+strings.Join(n.Grouping, ", ")+")")...)
		case *parser.BinaryExpr:
			if vm := n.VectorMatching; vm != nil {
				both := append(selectorLabels(n.LHS, s), selectorLabels(n.RHS, s)...)
				problems = append(problems, grouping(vm.MatchingLabels, both, "on/ignoring")...)
				problems = append(problems, grouping(vm.Include, both, "group_left/group_right")...)
			}
		}
		return nil
	})
	return problems, labels
}

// grouping checks that every label of a by (), on () or ignoring () is one
// the series under it carry.
func grouping(group, have []string, what string) []string {
	var problems []string
	for _, l := range group {
		if !slices.Contains(have, l) {
			problems = append(problems, fmt.Sprintf("%s names label %q, which none of its series carries (they carry: %s)",
				what, l, strings.Join(have, ", ")))
		}
	}
	return problems
}

// selectorLabels are the labels of every series e selects, scrape labels
// included.
func selectorLabels(e parser.Node, s series) []string {
	set := map[string]bool{}
	for _, l := range scrapeLabels {
		set[l] = true
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for _, l := range s[vs.Name] {
				set[l] = true
			}
		}
		return nil
	})
	return slices.Sorted(maps.Keys(set))
}

func TestParseMetricsTable(t *testing.T) {
	doc := []byte("# Metrics\n\n" + beginGenerated + "\n| Metric | Type | Labels | Meaning |\n|---|---|---|---|\n" +
		"| `kubegcd_build_info` | gauge | `goversion` (constant), `version` (constant) | Always 1 \\| text. |\n" +
		"| `kubegcd_http_request_duration_seconds` | histogram | `route`, `code` | Latency. |\n" +
		"| `kubegcd_namespaces_terminating` | gauge |  | Namespaces. |\n\nThe `go_*` families.\n" + endGenerated +
		"\n| `kubegcd_after_the_table` | gauge | | Not generated. |\n")
	got, err := parseMetricsTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := series{
		"kubegcd_build_info":                           {"goversion", "version"},
		"kubegcd_http_request_duration_seconds_bucket": {"route", "code", "le"},
		"kubegcd_http_request_duration_seconds_sum":    {"route", "code"},
		"kubegcd_http_request_duration_seconds_count":  {"route", "code"},
		"kubegcd_namespaces_terminating":               nil,
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"no markers", beginGenerated + "\n| `x` | gauge |\n" + endGenerated, beginGenerated + "\n" + endGenerated} {
		if _, err := parseMetricsTable([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
