package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/reconcile/cleanup"
	"github.com/kubegcd/kubegcd/internal/rules"
)

// The rules benchmark, tiny, with the build as its own baseline: each
// contender deletes a few dozen ConfigMaps past their TTL, so the
// benchmark does not rot between runs of make bench.
func TestRulesBenchmarkRuns(t *testing.T) {
	e := startBenchEnv(t)
	ctx, dir, cluster, bin, kube := e.ctx, e.dir, e.cluster, e.bin, e.kube
	cfg := config{workers: 8, ruleObjects: 40, ruleBaseline: bin, rounds: 1}
	if err := runRules(ctx, cfg, cluster, kube, bin, dir); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"rules-kubegcd-40", "rules-baseline-40", "rules-raw-40"} {
		list, err := kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Errorf("%s holds %d ConfigMaps after its contender's run, want none", ns, len(list.Items))
		}
	}
}

// TestRuleFile checks that both files the benchmark writes are rules
// kubegcd accepts, and say what the benchmark measures.
func TestRuleFile(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		interval time.Duration
	}{{"report", time.Hour}, {"delete", time.Second}} {
		text := ruleFile(tc.mode, tc.interval)
		if errs := cleanup.Check("rules.yaml", []byte(text), nil); len(errs) > 0 {
			t.Fatalf("%s: refused: %v", tc.mode, errs)
		}
		parsed, errs := rules.Parse("rules.yaml", []byte(text), rules.ParseOptions{})
		if len(errs) > 0 || len(parsed) != 1 {
			t.Fatalf("%s: %d rules, errors %v", tc.mode, len(parsed), errs)
		}
		r := parsed[0]
		if r.ID != rulesRuleID || string(r.Mode) != tc.mode || r.Occurrences != 1 || r.Interval != tc.interval ||
			r.Limits != (rules.Limits{}) {
			t.Errorf("%s: rule %s, mode %s, occurrences %d, interval %s, limits %+v", tc.mode, r.ID, r.Mode,
				r.Occurrences, r.Interval, r.Limits)
		}
	}
}

func TestParseIO(t *testing.T) {
	in := "rchar: 10\nwchar: 2048\nsyscr: 1\nsyscw: 2\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n"
	got, err := parseIO(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if got != (procIO{wchar: 2048, writeBytes: 4096}) {
		t.Errorf("parseIO = %+v, want wchar 2048, write_bytes 4096", got)
	}
	if _, err := parseIO(strings.NewReader("rchar: 10\n")); err == nil {
		t.Error("parseIO took a file without wchar and write_bytes")
	}
	before, err := readIO("self")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "f"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := readIO("self")
	if err != nil {
		t.Fatal(err)
	}
	if d := after.since(before); d.wchar < 4096 {
		t.Errorf("wrote 4096 bytes to a file; /proc/self/io counts %d through write calls", d.wchar)
	}
}

// rulesRound is one round of kubegcd, optionally a baseline, and the raw
// client, each with 1,000 deletions over the given seconds, CPU ms and KB
// written per deletion.
func rulesRound(kubegcd, raw float64, cpuMs, kb float64, baseline ...float64) []rulesResult {
	const n = 1000
	at := func(name string, seconds, cpuMs, kb float64) rulesResult {
		span := time.Duration(seconds * float64(time.Second))
		return rulesResult{gcResult: gcResult{name: name, n: n, first: 3 * time.Second, last: 3*time.Second + span,
			cpu: cpuMs * n / 1000}, span: span, io: procIO{wchar: uint64(kb * 1024 * n), writeBytes: uint64(kb * 512 * n)}}
	}
	rs := []rulesResult{at("kubegcd", kubegcd, cpuMs, kb)}
	if len(baseline) == 3 {
		rs = append(rs, at("baseline (old)", baseline[0], baseline[1], baseline[2]))
	}
	r := at("raw GET+DELETE (32 workers)", raw, 0.5, 1)
	r.raw, r.first, r.last = true, 0, r.span
	return append(rs, r)
}

func TestRulesVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		byRound [][]rulesResult
		want    []string
	}{{
		name:    "one round, on target",
		byRound: [][]rulesResult{rulesRound(1, 0.95, 2, 8)},
		want: []string{
			"20k: kubegcd's rule vs raw GET+DELETE (32 workers): 0.95× (target ≥ 0.9×) ok",
			"20k: kubegcd per deleted object: CPU 2.00 ms, 4.00 KB written to disk (write_bytes), " +
				"8.00 KB through write calls (wchar: database, log, requests); rule file written → first deletion 3.00 s",
		},
	}, {
		// The rate is over the span: the 3 s before the first deletion
		// count for nothing.
		name: "three rounds with a baseline",
		byRound: [][]rulesResult{
			rulesRound(2, 1, 3, 10, 1.8, 2, 6),
			rulesRound(2, 1.2, 3, 12, 2, 2.5, 6),
			rulesRound(4, 1, 5, 10, 3, 3, 8),
		},
		want: []string{
			"20k: kubegcd's rule vs raw GET+DELETE (32 workers): 0.50× (median of 0.50×, 0.60×, 0.25×; target ≥ 0.9×) FAIL",
			"20k: kubegcd per deleted object (medians of 3 rounds): CPU 3.00 ms, 5.00 KB written to disk (write_bytes), " +
				"10.00 KB through write calls (wchar: database, log, requests); rule file written → first deletion 3.00 s",
			"20k: kubegcd vs baseline (old): 0.90× the deletions/s (median of 0.90×, 1.00×, 0.75×; no target); " +
				"per object, CPU +0.50 ms, written +2.00 KB, wchar +4.00 KB: what kubegcd does that the baseline does not " +
				"(such as keeping copies)",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			rulesVerdicts(&out, "20k", tc.byRound)
			if got := strings.Split(strings.TrimSpace(out.String()), "\n"); !slices.Equal(got, tc.want) {
				t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestRulesTable(t *testing.T) {
	var out bytes.Buffer
	rulesTable(&out, [][]rulesResult{rulesRound(2, 1, 3, 10), rulesRound(2, 1, 3, 10)})
	var rows []string
	for line := range strings.SplitSeq(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "round" || f[0] == "kubegcd" || f[0] == "raw") {
			rows = append(rows, f[0])
			if f[0] == "raw" && f[4] != "—" {
				t.Errorf("the raw client's row has a write → first: %q", line)
			}
		}
	}
	if want := []string{"round", "kubegcd", "raw", "round", "raw", "kubegcd"}; !slices.Equal(rows, want) {
		t.Errorf("rows %v, want %v\n%s", rows, want, out.String())
	}
}

func TestRuleMetricsReport(t *testing.T) {
	exposition := `# HELP kubegcd_reconcile_actions_total Decisions.
kubegcd_reconcile_actions_total{action="delete",controller="rules",outcome="applied",rule="ttl-expired"} 38
kubegcd_reconcile_actions_total{action="delete",controller="rules",outcome="not-found",rule="ttl-expired"} 2
kubegcd_reconcile_actions_total{action="delete",controller="ownergc",outcome="applied",rule="BR-21-01"} 7
kubegcd_rule_skipped_total{reason="gone",rule="ttl-expired"} 1
kubegcd_rule_skipped_total{reason="changed",rule="ttl-expired"} 0
kubegcd_rule_errors_total{reason="act",rule="ttl-expired"} 1
kubegcd_rule_errors_total{reason="store",rule="ttl-expired"} 3
kubegcd_reconcile_decision_to_apply_seconds_sum{controller="rules"} 0.2
kubegcd_reconcile_decision_to_apply_seconds_count{controller="rules"} 40
kubegcd_reconcile_decision_to_apply_seconds_sum{controller="ownergc"} 9
`
	want := "deletions applied 38, not-found 2; matches left alone: gone 1; passes that could not act on every match: 1; " +
		"decision → delete done 5.00 ms (mean of 40)"
	if got := ruleMetricsReport(exposition); got != want {
		t.Errorf("ruleMetricsReport:\n got %s\nwant %s", got, want)
	}
	if got, want := ruleMetricsReport(""), "deletions none; matches left alone: none; passes that could not act on every match: 0"; got != want {
		t.Errorf("no series:\n got %s\nwant %s", got, want)
	}
}
