package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/testcluster"
)

// report prints the size's results, its accounting of the API server's
// work and its verdicts.
func (s *ownerGCSize) report(byRound [][]gcResult) {
	pinned := ""
	if pin := s.cfg.pin; pin != nil {
		pinned = fmt.Sprintf("; etcd and kube-apiserver pinned to CPU %d, the rest to CPU %d", pin.controlPlane, pin.clients)
	}
	delayed := ""
	if s.cfg.ownerDelay > 0 {
		delayed = fmt.Sprintf("; kubegcd's owner deleted %s after its /readyz", s.cfg.ownerDelay)
	}
	fmt.Printf("\nOwnership GC: %s dependents of one owner, owner deleted (background) → last dependent gone%s%s\n",
		s.size, pinned, delayed)
	resultsTable(os.Stdout, byRound)
	fmt.Println()
	accountingTable(os.Stdout, mergeRounds(byRound))
	fmt.Println("(for every contender, one watch event per deletion goes to this benchmark's own watch)")
	ownerGCVerdicts(os.Stdout, s.size, byRound, 1+verdictRaw(s.cfg.raw))
}

// resultsTable writes a row per contender and round, each round in the
// order it ran.
func resultsTable(w io.Writer, byRound [][]gcResult) {
	fmt.Fprintln(w, "CPU per deletion in ms, over the deletions alone (raw: after its list)")
	fmt.Fprintf(w, "%-38s %8s %8s %12s %8s %10s %8s %14s\n", "contender", "first s", "last s", "deletions/s", "own CPU",
		"apiserver", "etcd", "control plane")
	for round, results := range byRound {
		if len(byRound) > 1 {
			fmt.Fprintf(w, "round %d\n", round+1)
		}
		for _, c := range roundOrder(len(results), round) {
			r := results[c]
			fmt.Fprintf(w, "%-38s %8.3f %8.2f %12.0f %8.2f %10.2f %8.2f %14.2f\n",
				r.name, r.first.Seconds(), r.last.Seconds(), r.rate(),
				r.msPer(r.cpu), r.msPer(r.apiserverCPU), r.msPer(r.etcdCPU), r.controlPlaneMs())
		}
	}
}

// mergeRounds sums each contender's API server counts and deletions over
// the rounds, for the accounting table. A contender whose metrics could not
// be read in some round is counted over the other rounds.
func mergeRounds(byRound [][]gcResult) []gcResult {
	merged := slices.Clone(byRound[0])
	for i := range merged {
		merged[i].n, merged[i].api = 0, apiCounts{}
		for _, results := range byRound {
			r := results[i]
			if r.api == nil {
				continue
			}
			merged[i].n += r.n
			for k, v := range r.api {
				merged[i].api[k] += v
			}
		}
		if merged[i].n == 0 {
			merged[i].n, merged[i].api = byRound[0][i].n, nil
		}
	}
	return merged
}

// ownerGCVerdicts writes the verdict lines of one size. They compare
// kubegcd (contender 0) with kube-controller-manager (the last) and with
// the raw contender at rawIdx. Over several rounds, each round's kubegcd is
// compared with the same round's contender, and a ratio is judged by its
// median over the rounds. The first deletion is judged by the slowest
// round.
func ownerGCVerdicts(w io.Writer, size string, byRound [][]gcResult, rawIdx int) {
	last := len(byRound[0]) - 1
	k, rawName := byRound[0][0], byRound[0][rawIdx].name
	vsKCM, of := medianRatio(byRound, func(rs []gcResult) float64 { return rs[0].rate() / rs[last].rate() })
	fmt.Fprintf(w, "%s: kubegcd vs kube-controller-manager: %.2f× (%starget ≥ %.1f×) %s\n",
		size, vsKCM, of, targetVsKCM, verdict(vsKCM >= targetVsKCM))
	vsRaw, of := medianRatio(byRound, func(rs []gcResult) float64 { return rs[0].rate() / rs[rawIdx].rate() })
	fmt.Fprintf(w, "%s: kubegcd vs %s: %.2f× (%starget ≥ %.1f×) %s\n",
		size, rawName, vsRaw, of, targetVsRaw, verdict(vsRaw >= targetVsRaw))
	cpRatio := func(rs []gcResult) float64 { return rs[0].controlPlaneMs() / rs[rawIdx].controlPlaneMs() }
	if cp, of := medianRatio(byRound, cpRatio); cp > 0 {
		fmt.Fprintf(w, "%s: kubegcd's control-plane CPU per deletion vs %s: %.2f× (%starget ≤ %.1f×) %s\n",
			size, rawName, cp, of, targetCPVsRaw, verdict(cp <= targetCPVsRaw))
	}
	first, slowest := k.first, ""
	for _, results := range byRound[1:] {
		first = max(first, results[0].first)
	}
	if len(byRound) > 1 {
		slowest = fmt.Sprintf("slowest of %d rounds; ", len(byRound))
	}
	fmt.Fprintf(w, "%s: kubegcd first deletion after %s (%starget ≤ %s) %s\n",
		size, first.Round(time.Millisecond), slowest, targetFirstDelete, verdict(first <= targetFirstDelete))
}

// medianRatio returns the median over the rounds of f. For several rounds
// it also returns the values it is the median of, to open the target's
// parenthesis.
func medianRatio(byRound [][]gcResult, f func([]gcResult) float64) (float64, string) {
	var vs []float64
	for _, results := range byRound {
		if v := f(results); v > 0 && !math.IsInf(v, 0) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, ""
	}
	if len(byRound) == 1 {
		return vs[0], ""
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%.2f×", v)
	}
	return median(vs), "median of " + strings.Join(parts, ", ") + "; "
}

// median returns the median of vs, which is not empty.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// scrapeMetrics reads the series of kubegcd's /metrics that writerReport
// compares, by name with labels.
func scrapeMetrics(ctx context.Context, base string) (map[string]float64, error) {
	body, err := testcluster.HTTPGet(ctx, base+"/metrics")
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "kubegcd_db_") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	return m, nil
}

// writerReport prints what kubegcd's database writer did since its start:
// commits, writes per commit, and how long an intent waited for its
// commit. That wait comes before each write is sent. The initial sync
// adds a few dozen commits.
func writerReport(m map[string]float64) {
	commits, writes := m["kubegcd_db_writes_per_commit_count"], m["kubegcd_db_writes_per_commit_sum"]
	intents := m[`kubegcd_db_write_duration_seconds_count{operation="intent"}`]
	intentWait := m[`kubegcd_db_write_duration_seconds_sum{operation="intent"}`]
	events := m[`kubegcd_db_write_duration_seconds_count{operation="events"}`]
	if commits == 0 || intents == 0 {
		return
	}
	fmt.Printf("  kubegcd's writer: %.0f commits, %.1f writes each; "+
		"%.0f intents, each committed %.1f ms after it was queued (mean); %.0f watch batches\n",
		commits, writes/commits, intents, 1000*intentWait/intents, events)
}
