package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// completionAPI answers /status, /objects and /audit as a kubegcd holding
// a few objects would, to requests that carry the bearer token want.
func completionAPI(t *testing.T, want string) *httptest.Server {
	t.Helper()
	type object struct{ kind, plural, short, namespace, name string }
	objects := []object{
		{"ConfigMap", "configmaps", "cm", "shop", "web-cfg"},
		{"ConfigMap", "configmaps", "cm", "shop", "orphan"},
		{"ConfigMap", "configmaps", "cm", "other", "orphan"},
		{"Deployment", "deployments", "deploy", "shop", "web"},
		{"Namespace", "namespaces", "ns", "", "shop"},
		{"Namespace", "namespaces", "ns", "", "other"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+want {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": "unauthorized"}`))
			return
		}
		q := r.URL.Query()
		switch r.URL.Path {
		case "/status":
			_, _ = w.Write([]byte(`{"resources": [
				{"group": "", "version": "v1", "resource": "configmaps", "kind": "ConfigMap", "objects": 3},
				{"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment", "objects": 1},
				{"group": "", "version": "v1", "resource": "namespaces", "kind": "Namespace", "objects": 2},
				{"group": "", "version": "v1", "resource": "secrets", "kind": "Secret", "objects": 0},
				{"group": "a.example", "version": "v1", "resource": "gizmos", "kind": "Gizmo", "objects": 1},
				{"group": "b.example", "version": "v1", "resource": "gizmos", "kind": "Gizmo", "objects": 1}]}`))
		case "/objects":
			var items []map[string]string
			for _, o := range objects {
				if kind := q.Get("kind"); kind != o.kind && kind != o.plural && kind != o.short {
					continue
				}
				if ns := q.Get("namespace"); ns != "" && o.namespace != "" && ns != o.namespace {
					continue
				}
				items = append(items, map[string]string{"kind": o.kind, "namespace": o.namespace, "name": o.name, "uid": o.name + "-uid"})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"items": items})
		case "/audit":
			rows := []map[string]string{{"controller": "ownergc", "rule": "BR-21-01"}, {"controller": "podgc", "rule": "BR-24-03"},
				{"controller": "ownergc", "rule": "BR-21-01"}}
			if c := q.Get("controller"); c != "" {
				rows = slices.DeleteFunc(rows, func(r map[string]string) bool { return r["controller"] != c })
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"items": rows})
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error": "not found"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// complete runs cobra's __complete, as a shell's completion script does,
// and returns the completions (with their descriptions) and what was
// written on stderr besides cobra's own line.
func complete(t *testing.T, prog string, vars map[string]string, args ...string) (got []string, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{prog: prog, stdout: &out, stderr: &errb, lookupEnv: envOf(vars), now: time.Now}
	if code := e.main(context.Background(), append([]string{"__complete"}, args...)); code != 0 {
		t.Fatalf("__complete %q: exit %d, stderr %q", args, code, errb.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, ":") {
			got = append(got, line)
		}
	}
	for _, line := range strings.Split(errb.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, "Completion ended with directive:") {
			stderr += line + "\n"
		}
	}
	return got, stderr
}

func TestCompletionFromServer(t *testing.T) {
	srv := completionAPI(t, "s3cret")
	vars := map[string]string{envServer: srv.URL, envToken: "s3cret"}
	tests := []struct {
		args []string
		want []string
	}{
		// Kinds with objects, by plural; .group where two groups serve it.
		{[]string{"why", ""}, []string{"configmaps\tConfigMap", "deployments\tDeployment", "gizmos.a.example\tGizmo",
			"gizmos.b.example\tGizmo", "namespaces\tNamespace"}},
		{[]string{"tree", "de"}, []string{"deployments\tDeployment"}},
		// KIND/NAME, the kind as typed; each name with its namespaces.
		{[]string{"why", "cm/"}, []string{"cm/orphan\tother, shop", "cm/web-cfg\tshop"}},
		{[]string{"why", "-n", "other", "cm/"}, []string{"cm/orphan\tother"}},
		{[]string{"cascade", "--namespace=shop", "configmaps/w"}, []string{"configmaps/web-cfg\tshop"}},
		{[]string{"tree", "deploy/"}, []string{"deploy/web\tshop"}},
		{[]string{"why", "ns/"}, []string{"ns/other", "ns/shop"}},
		// KIND NAME.
		{[]string{"why", "cm", "or"}, []string{"orphan\tother, shop"}},
		{[]string{"why", "cm/orphan", ""}, nil},
		{[]string{"why", "cm", "orphan", ""}, nil},
		{[]string{"why", "nokind/"}, nil},
		// -n from the namespaces the mirror holds.
		{[]string{"why", "cm/orphan", "-n", ""}, []string{"other", "shop"}},
		{[]string{"get", "pending", "--namespace", "sh"}, []string{"shop"}},
		// get's lists and filters.
		{[]string{"get", ""}, []string{"audit", "deleted-copies", "leases", "lint", "pending", "rules", "stuck", "unused"}},
		{[]string{"get", "pending", "--kind", "con"}, []string{"configmaps\tConfigMap"}},
		{[]string{"get", "lint", "--rule", "kg-lint-0"}, []string{"KG-LINT-01\tdangling-owner (warning)", "KG-LINT-02\tuid-mismatch (error)",
			"KG-LINT-03\tcross-namespace-owner (error)", "KG-LINT-04\tcluster-scoped-dependent-namespaced-owner (error)",
			"KG-LINT-05\towner-kind-not-served (error)", "KG-LINT-06\tmultiple-controllers (error)",
			"KG-LINT-07\tblock-owner-deletion-live-owner (info)"}},
		{[]string{"get", "audit", "--rule", ""}, []string{"BR-21-01\townergc", "BR-24-03\tpodgc"}},
		{[]string{"get", "audit", "--controller", "podgc", "--rule", "BR"}, []string{"BR-24-03\tpodgc"}},
		{[]string{"get", "lint", "--severity", ""}, []string{"error", "warning", "info"}},
		{[]string{"get", "audit", "--controller", ""}, []string{"ownergc", "podgc", "ttl", "svgc", "lcgc", "rules", "kubegcd", "operator"}},
		{[]string{"get", "audit", "--outcome", ""}, []string{"applied", "dry-run", "failed", "conflict", "not-found", "skipped", "unknown"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, stderr := complete(t, "kubegcd", vars, tt.args...)
			if !slices.Equal(got, tt.want) || stderr != "" {
				t.Errorf("got %q, stderr %q; want %q", got, stderr, tt.want)
			}
		})
	}
	// The plugin completes the same words, as kubectl asks it through
	// kubectl_complete-gc.
	if got, _ := complete(t, "kubectl gc", vars, "why", "cm/w"); !slices.Equal(got, []string{"cm/web-cfg\tshop"}) {
		t.Errorf("kubectl gc why cm/w: %q", got)
	}
}

// TestCompletionConnection: completion reaches the server the command line
// names, with its token, and offers nothing, silently and quickly, when
// the server cannot answer.
func TestCompletionConnection(t *testing.T) {
	srv := completionAPI(t, "s3cret")
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	// A handler still blocked keeps Close waiting: close the clients first.
	t.Cleanup(func() { hang.CloseClientConnections(); hang.Close() })
	tokenFile := writeTemp(t, "token", "s3cret\n")
	tests := []struct {
		name string
		vars map[string]string
		args []string
		want []string
	}{
		{"--server and --token-file", nil, []string{"why", "--server", srv.URL, "--token-file", tokenFile, "cm/w"}, []string{"cm/web-cfg\tshop"}},
		{"--server wins", map[string]string{envServer: "http://127.0.0.1:1", envToken: "s3cret"},
			[]string{"why", "--server", srv.URL, "cm/w"}, []string{"cm/web-cfg\tshop"}},
		{"token refused", map[string]string{envServer: srv.URL, envToken: "wrong"}, []string{"why", "cm/"}, nil},
		{"no token", map[string]string{envServer: srv.URL}, []string{"why", "-n", ""}, nil},
		{"token file missing", map[string]string{envServer: srv.URL}, []string{"why", "--token-file", "/nonexistent", "cm/"}, nil},
		{"nothing listens", nil, []string{"why", "--server", "http://127.0.0.1:1", "cm/"}, nil},
		{"not a URL", nil, []string{"why", "--server", "ftp://x", ""}, nil},
		{"no answer", nil, []string{"why", "--server", hang.URL, ""}, nil},
		{"not the API", map[string]string{envToken: "s3cret"}, []string{"get", "audit", "--server", srv.URL + "/nowhere", "--rule", ""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got, stderr := complete(t, "kubegcd", tt.vars, tt.args...)
			if !slices.Equal(got, tt.want) || stderr != "" {
				t.Errorf("got %q, stderr %q; want %q and nothing on stderr", got, stderr, tt.want)
			}
			if took := time.Since(start); took > completionTimeout+time.Second {
				t.Errorf("took %s; completion waits at most %s", took, completionTimeout)
			}
		})
	}
}

// TestDidYouMean: a mistyped command is answered with the commands it may
// have meant, by kubegcd's client commands and by the kubectl plugin.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		prog string
		args []string
		want string
	}{
		{"kubegcd", []string{"gett", "pending"}, `kubegcd: unknown command "gett", did you mean "get"? (see 'kubegcd help')` + "\n"},
		{"kubectl gc", []string{"casade"}, `kubectl gc: unknown command "casade", did you mean "cascade"? (see 'kubectl gc help')` + "\n"},
		{"kubectl gc", []string{"stat"}, `kubectl gc: unknown command "stat", did you mean "status"? (see 'kubectl gc help')` + "\n"},
		{"kubectl gc", []string{"help", "trea"}, `kubectl gc: unknown command "trea", did you mean "tree"? (see 'kubectl gc help')` + "\n"},
		{"kubectl gc", []string{"explode"}, `kubectl gc: unknown command "explode" (see 'kubectl gc help')` + "\n"},
	} {
		var out, errb bytes.Buffer
		e := &env{prog: tc.prog, stdout: &out, stderr: &errb, lookupEnv: envOf(nil), now: time.Now}
		if code := e.main(context.Background(), tc.args); code != 2 || errb.String() != tc.want {
			t.Errorf("%s %q: exit %d, stderr %q; want 2 and %q", tc.prog, tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestCompletionAnswerCap: completion refuses an answer larger than a
// shell's completion needs, and stops reading it at its cap: a server
// offering 64 MiB of names gets a few MiB read (the cap, plus what the
// sockets' buffers hold), and the TAB offers nothing, in time.
func TestCompletionAnswerCap(t *testing.T) {
	const offered = 64 << 20
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		item := `{"kind":"ConfigMap","namespace":"ns","name":"big","uid":"uid-big","apiVersion":"v1"},`
		chunk := []byte(strings.Repeat(item, 1000))
		n, _ := io.WriteString(w, `{"items":[`)
		written.Add(int64(n))
		for written.Load() < offered {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return // the client went away
			}
		}
		n, _ = io.WriteString(w, `{"kind":"ConfigMap","namespace":"ns","name":"big","uid":"uid-big","apiVersion":"v1"}]}`)
		written.Add(int64(n))
	}))
	t.Cleanup(srv.Close)
	start := time.Now()
	got, stderr := complete(t, "kubegcd", map[string]string{envServer: srv.URL}, "why", "cm/")
	if got != nil || stderr != "" {
		t.Errorf("got %q, stderr %q; want nothing", got, stderr)
	}
	if took := time.Since(start); took > completionTimeout+time.Second {
		t.Errorf("took %s; completion waits at most %s", took, completionTimeout)
	}
	// The server's handler ends once its writes fail.
	srv.CloseClientConnections()
	srv.Close()
	t.Logf("the server wrote %.1f MiB", float64(written.Load())/(1<<20))
	if n := written.Load(); n > 48<<20 {
		t.Errorf("the server wrote %d MiB of its %d MiB: completion read on past its cap", n>>20, offered>>20)
	}
}
