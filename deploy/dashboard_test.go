package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboard is what the test reads of Grafana's dashboard JSON model.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []target `json:"targets"`
	// A collapsed row holds its panels.
	Panels []panel `json:"panels"`
}

type target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat"`
	Datasource   *datasource `json:"datasource"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasource     `json:"datasource"`
}

// query is a variable's query: a string, or for a query variable of
// newer Grafana an object holding it.
func (v *variable) query() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var q struct{ Query string }
	_ = json.Unmarshal(v.Query, &q)
	return q.Query
}

// promDatasource is the only datasource a panel may name: the dashboard's
// variable, so that it imports into any Grafana whatever its datasources'
// uids.
var promDatasource = datasource{Type: "prometheus", UID: "${datasource}"}

// templateVar is a variable as Grafana substitutes it in a query: $name,
// ${name}, ${name:format} or [[name]].
var templateVar = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// grafanaVars are Grafana's own variables, with a value of their kind.
var grafanaVars = map[string]string{"__rate_interval": "1m", "__interval": "30s", "__range": "6h",
	"__interval_ms": "30000", "__range_s": "21600", "__range_ms": "21600000"}

// labelValues is a query variable's label_values(selector, label).
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// legendLabel is a label a legend names: {{label}}.
var legendLabel = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// checkDashboard returns what is wrong with a dashboard: a query Prometheus
// cannot parse, a metric or label kubegcd does not export (in a query, a
// grouping or a legend), a datasource other than the ${datasource}
// variable, an unknown variable; and the metrics its queries name.
func checkDashboard(data []byte, s series) (problems, shown []string) {
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return []string{err.Error()}, nil
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		problems = append(problems, fmt.Sprintf("uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion 36 or later",
			d.UID, d.Title, d.SchemaVersion))
	}
	// Each variable's value, for the queries to parse: a query variable is
	// a regular expression in a label matcher, another its value.
	values := map[string]string{}
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			if v.query() != "prometheus" {
				problems = append(problems, fmt.Sprintf("variable %s: a datasource of type %q, want prometheus", v.Name, v.query()))
			}
		case "query":
			values[v.Name] = ".+"
			if v.Datasource == nil || *v.Datasource != promDatasource {
				problems = append(problems, fmt.Sprintf("variable %s: %s", v.Name, wrongDatasource(v.Datasource)))
			}
			m := labelValues.FindStringSubmatch(v.query())
			if m == nil {
				problems = append(problems, fmt.Sprintf("variable %s: query %q, want label_values(SELECTOR, LABEL)", v.Name, v.query()))
				continue
			}
			p, labels := checkExpr(m[1], s)
			problems = append(problems, prefixed("variable "+v.Name, p)...)
			if !slices.Contains(labels, m[2]) {
				problems = append(problems, fmt.Sprintf("variable %s: %s carries no label %q", v.Name, m[1], m[2]))
			}
		default:
			values[v.Name] = v.query()
		}
	}
	if !slices.ContainsFunc(d.Templating.List, func(v variable) bool { return v.Name == "datasource" && v.Type == "datasource" }) {
		problems = append(problems, "no datasource variable named datasource")
	}
	ids := map[int]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if ids[p.ID] || p.ID == 0 {
				problems = append(problems, name+": its id is 0 or another panel's")
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.X+p.GridPos.W > 24 {
				problems = append(problems, name+": no place on the 24 columns' grid")
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || *p.Datasource != promDatasource {
				problems = append(problems, fmt.Sprintf("%s: %s", name, wrongDatasource(p.Datasource)))
			}
			if len(p.Targets) == 0 {
				problems = append(problems, name+": no query")
			}
			for _, tg := range p.Targets {
				where := name + " query " + tg.RefID
				if tg.Datasource != nil && *tg.Datasource != promDatasource {
					problems = append(problems, fmt.Sprintf("%s: %s", where, wrongDatasource(tg.Datasource)))
				}
				expr, unknown := substitute(tg.Expr, values)
				for _, u := range unknown {
					problems = append(problems, fmt.Sprintf("%s: no variable %q", where, u))
				}
				p, labels := checkExpr(expr, s)
				problems = append(problems, prefixed(where, p)...)
				for _, m := range legendLabel.FindAllStringSubmatch(tg.LegendFormat, -1) {
					if labels != nil && !slices.Contains(labels, m[1]) {
						problems = append(problems, fmt.Sprintf("%s: the legend names label %q, which none of its series carries", where, m[1]))
					}
				}
				for name := range s {
					if regexp.MustCompile(`\b`+name+`\b`).MatchString(expr) && !slices.Contains(shown, name) {
						shown = append(shown, name)
					}
				}
			}
		}
	}
	walk(d.Panels)
	return problems, shown
}

// substitute puts each variable's value in expr, as Grafana does before it
// sends the query, and returns the variables it does not know.
func substitute(expr string, values map[string]string) (string, []string) {
	var unknown []string
	out := templateVar.ReplaceAllStringFunc(expr, func(v string) string {
		m := templateVar.FindStringSubmatch(v)
		name := m[1] + m[2] + m[3]
		if val, ok := grafanaVars[name]; ok {
			return val
		}
		if val, ok := values[name]; ok {
			return val
		}
		unknown = append(unknown, name)
		return v
	})
	return out, unknown
}

func wrongDatasource(d *datasource) string {
	got := "no datasource"
	if d != nil {
		got = fmt.Sprintf("datasource %s %q", d.Type, d.UID)
	}
	return got + ", want the variable ${datasource} of type prometheus"
}

func prefixed(prefix string, problems []string) []string {
	var out []string
	for _, p := range problems {
		out = append(out, prefix+": "+p)
	}
	return out
}

// dashboardShows are the metrics the shipped dashboard must show: the
// decisions and writes, what is pending, stuck deletions and terminating
// namespaces, lint findings, the mirror, enforcement, HTTP latency and the
// process's memory.
var dashboardShows = []string{
	"kubegcd_reconcile_actions_total",
	"kubegcd_reconcile_paused",
	"kubegcd_ownergc_candidates",
	"kubegcd_ownergc_queue_depth",
	"kubegcd_svgc_queue_depth",
	"kubegcd_deletions_stuck",
	"kubegcd_deletion_stuck_oldest_seconds",
	"kubegcd_namespaces_terminating",
	"kubegcd_ownerref_findings",
	"kubegcd_ingest_resource_synced",
	"kubegcd_ingest_relists_total",
	"kubegcd_http_request_duration_seconds_bucket",
	"process_resident_memory_bytes",
}

func TestDashboard(t *testing.T) {
	exported := exportedSeries(t)
	shipped, err := os.ReadFile("kubegcd-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	// One of the shipped panels' query, wrong in one way each.
	withPanel := func(expr, legend, datasourceUID string) string {
		quoted, _ := json.Marshal(expr)
		return `{"uid": "k", "title": "k", "schemaVersion": 39,
			"templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"},
				{"name": "instance", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
				 "query": {"query": "label_values(kubegcd_build_info, instance)"}}]},
			"panels": [{"id": 1, "type": "timeseries", "title": "Decisions", "gridPos": {"h": 8, "w": 12, "x": 0, "y": 0},
				"datasource": {"type": "prometheus", "uid": "` + datasourceUID + `"},
				"targets": [{"refId": "A", "expr": ` + string(quoted) + `, "legendFormat": "` + legend + `"}]}]}`
	}
	withExpr := func(expr, legend string) string { return withPanel(expr, legend, "${datasource}") }
	tests := []struct {
		name      string
		dashboard string
		want      []string // a problem holding each; none when empty
	}{
		{name: "shipped", dashboard: string(shipped)},
		{name: "right", dashboard: withExpr(`sum by (controller) (rate(kubegcd_reconcile_actions_total{instance=~"$instance"}[$__rate_interval]))`, "{{controller}}")},
		{name: "misspelled metric", dashboard: withExpr(`sum(rate(kubegcd_reconcile_action_total[5m]))`, ""),
			want: []string{`metric "kubegcd_reconcile_action_total" is not one kubegcd exports`}},
		{name: "histogram without _bucket", dashboard: withExpr(`histogram_quantile(0.9, sum by (le) (rate(kubegcd_http_request_duration_seconds[5m])))`, ""),
			want: []string{`metric "kubegcd_http_request_duration_seconds" is not one kubegcd exports`}},
		{name: "misspelled label in a selector", dashboard: withExpr(`sum(rate(kubegcd_reconcile_actions_total{outcom="applied"}[5m]))`, ""),
			want: []string{`kubegcd_reconcile_actions_total has no label "outcom"`}},
		{name: "misspelled label in by", dashboard: withExpr(`sum by (contoller) (rate(kubegcd_reconcile_actions_total[5m]))`, ""),
			want: []string{`by (contoller) names label "contoller"`}},
		{name: "label of another metric", dashboard: withExpr(`histogram_quantile(0.9, sum by (path, le) (rate(kubegcd_http_request_duration_seconds_bucket[5m])))`, ""),
			want: []string{`by (path, le) names label "path"`}},
		{name: "misspelled label in the legend", dashboard: withExpr(`sum by (controller) (rate(kubegcd_reconcile_actions_total[5m]))`, "{{controler}}"),
			want: []string{`the legend names label "controler"`}},
		{name: "unknown variable", dashboard: withExpr(`kubegcd_reconcile_paused{instance=~"$node"}`, ""),
			want: []string{`no variable "node"`}},
		{name: "not PromQL", dashboard: withExpr(`sum(kubegcd_reconcile_paused`, ""), want: []string{"unclosed left parenthesis"}},
		{name: "hard-coded datasource", dashboard: withPanel(`kubegcd_reconcile_paused`, "", "P1809F7CD0C75ACF3"),
			want: []string{`datasource prometheus "P1809F7CD0C75ACF3", want the variable ${datasource}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems, shown := checkDashboard([]byte(tt.dashboard), exported)
			if len(tt.want) == 0 && len(problems) > 0 {
				t.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem holds %q; problems:\n%s", w, strings.Join(problems, "\n"))
				}
			}
			if tt.name != "shipped" {
				return
			}
			for _, m := range dashboardShows {
				if !slices.Contains(shown, m) {
					t.Errorf("no panel shows %s", m)
				}
			}
		})
	}
}
