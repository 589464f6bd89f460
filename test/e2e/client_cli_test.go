package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/yaml"

	"github.com/kubegcd/kubegcd/internal/app"
)

// cliRun runs a kubegcd client command in-process, as the binary would.
func cliRun(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = app.Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// cliOK runs a client command against d and requires exit 0 and every one
// of want in its output.
func cliOK(t *testing.T, d *daemon, want []string, args ...string) string {
	t.Helper()
	code, stdout, stderr := cliRun(append(args, "--server", d.ClientURL())...)
	if code != 0 {
		t.Fatalf("kubegcd %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("kubegcd %s: output lacks %q:\n%s", strings.Join(args, " "), w, stdout)
		}
	}
	return stdout
}

// cliFails runs a client command and requires exit code want and one line
// on stderr holding every one of words.
func cliFails(t *testing.T, wantCode int, words []string, args ...string) {
	t.Helper()
	code, stdout, stderr := cliRun(args...)
	if code != wantCode || stdout != "" || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("kubegcd %s: exit %d, stdout %q, stderr %q; want exit %d and one line on stderr",
			strings.Join(args, " "), code, stdout, stderr, wantCode)
	}
	for _, w := range words {
		if !strings.Contains(stderr, w) {
			t.Errorf("kubegcd %s: stderr %q lacks %q", strings.Join(args, " "), stderr, w)
		}
	}
}

// withoutKeys decodes a JSON document and drops the keys whose values the
// API computes from the clock at each request.
func withoutKeys(t *testing.T, doc []byte, keys ...string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range keys {
				delete(x, k)
			}
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(v)
	return v
}

// sameAsAPI checks that -o json prints the API's answer for path, the same
// bytes but for indentation (and the clock-derived keys), and -o yaml the
// same document.
// The mirror moves between the two reads, so it polls until they agree.
func sameAsAPI(t *testing.T, d *daemon, path string, volatile []string, args ...string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		code, api, err := d.Get(path)
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("GET %s: %d %v", path, code, err)
		}
		exit, out, stderr := cliRun(append(args, "-o", "json", "--server", d.ClientURL())...)
		if exit != 0 {
			return stopError{Err: fmt.Errorf("kubegcd %v -o json: exit %d: %s", args, exit, stderr)}
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(out)); err != nil {
			return stopError{Err: fmt.Errorf("kubegcd %v -o json printed no JSON: %w\n%s", args, err, out)}
		}
		// The same document, indented.
		if len(volatile) == 0 && compact.String() != string(bytes.TrimSpace(api)) {
			return fmt.Errorf("kubegcd %v -o json printed\n%s\nthe API answered\n%s", args, out, api)
		}
		if !reflect.DeepEqual(withoutKeys(t, []byte(out), volatile...), withoutKeys(t, api, volatile...)) {
			return fmt.Errorf("kubegcd %v -o json printed\n%s\nthe API answered\n%s", args, out, api)
		}
		exit, out, stderr = cliRun(append(args, "-o", "yaml", "--server", d.ClientURL())...)
		if exit != 0 {
			return stopError{Err: fmt.Errorf("kubegcd %v -o yaml: exit %d: %s", args, exit, stderr)}
		}
		j, err := yaml.YAMLToJSON([]byte(out))
		if err != nil {
			return stopError{Err: fmt.Errorf("kubegcd %v -o yaml printed no YAML: %v\n%s", args, err, out)}
		}
		if !reflect.DeepEqual(withoutKeys(t, j, volatile...), withoutKeys(t, api, volatile...)) {
			return fmt.Errorf("kubegcd %v -o yaml printed\n%s\nthe API answered\n%s", args, out, api)
		}
		return nil
	})
}

// TestClientCommands runs every client command, in every output format,
// against a kubegcd mirroring the real API server: a Deployment owning a
// ReplicaSet owning a ConfigMap, ConfigMaps whose owner never existed
// (pending, audited, linted), a deletion a finalizer holds, a Lease, and a
// kind two API groups serve. Dry-run (the default): nothing is deleted.
func TestClientCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "cli-"+string(uuid.NewUUID())[:8])
	// namespaces.New makes a ServiceAccount "default": one in each namespace.
	other := namespaces.New(t, ns+"-b")
	groups := []string{"a.cli.e2e.kubegcd.io", "b.cli.e2e.kubegcd.io"}
	for _, g := range groups {
		if err := createCRD(ctx, g, "gizmos", "Gizmo", "Namespaced"); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(schema.GroupVersionResource{Group: g, Version: "v1", Resource: "gizmos"}).Namespace(ns).Create(ctx,
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": g + "/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	deploy, err := kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	rs, err := kube.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: deploy.UID,
			Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configMap := func(name string, finalizers []string, owners ...metav1.OwnerReference) {
		t.Helper()
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Finalizers: finalizers, OwnerReferences: owners}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	configMap("web-1-cfg", nil, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: rs.UID})
	for _, name := range []string{"orphan-1", "orphan-2"} {
		configMap(name, nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: uuid.NewUUID()})
	}
	// A name no other namespace holds, found without -n.
	solo := ns + "-solo"
	configMap(solo, nil)
	configMap("held", []string{"e2e.kubegcd.io/hold"})
	t.Cleanup(func() { dropFinalizers(t, configMapsGVR, ns, "held") })
	if err := kube.CoreV1().ConfigMaps(ns).Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	holder, seconds, now := "cli-holder", int32(3600), metav1.NewMicroTime(time.Now())
	if _, err := kube.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "cli-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &now}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)
	q := url.Values{"namespace": {ns}}.Encode()
	// ownergc records both orphans as pending (dry-run) once it has looked.
	eventually(t, 60*time.Second, func() error {
		_, body, err := d.Get("/pending?controller=ownergc&" + q)
		if err != nil || !strings.Contains(string(body), "orphan-1") || !strings.Contains(string(body), "orphan-2") {
			return fmt.Errorf("orphans not pending yet: %s %v", body, err)
		}
		return nil
	})

	t.Run("get pending", func(t *testing.T) {
		out := cliOK(t, d, []string{"KIND", "NAME", "CONTROLLER", "ACTION", "RULE", "AGE", "orphan-1", "ownergc", "delete", "BR-21-01"},
			"get", "pending", "-n", ns, "--controller", "ownergc")
		if strings.Contains(out, "NAMESPACE") {
			t.Errorf("-n lists one namespace, without a NAMESPACE column:\n%s", out)
		}
		cliOK(t, d, []string{"NAMESPACE", ns, "orphan-2"}, "get", "pending", "-A", "--kind", "ConfigMap")
		cliOK(t, d, []string{"UID", "REASON", "orphan-1"}, "get", "pending", "-n", ns, "-o", "wide")
		sameAsAPI(t, d, "/pending?"+q, nil, "get", "pending", "-n", ns)
		// --limit is the page's limit, and next its cursor.
		out = cliOK(t, d, []string{"orphan-"}, "get", "pending", "-n", ns, "--controller", "ownergc", "--limit", "1")
		if n := strings.Count(out, "\n"); n != 2 {
			t.Errorf("--limit 1: %d lines, want the header and one row:\n%s", n, out)
		}
		_, body, err := d.Get("/pending?controller=ownergc&limit=1&" + q)
		if err != nil {
			t.Fatal(err)
		}
		code, js, stderr := cliRun("get", "pending", "-n", ns, "--controller", "ownergc", "--limit", "1", "-o", "json", "--server", d.ClientURL())
		var page struct{ Next string }
		if code != 0 || json.Unmarshal([]byte(js), &page) != nil || page.Next == "" || !strings.Contains(string(body), page.Next) {
			t.Errorf("get pending --limit 1 -o json: exit %d, %s (stderr %q); want the API's page with its next cursor %s", code, js, stderr, body)
		}
	})
	t.Run("get audit", func(t *testing.T) {
		cliOK(t, d, []string{"AGE", "CONTROLLER", "OUTCOME", "orphan-1", "orphan-2", "dry-run"},
			"get", "audit", "-n", ns, "--controller", "ownergc", "--since", "1h")
		out := cliOK(t, d, []string{"ID", "DRY RUN", "REASON"}, "get", "audit", "-n", ns, "--limit", "1", "-o", "wide")
		if n := strings.Count(out, "\n"); n != 2 {
			t.Errorf("--limit 1: %d lines, want the header and one row:\n%s", n, out)
		}
		sameAsAPI(t, d, "/audit?"+q, nil, "get", "audit", "-n", ns)
		// --kind and --rule are the API's kind and rule.
		cliOK(t, d, []string{"orphan-1", "orphan-2", "BR-21-01"}, "get", "audit", "-n", ns, "--kind", "configmaps", "--rule", "br-21-01")
		sameAsAPI(t, d, "/audit?kind=ConfigMap&rule=BR-21-01&"+q, nil, "get", "audit", "-n", ns, "--kind", "ConfigMap", "--rule", "BR-21-01")
		if code, stdout, stderr := cliRun("get", "audit", "-n", ns, "--kind", "secrets", "--server", d.ClientURL()); code != 0 || stdout != "" ||
			stderr != "No audit rows found in namespace "+ns+".\n" {
			t.Errorf("get audit --kind secrets: exit %d, stdout %q, stderr %q; want no rows", code, stdout, stderr)
		}
	})
	t.Run("get stuck", func(t *testing.T) {
		cliOK(t, d, []string{"STATE", "BLOCKED BY", "held", "finalizer e2e.kubegcd.io/hold"}, "get", "stuck", "-n", ns, "--min-age", "0")
		cliOK(t, d, []string{"EXPLANATION", "was asked to be deleted"}, "get", "stuck", "-n", ns, "--min-age", "0", "-o", "wide")
		sameAsAPI(t, d, "/stuck?minAge=0&"+q, []string{"age"}, "get", "stuck", "-n", ns, "--min-age", "0")
	})
	t.Run("get lint", func(t *testing.T) {
		cliOK(t, d, []string{"RULE", "SEVERITY", "OWNER", "orphan-1", "KG-LINT-01 dangling-owner", "ConfigMap/ghost"}, "get", "lint", "-n", ns)
		cliOK(t, d, []string{"MESSAGE", "no object with uid"}, "get", "lint", "-n", ns, "-o", "wide", "--severity", "warning")
		// A small mirror's counts are made for each request, and say when.
		sameAsAPI(t, d, "/lint?"+q, []string{"countsAt"}, "get", "lint", "-n", ns)
	})
	t.Run("get leases", func(t *testing.T) {
		cliOK(t, d, []string{"HOLDER", "EXPIRED", "cli-lease", "cli-holder", "false"}, "get", "leases", "-n", ns)
		cliOK(t, d, []string{"DURATION", "1h0m0s"}, "get", "leases", "-n", ns, "-o", "wide")
		sameAsAPI(t, d, "/leases?"+q, []string{"renewAgeSeconds"}, "get", "leases", "-n", ns)
	})
	t.Run("why", func(t *testing.T) {
		cliOK(t, d, []string{"Deployment " + ns + "/web (apps/v1)", "It is not pending: it has no owner references",
			"Dependents: 1", "ReplicaSet " + ns + "/web-1 (blockOwnerDeletion)"}, "why", "deploy/web", "-n", ns)
		cliOK(t, d, []string{"ConfigMap " + ns + "/orphan-1", "It is pending", "Pending decisions:", "ownergc: delete (rule BR-21-01",
			"Lint findings:", "KG-LINT-01 dangling-owner (warning)", "Recent audit:", "dry-run"}, "why", "CM", "orphan-1", "-n", ns)
		cliOK(t, d, []string{"ConfigMap " + ns + "/" + solo, "It is not pending: it has no owner references"}, "why", "configmap/"+solo)
		cliOK(t, d, []string{"Deletion: finalizing", "Blocked by:", "- finalizer e2e.kubegcd.io/hold"}, "why", "configmaps/held", "-n", ns)
		var found lookupReply
		d.GetJSON(t, "/objects?kind=Deployment&name=web&"+q, http.StatusOK, &found)
		sameAsAPI(t, d, "/objects/"+found.Items[0].UID, nil, "why", "deployments.apps/web", "-n", ns)
	})
	t.Run("tree", func(t *testing.T) {
		want := []string{"NAMESPACE", "OWNER REF", "STATE", "Deployment/web   ", "└─ReplicaSet/web-1 ◀",
			"  └─ConfigMap/web-1-cfg", "controller,blockOwnerDeletion", "exists"}
		cliOK(t, d, want, "tree", "rs/web-1", "-n", ns)
		cliOK(t, d, want, "tree", "rs", "web-1", "-n", ns, "--at", time.Now().UTC().Format(time.RFC3339Nano))
		code, out, _ := cliRun("tree", "rs/web-1", "-n", ns, "--server", d.ClientURL())
		if code != 0 || strings.Contains(out, "\x1b[") {
			t.Errorf("tree off a terminal: exit %d, colours in\n%q", code, out)
		}
		uid := string(rs.UID)
		sameAsAPI(t, d, "/graph?uid="+uid, nil, "tree", "rs/web-1", "-n", ns)
		_, dot, err := d.Get("/graph?format=dot&uid=" + uid)
		if err != nil {
			t.Fatal(err)
		}
		if out := cliOK(t, d, []string{"strict digraph full {"}, "tree", "rs/web-1", "-n", ns, "-o", "dot"); out != string(dot) {
			t.Errorf("-o dot printed\n%s\nthe API answered\n%s", out, dot)
		}
	})
	t.Run("cascade", func(t *testing.T) {
		cliOK(t, d, []string{"Deleting Deployment " + ns + "/web with propagation foreground would touch 2 objects",
			"DEPTH", "ACTION", "1       delete   ReplicaSet", "2       delete   ConfigMap", "web-1-cfg",
			"A foreground deletion would wait for:", "ReplicaSet " + ns + "/web-1 (holds Deployment " + ns + "/web)"},
			"cascade", "deploy/web", "-n", ns, "--propagation", "foreground")
		cliOK(t, d, []string{"orphan", "ReplicaSet", "PROPAGATION", "REASON"}, "cascade", "deploy/web", "-n", ns, "--propagation", "orphan", "-o", "wide")
		sameAsAPI(t, d, "/objects/"+string(deploy.UID)+"/cascade?propagation=background", nil, "cascade", "deploy/web", "-n", ns)
	})
	t.Run("status", func(t *testing.T) {
		// The package's other tests add and remove kinds on the shared
		// cluster: while discovery catches up with one removed, a watch
		// of it fails and the mirror is not synced.
		eventually(t, 60*time.Second, func() error {
			if code, out, _ := cliRun("status", "--server", d.ClientURL()); code != 0 || !strings.Contains(out, "Mirror:      synced") {
				return fmt.Errorf("kubegcd status: exit %d:\n%s", code, out)
			}
			return nil
		})
		cliOK(t, d, []string{"kubegcd ", "Mirror:      synced", "Mode:        dry-run"}, "status")
		cliOK(t, d, []string{"Resources:", "configmaps", "deployments.apps", "gizmos." + groups[0]}, "status", "-o", "wide")
		sameAsAPI(t, d, "/status", []string{"writesLastMinute", "lastPass", "objects", "skippedPasses", "lastWork", "queueDepth"}, "status")
	})
	t.Run("errors", func(t *testing.T) {
		cliFails(t, 1, []string{"cannot reach kubegcd", "127.0.0.1:1"}, "get", "pending", "--server", "http://127.0.0.1:1")
		cliFails(t, 1, []string{`unknown kind "nosuchkind"`}, "why", "nosuchkind/x", "--server", d.ClientURL())
		cliFails(t, 1, []string{`ConfigMap "nope" not found in namespace ` + ns}, "tree", "cm/nope", "-n", ns, "--server", d.ClientURL())
		cliFails(t, 1, []string{"several API groups", groups[0], groups[1], "give KIND.group", "gizmo." + groups[0] + "/g"},
			"why", "gizmo/g", "-n", ns, "--server", d.ClientURL())
		cliOK(t, d, []string{"Gizmo " + ns + "/g (" + groups[1] + "/v1)"}, "why", "gizmos."+groups[1]+"/g", "-n", ns)
		cliFails(t, 1, []string{`ServiceAccount "default" exists in several namespaces`, ns, other, "give -n NAMESPACE"},
			"why", "sa/default", "--server", d.ClientURL())
		cliFails(t, 1, []string{"400 Bad Request", `invalid rule "KG-NOPE"`}, "get", "lint", "--rule", "KG-NOPE", "--server", d.ClientURL())
		cliFails(t, 2, []string{"--since does not apply to get pending"}, "get", "pending", "--since", "1h", "--server", d.ClientURL())
		// The server side of tokens is not built yet: a server answering
		// 401 stands in for one.
		unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": "unauthorized"}`))
		}))
		defer unauthorized.Close()
		cliFails(t, 1, []string{"401 Unauthorized", "--token-file"}, "status", "--server", unauthorized.URL)
	})
	t.Run("kubectl plugin", func(t *testing.T) {
		dir := t.TempDir()
		code, stdout, stderr := runBinary(t, 30*time.Second, "kubectl-plugin", "install", "--dir", dir)
		link := filepath.Join(dir, "kubectl-gc")
		if code != 0 || !strings.Contains(stdout, "installed "+link) {
			t.Fatalf("kubectl-plugin install: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if target, err := os.Readlink(link); err != nil || target != kubegcdBin {
			t.Fatalf("%s -> %q (%v), want -> %s", link, target, err, kubegcdBin)
		}
		// kubectl runs kubectl-gc with the words after `kubectl gc`.
		plugin := func(args ...string) (int, string, string) {
			cmd := exec.Command(link, args...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); ok {
				return ee.ExitCode(), out.String(), errb.String()
			} else if err != nil {
				t.Fatal(err)
			}
			return 0, out.String(), errb.String()
		}
		if code, out, errs := plugin("why", "cm/orphan-1", "-n", ns, "--server", d.ClientURL()); code != 0 || !strings.Contains(out, "It is pending") {
			t.Errorf("kubectl gc why: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		if code, out, _ := plugin("help"); code != 0 || !strings.Contains(out, "kubectl gc why KIND/NAME") {
			t.Errorf("kubectl gc help: exit %d, %q", code, out)
		}
		// The plugin is the client alone: no daemon behind kubectl.
		if code, _, errs := plugin("run"); code != 2 || !strings.Contains(errs, `kubectl gc: unknown command "run"`) {
			t.Errorf("kubectl gc run: exit %d, stderr %q; want 2, unknown command", code, errs)
		}
		// kubectl completes `kubectl gc get <TAB>` through kubectl_complete-gc.
		complete := exec.Command(filepath.Join(dir, "kubectl_complete-gc"), "get", "")
		if out, err := complete.Output(); err != nil || !strings.Contains(string(out), "\npending\n") {
			t.Errorf("kubectl_complete-gc get '': %v, %q; want the lists get takes", err, out)
		}
		// Installing again replaces the link.
		if code, _, stderr := runBinary(t, 30*time.Second, "kubectl-plugin", "install", "--dir", dir); code != 0 {
			t.Errorf("second install: exit %d, %q", code, stderr)
		}
	})
}
