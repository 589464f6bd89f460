package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// reportScale prints the scale benchmark's table, kubegcd beside
// kube-controller-manager, and the wall time of each phase.
func reportScale(sc scaleConfig, r scaleResult) {
	fmt.Printf("\nScale: %d kwok nodes, %d pods, %d other objects; kubegcd (enforcing, default controllers) beside "+
		"kube-controller-manager (%s); MB = 2^20 bytes\n",
		sc.nodes, sc.pods, sc.others, strings.TrimPrefix(kcmScaleControllers, "--controllers="))
	fmt.Printf("%-52s %14s %14s %s\n", "figure", "kubegcd", "kcm", "target")
	row := func(name, k, kcm, target string) { fmt.Printf("%-52s %14s %14s %s\n", name, k, kcm, target) }
	f := func(format string, v float64) string { return fmt.Sprintf(format, v) }
	mbs := func(b uint64) string { return f("%.1f", mb(b)) }
	heartbeats := r.period.Round(time.Second)
	row("objects mirrored", strconv.FormatInt(r.objects, 10), "", "")
	row("initial sync s (start → /readyz; kcm: monitors synced)",
		f("%.2f", r.sync.Seconds()), f("%.2f", r.kcmSync.Seconds()), "")
	row("initial sync objects/s", f("%.0f", float64(r.objects)/r.sync.Seconds()), "", "")
	row("RSS MB after sync", mbs(r.rssSynced), mbs(r.kcmRSSSynced), "")
	row(fmt.Sprintf("RSS MB after %s of heartbeats", heartbeats), mbs(r.rssEnd), mbs(r.kcmRSSEnd), "")
	row("  of it anonymous MB, after sync / heartbeats",
		fmt.Sprintf("%.1f / %.1f", mb(r.memSynced.Anon), mb(r.memEnd.Anon)), "", "")
	row("  of it database pages mapped MB, after sync / heartbeats",
		fmt.Sprintf("%.1f / %.1f", mb(r.memSynced.File), mb(r.memEnd.File)), "", "")
	row("PSS MB after sync (each page once)", mbs(r.memSynced.PSS), "",
		fmt.Sprintf("≤ %d %s", scaleRSSTarget/mib, verdict(r.memSynced.PSS <= scaleRSSTarget)))
	row(fmt.Sprintf("PSS MB after %s of heartbeats, highest", heartbeats),
		fmt.Sprintf("%.1f, %.1f", mb(r.memEnd.PSS), mb(r.pssMax)), "",
		fmt.Sprintf("≤ %d %s", scaleRSSTarget/mib, verdict(r.pssMax <= scaleRSSTarget)))
	row("RSS MB, highest sample during heartbeats", mbs(r.rssMax), mbs(r.kcmRSSMax), "")
	row("RSS MB at the heartbeats' start (CPU settled "+r.settled.Round(time.Second).String()+" after sync)",
		mbs(r.rssStart), "", "")
	growth := float64(r.rssEnd) - float64(r.rssStart)
	kcmGrowth := float64(r.kcmRSSEnd) - float64(r.kcmRSSSynced)
	row("RSS growth MB over the heartbeats", f("%+.1f", growth/mib), f("%+.1f", kcmGrowth/mib),
		fmt.Sprintf("≤ %d (flat) %s", scaleRSSGrowth/mib, verdict(growth <= scaleRSSGrowth)))
	row("database MB after sync", f("%.1f", float64(r.dbSynced)/mib), "", "")
	row(fmt.Sprintf("database MB after %s of heartbeats", heartbeats), f("%.1f", float64(r.dbEnd)/mib), "", "")
	row("CPU % of one core during heartbeats", f("%.2f", r.cpu), f("%.2f", r.kcmCPU),
		fmt.Sprintf("< %.0f %s", scaleCPUTarget, verdict(r.cpu < scaleCPUTarget)))
	row("  Lease renewals mirrored per 10 s", f("%.0f", r.leaseRenewals/r.period.Seconds()*10), "", "")
	row("  Node updates mirrored", f("%.0f", r.nodeUpdates), "", "")
	row(fmt.Sprintf("cascade s: %d Deployments, %d pods (first pod gone)", sc.cascadeDeployments, sc.cascadePods),
		f("%.3f", r.cascadeFirst.Seconds()), f("%.3f", r.kcmCascadeFst.Seconds()), "")
	row("cascade s: owner deleted → last pod gone", f("%.2f", r.cascade.Seconds()), f("%.2f", r.kcmCascade.Seconds()), "")
	fmt.Printf("cascade: kubegcd %.2f× kube-controller-manager's speed\n", r.kcmCascade.Seconds()/r.cascade.Seconds())
	reportPhases(r.phases)
}

// reportPhases prints the wall time of each phase and their total.
func reportPhases(p phases) {
	fmt.Printf("\n%-72s %9s\n", "phase (wall time; the control plane's start before it)", "took")
	var total time.Duration
	for _, p := range p.steps {
		fmt.Printf("%-72s %9s\n", p.name, p.took.Round(time.Second))
		total += p.took
	}
	fmt.Printf("%-72s %9s\n", "total", total.Round(time.Second))
}
