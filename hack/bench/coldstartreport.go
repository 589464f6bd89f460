package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// report prints the size's table, kubegcd's ratios to the floor and to
// kube-controller-manager, and what the counted and profiled starts saw.
func (s *coldstartSize) report() { s.write(os.Stdout) }

func (s *coldstartSize) write(w io.Writer) {
	rounds := len(s.byRound)
	fmt.Fprintf(w, "\nCold start at %s ConfigMaps, %d resources: start → synced (kubegcd: → /readyz), median of %d round(s)\n",
		countLabel(s.n), s.resources, rounds)
	fmt.Fprintf(w, "Floors: this process, metadata only, as %s, one goroutine per resource; list pages of %d\n",
		s.formats, coldstartPageSize)
	if s.watchList != "" {
		fmt.Fprintf(w, "WatchList %s\n", s.watchList)
	}
	if s.pinned != "" {
		fmt.Fprintln(w, strings.ToUpper(s.pinned[:1])+s.pinned[1:])
	}
	fmt.Fprintf(w, "kubegcd's databases in %s\n", s.dbs)
	fmt.Fprintf(w, "%-26s %8s  %-22s %9s %7s %9s %9s %8s %9s %9s %8s\n", "contender", "s", "rounds s", "objects",
		"CPU s", "server s", "cached M", "peak MB", "write B/o", "disk B/o", "db B/o")
	for k, c := range s.contenders {
		rs := make([]coldResult, rounds)
		for round := range rounds {
			rs[round] = s.byRound[round][k]
		}
		fmt.Fprintln(w, coldRow(c.name, rs))
		for _, r := range rs {
			if r.note != "" {
				fmt.Fprintf(w, "  %s: %s\n", c.name, r.note)
				break
			}
		}
	}
	fmt.Fprintln(w, "(CPU s: the contender's process, the floors' this one; server s: kube-apiserver and etcd; "+
		"cached M: millions of objects kube-apiserver's lists from its watch cache went through; "+
		"write B/o: bytes passed to write calls per object mirrored, disk B/o: sent to storage, db B/o: database and WAL)")

	kubegcd := slices.IndexFunc(s.contenders, func(c coldContender) bool { return c.slug == "kubegcd" })
	for k, c := range s.contenders {
		if k == kubegcd {
			continue
		}
		ratio, spread := s.medianRatio(kubegcd, k)
		switch c.slug {
		case "list":
			fmt.Fprintf(w, "kubegcd: %.2f× the paginated list (%s; target ≤ %.1f×) %s\n",
				ratio, spread, targetColdstartVsList, verdict(ratio <= targetColdstartVsList))
		case "kcm":
			fmt.Fprintf(w, "kubegcd: %.2f× kube-controller-manager's sync (%s); "+
				"first deletion after a cold start ≤ kube-controller-manager's: not measured here yet\n", ratio, spread)
		default:
			fmt.Fprintf(w, "kubegcd: %.2f× the %s (%s)\n", ratio, strings.TrimPrefix(c.name, "floor B: "), spread)
		}
	}
	f := s.fsyncs
	switch {
	case f.skipped != "":
		fmt.Fprintf(w, "kubegcd's fsyncs: %s\n", f.skipped)
	default:
		var parts []string
		for _, file := range slices.Sorted(maps.Keys(f.byFile)) {
			parts = append(parts, fmt.Sprintf("%s %d", file, f.byFile[file]))
		}
		per := ""
		if f.objects > 0 {
			per = fmt.Sprintf(", one per %.0f objects", float64(f.objects)/float64(max(f.total(), 1)))
		}
		fmt.Fprintf(w, "kubegcd's fsyncs and fdatasyncs, start → /readyz (a start under strace, ready after %s): "+
			"%d (%s)%s\n", f.ready.Round(time.Millisecond), f.total(), strings.Join(parts, ", "), per)
	}
	if s.profile != "" {
		fmt.Fprintf(w, "kubegcd profiled: %s\n", s.profile)
	}
}

// medianRatio returns the median over the rounds of contender a's time
// over contender b's, and the rounds' ratios.
func (s *coldstartSize) medianRatio(a, b int) (float64, string) {
	var vs []float64
	var parts []string
	for _, rs := range s.byRound {
		v := rs[a].elapsed.Seconds() / rs[b].elapsed.Seconds()
		vs = append(vs, v)
		parts = append(parts, fmt.Sprintf("%.2f", v))
	}
	if len(vs) == 1 {
		return vs[0], "one round"
	}
	return median(vs), "rounds " + strings.Join(parts, ", ")
}

// coldRow is a contender's row: medians, and each round's time in the
// order of the rounds.
func coldRow(name string, rs []coldResult) string {
	pick := func(f func(coldResult) float64) float64 {
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = f(r)
		}
		return median(vs)
	}
	var times []string
	for _, r := range rs {
		times = append(times, fmt.Sprintf("%.2f", r.elapsed.Seconds()))
	}
	dash := func(v float64, format string) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf(format, v)
	}
	objects := pick(func(r coldResult) float64 { return float64(r.objects) })
	perObject := func(f func(coldResult) float64) string {
		return dash(pick(func(r coldResult) float64 {
			if r.objects == 0 {
				return 0
			}
			return f(r) / float64(r.objects)
		}), "%.0f")
	}
	cached := pick(func(r coldResult) float64 {
		if r.api == nil {
			return 0
		}
		return r.api.cacheFetched / 1e6
	})
	return fmt.Sprintf("%-26s %8.2f  %-22s %9s %7.2f %9.2f %9s %8s %9s %9s %8s", name,
		pick(func(r coldResult) float64 { return r.elapsed.Seconds() }), strings.Join(times, " "),
		dash(objects, "%.0f"),
		pick(func(r coldResult) float64 { return r.cpu }),
		pick(func(r coldResult) float64 { return r.serverCPU }),
		dash(cached, "%.2f"),
		dash(pick(func(r coldResult) float64 { return mb(r.hwm) }), "%.1f"),
		perObject(func(r coldResult) float64 { return float64(r.io.wchar) }),
		perObject(func(r coldResult) float64 { return float64(r.io.writeBytes) }),
		perObject(func(r coldResult) float64 { return float64(r.dbBytes) }))
}
