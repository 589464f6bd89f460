package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/internal/testutil"
)

// mirrorTimeout bounds how long the demo's kubegcd may take, once ready, to
// mirror exactly what the apiserver holds.
const mirrorTimeout = time.Minute

// TestDemo runs the demo end to end (control plane, seed, bin/kubegcd) and
// checks, while it is up, that kubegcd mirrors the seeded cluster and that
// the CLI commands it prints show the seeded objects, and after it has
// exited, that nothing is left behind.
func TestDemo(t *testing.T) {
	testutil.NeedsControlPlane(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)   // run's os.MkdirTemp goes here, so leftovers show
	browserDir := t.TempDir() // beside tmp, not in it

	// Hold the requested address so that run must fall back to a free port.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var up *demo
	err = run(ctx, taken.Addr().String(), 100*time.Millisecond, func(d demo) error {
		up = &d
		if d.URL == "http://"+taken.Addr().String() {
			return fmt.Errorf("kubegcd was given the taken address %s", d.URL)
		}
		if d.Seeded == 0 {
			return errors.New("seed created no objects")
		}
		if err := checkMirror(ctx, d); err != nil {
			return err
		}
		if err := checkRules(ctx, d); err != nil {
			return err
		}
		if err := checkStuck(ctx, d); err != nil {
			return err
		}
		if err := checkStuckPage(ctx, d, browserDir); err != nil {
			return err
		}
		if err := checkPending(ctx, d); err != nil {
			return err
		}
		return checkCommands(ctx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	if up == nil {
		t.Fatal("run returned without calling onReady")
	}
	if _, err := os.Stat(up.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("demo dir %s still there after run (stat: %v)", up.Dir, err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left behind in TMPDIR: %s", filepath.Join(tmp, e.Name()))
	}
}

// seededStuck are the deletions seed leaves unfinished, as /stuck names
// them.
var seededStuck = []string{"ConfigMap demo-foreground/held-owner", "Pod demo-batch/ingest-0", "Pod demo-batch/ingest-unscheduled"}

// stuckTimeout bounds how long, once the demo is up, the Stuck page may take
// to show what seed left stuck: the first screen a newcomer opens shows it at
// once, give or take a request on a busy machine.
const stuckTimeout = 5 * time.Second

// checkStuck polls /stuck, as the Stuck page asks it (the daemon's
// --stuck-after), until it lists every seeded stuck deletion, or
// stuckTimeout passes.
func checkStuck(ctx context.Context, d demo) error {
	deadline := time.Now().Add(stuckTimeout)
	for {
		b, err := testcluster.HTTPGet(ctx, d.URL+"/stuck")
		if err != nil {
			return err
		}
		var out struct {
			Items []struct {
				Target struct{ Kind, Namespace, Name string }
			}
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return fmt.Errorf("/stuck: %w", err)
		}
		var listed []string
		for _, it := range out.Items {
			listed = append(listed, it.Target.Kind+" "+it.Target.Namespace+"/"+it.Target.Name)
		}
		var missing []string
		for _, w := range seededStuck {
			if !slices.Contains(listed, w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/stuck lacks %v %s after the demo was up; it lists %v", missing, stuckTimeout, listed)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// seededResources are the resources seed creates objects of.
var seededResources = []string{"nodes", "leases.coordination.k8s.io", "namespaces", "serviceaccounts",
	"deployments.apps", "replicasets.apps", "pods", "configmaps", "secrets"}

// checkMirror polls kubegcd's /status until it is synced, mirrors at least
// the seeded objects and, for every resource it lists, as many objects as the
// apiserver holds, or mirrorTimeout passes.
func checkMirror(ctx context.Context, d demo) error {
	cfg := rest.CopyConfig(d.Cluster.Config)
	cfg.WarningHandler = rest.NoWarnings{} // listing every resource lists deprecated ones too
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, mirrorTimeout)
	defer cancel()
	var last error
	for {
		err := compareMirror(ctx, d, meta)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err // not the deadline cutting a comparison short
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubegcd's mirror does not match the cluster: %w", last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func compareMirror(ctx context.Context, d demo, meta metadata.Interface) error {
	st, err := testcluster.GetKubegcdStatus(ctx, d.URL)
	if err != nil {
		return err
	}
	if !st.Synced {
		return errors.New("/status: not synced")
	}
	if st.Objects < int64(d.Seeded) {
		return fmt.Errorf("/status: %d objects, but seed created %d", st.Objects, d.Seeded)
	}
	var mismatches []string
	mirrored := map[string]int64{}
	for _, r := range st.Resources {
		name := r.Resource
		if r.Group != "" {
			name += "." + r.Group
		}
		mirrored[name] = r.Objects
		if !r.Synced {
			mismatches = append(mismatches, name+" not synced")
			continue
		}
		list, err := meta.Resource(schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}).
			List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list %s: %w", name, err)
		}
		if n := int64(len(list.Items)); n != r.Objects {
			mismatches = append(mismatches, fmt.Sprintf("%s: kubegcd %d, apiserver %d", name, r.Objects, n))
		}
	}
	for _, name := range seededResources {
		if mirrored[name] == 0 {
			mismatches = append(mismatches, name+": none mirrored")
		}
	}
	if len(mismatches) > 0 {
		return errors.New(strings.Join(mismatches, "; "))
	}
	return nil
}

// checkPending polls /pending until every PodGC pass, the TTL controller and
// the ttl-expired rule show a decision about the seeded objects, or
// mirrorTimeout passes.
func checkPending(ctx context.Context, d demo) error {
	want := map[string]bool{"podgc BR-24-01": true, "podgc BR-24-02": true, "podgc BR-24-03": true, "podgc KG-24-01": true,
		"ttl BR-19-01": true, "ownergc BR-21-01": true, "svgc KG-06-01": true, "svgc KG-06-02": true,
		"rules ttl-expired": true}
	deadline := time.Now().Add(mirrorTimeout)
	for {
		b, err := testcluster.HTTPGet(ctx, d.URL+"/pending")
		if err != nil {
			return err
		}
		var out struct {
			Items []struct{ Controller, Rule string }
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return fmt.Errorf("/pending: %w", err)
		}
		seen := map[string]bool{}
		for _, it := range out.Items {
			seen[it.Controller+" "+it.Rule] = true
		}
		var missing []string
		for k := range want {
			if !seen[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/pending lacks %v: %s", missing, b)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// commandShows is what each of tryCommands must print about the seed, in
// their order.
var commandShows = [][]string{
	{"Mirror:      synced", "Mode:        dry-run"},
	{"child-of-deleted", "ownergc", "nightly-28760", "podgc", "node-a", "ttl"},
	{"held-owner", "deleting-dependents", "ingest-unscheduled", "finalizer demo.kubegcd.io/hold"},
	{"old-settings", "old-api-token", "scratch-data", "retired-robot"},
	{"ConfigMap demo-garbage/child-of-deleted", "It is pending", "ConfigMap demo-garbage/parent: missing", "KG-LINT-01"},
	{"Deployment/web", "└─ReplicaSet/web-7c9d8b5f4 ◀", "├─Pod/web-7c9d8b5f4-q8m4z", "└─Pod/web-7c9d8b5f4-x2k9p", "controller,blockOwnerDeletion"},
	{"Deleting Deployment demo-shop/web with propagation foreground would touch 3 objects", "web-7c9d8b5f4-x2k9p"},
}

// checkCommands runs the CLI commands the demo prints, with the binary it
// runs, and checks that each succeeds and shows the seeded objects.
func checkCommands(ctx context.Context, d demo) error {
	bin, err := testcluster.KubegcdBin()
	if err != nil {
		return err
	}
	cmds := tryCommands(d.URL)
	if len(cmds) != len(commandShows) {
		return fmt.Errorf("%d commands, but commandShows has %d", len(cmds), len(commandShows))
	}
	for i, args := range cmds {
		if !slices.Contains(args, d.URL) {
			return fmt.Errorf("kubegcd %v: no --server %s, though kubegcd does not listen at the default", args, d.URL)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "KUBEGCD_SERVER=", "NO_COLOR=1")
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			return fmt.Errorf("kubegcd %v: %w: %s", args, err, stderr)
		}
		for _, w := range commandShows[i] {
			if !strings.Contains(string(out), w) {
				return fmt.Errorf("kubegcd %v: output lacks %q:\n%s", args, w, out)
			}
		}
	}
	return nil
}
