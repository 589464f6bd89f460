package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestLeaseCandidatesOff: on a control plane without coordinated leader
// election, which serves no LeaseCandidates, kubegcd starts, becomes
// ready, mirrors no LeaseCandidates, and logs nothing about them above
// debug.
func TestLeaseCandidatesOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, gv := range []string{"coordination.k8s.io/v1beta1", "coordination.k8s.io/v1alpha2"} {
		if _, err := kube.Discovery().ServerResourcesForGroupVersion(gv); !apierrors.IsNotFound(err) {
			t.Fatalf("discovery of %s: %v, want it not served on this control plane", gv, err)
		}
	}
	d := daemons.Start(t, "")
	d.WaitReady(t, time.Minute)

	resources, err := d.DB(t).Mirror().Resources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leases := false
	for _, r := range resources {
		switch {
		case r.Group == "coordination.k8s.io" && r.Resource == "leasecandidates":
			t.Errorf("mirrored %s/%s, which the API server does not serve", r.Group, r.Version)
		case r.Group == "coordination.k8s.io" && r.Resource == "leases":
			leases = true
		}
	}
	if !leases {
		t.Errorf("Leases not mirrored: %+v", resources)
	}

	// The daemon logs at debug: every line names its level. The database's
	// path, in a directory named after this test, says nothing.
	level := regexp.MustCompile(`\blevel=([A-Z]+)`)
	about := regexp.MustCompile(`(?i)lease[- ]?candidate`)
	logs := strings.ReplaceAll(d.Logs.String(), d.DBPath, "kubegcd.db")
	debug := 0
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		m := level.FindStringSubmatch(line)
		switch {
		case m == nil:
			t.Errorf("a log line without a level: %q", line)
		case m[1] == "DEBUG":
			debug++
		case about.MatchString(line):
			t.Errorf("logged above debug about LeaseCandidates: %s", line)
		}
	}
	if debug == 0 {
		t.Errorf("no debug line in the log: is it at --log-level debug?\n%s", tail(d.Logs.String(), 20))
	}
}
