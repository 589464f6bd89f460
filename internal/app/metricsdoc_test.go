package app

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsHoldsEveryMetric: every metric the source names, in a
// prometheus.*Opts or a prometheus.NewDesc anywhere under internal/, is in
// Metrics, typed and with its help; a part that registers metrics and that
// Metrics does not build fails here.
func TestMetricsHoldsEveryMetric(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	docs, err := Metrics(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]MetricDoc{}
	for _, m := range docs {
		got[m.Name] = m
		if m.Help == "" {
			t.Errorf("%s has no help", m.Name)
		}
		if !slices.Contains([]string{"counter", "gauge", "histogram", "summary"}, m.Type) {
			t.Errorf("%s has type %q", m.Name, m.Type)
		}
	}
	names := sourceMetricNames(t, filepath.Join("..", "..", "internal"))
	// The scan itself works: one name of a vector, one of a collector of its own.
	for _, n := range []string{"kubegcd_reconcile_actions_total", "kubegcd_deletions_stuck"} {
		if !slices.Contains(names, n) {
			t.Fatalf("the source scan did not find %s (found %v)", n, names)
		}
	}
	for _, n := range names {
		if _, ok := got[n]; !ok {
			t.Errorf("%s is defined in the source but Metrics does not register it: build its part in Metrics", n)
		}
	}
	for _, m := range []struct{ name, typ string }{
		{"kubegcd_build_info", "gauge"},
		{"kubegcd_reconcile_actions_total", "counter"},
		{"kubegcd_http_request_duration_seconds", "histogram"},
		{"kubegcd_deletions_stuck", "gauge"},
		{"process_cpu_seconds_total", "counter"},
	} {
		if got[m.name].Type != m.typ {
			t.Errorf("%s: type %q, want %q", m.name, got[m.name].Type, m.typ)
		}
	}
}

// sourceMetricNames are the metric names in the non-test Go files under
// dir: the Namespace, Subsystem and Name of each prometheus.*Opts literal,
// the first argument of each prometheus.NewDesc.
func sourceMetricNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if filepath.Base(filepath.Dir(path)) == "promutil" {
			return nil // the factory: its names are its callers'
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		literal := func(e ast.Expr) (string, bool) {
			if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
				s, err := strconv.Unquote(b.Value)
				return s, err == nil
			}
			return "", false
		}
		// A promutil.Factory names its metrics kubegcd_<subsystem>_<name>:
		// the subsystem is promutil.With's literal in the same function, or,
		// for a function given a factory, the package (a controller's name,
		// which reconcile.NewBase gives its factory).
		subsystem := ""
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				subsystem = factorySubsystem(n, f.Name.Name)
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && factoryMethods[sel.Sel.Name] && len(n.Args) > 0 && subsystem != "" {
					name, ok := literal(n.Args[0])
					if sel.Sel.Name == "QueueDepth" {
						name, ok = "queue_depth", true
					}
					if !ok {
						t.Errorf("%s: the name given to %s is not a string literal: the scan cannot read it", fset.Position(n.Pos()), sel.Sel.Name)
					}
					names = append(names, prometheus.BuildFQName("kubegcd", subsystem, name))
				}
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && isPrometheus(sel.X) && sel.Sel.Name == "NewDesc" && len(n.Args) > 0 {
					v, ok := literal(n.Args[0])
					if !ok {
						t.Errorf("%s: NewDesc's name is not a string literal: the scan cannot read it", fset.Position(n.Pos()))
					}
					names = append(names, v)
				}
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && isPrometheus(sel.X) && strings.HasSuffix(sel.Sel.Name, "Opts") {
					parts := map[string]string{}
					for _, e := range n.Elts {
						kv, ok := e.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						key, _ := kv.Key.(*ast.Ident)
						if key == nil || (key.Name != "Namespace" && key.Name != "Subsystem" && key.Name != "Name") {
							continue
						}
						v, ok := literal(kv.Value)
						if !ok {
							t.Errorf("%s: %s.%s is not a string literal: the scan cannot read it", fset.Position(kv.Pos()), sel.Sel.Name, key.Name)
						}
						parts[key.Name] = v
					}
					if parts["Name"] != "" {
						names = append(names, prometheus.BuildFQName(parts["Namespace"], parts["Subsystem"], parts["Name"]))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// factoryMethods are the methods of promutil.Factory that make a metric.
var factoryMethods = map[string]bool{"Counter": true, "CounterVec": true, "Gauge": true, "GaugeVec": true,
	"Histogram": true, "HistogramVec": true, "QueueDepth": true}

// factorySubsystem is the subsystem of the metrics fn makes with a
// promutil.Factory: promutil.With's literal in fn, or pkg when fn takes a
// promutil.Factory; "" when fn has no factory.
func factorySubsystem(fn *ast.FuncDecl, pkg string) string {
	sub := ""
	ast.Inspect(fn, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "With" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "promutil" {
				if b, ok := call.Args[1].(*ast.BasicLit); ok {
					sub, _ = strconv.Unquote(b.Value)
				}
			}
		}
		return true
	})
	if sub != "" || fn.Type.Params == nil {
		return sub
	}
	for _, p := range fn.Type.Params.List {
		if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Factory" {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "promutil" {
				return pkg
			}
		}
	}
	return ""
}

func isPrometheus(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "prometheus"
}

func TestParseDesc(t *testing.T) {
	for _, tc := range []struct {
		name string
		desc *prometheus.Desc
		want MetricDoc
	}{
		{"plain", prometheus.NewDesc("a_total", "help", nil, nil), MetricDoc{Name: "a_total", Help: "help"}},
		{"labels and quotes in help",
			prometheus.NewDesc("kubegcd_x", `says "hi", {braces}, and a \ backslash`, []string{"group", "kind"}, nil),
			MetricDoc{Name: "kubegcd_x", Help: `says "hi", {braces}, and a \ backslash`, Labels: []string{"group", "kind"}}},
		{"const labels with commas and quotes",
			prometheus.NewDesc("kubegcd_build_info", "h", nil, prometheus.Labels{"version": `v1,"2"}`, "goversion": "go1.25"}),
			MetricDoc{Name: "kubegcd_build_info", Help: "h", ConstLabels: []string{"goversion", "version"}}},
		{"constrained label",
			prometheus.V2.NewDesc("kubegcd_y", "h", prometheus.ConstrainedLabels{{Name: "route", Constraint: strings.ToLower}}, nil),
			MetricDoc{Name: "kubegcd_y", Help: "h", Labels: []string{"route"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDesc(tc.desc.String())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
	if _, err := parseDesc("Desc{nonsense}"); err == nil {
		t.Error("a string that is not a descriptor parsed")
	}
}
