package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// completionEnd is what cobra's __complete writes on stderr, and all it
// may write there: a completion that fails says nothing.
const completionEnd = "Completion ended with directive: ShellCompDirectiveNoFileComp\n"

// completions are the words a `__complete` run offered, without their
// descriptions and cobra's closing directive line.
func completions(out string) []string {
	var words []string
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, ":") {
			word, _, _ := strings.Cut(line, "\t")
			words = append(words, word)
		}
	}
	return words
}

// TestCompletionFromDaemon: the built kubegcd completes, as a shell's
// completion script asks it through cobra's __complete (the word to
// complete last), KIND/NAME and -n from a running kubegcd that wants a
// token; kubectl completes `kubectl gc` the same way; and a server that
// cannot answer gets nothing, no error, at once.
func TestCompletionFromDaemon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespaces.New(t, "complete-"+string(uuid.NewUUID())[:8])
	for _, name := range []string{"alpha-cfg", "alpha-env", "beta"} {
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	e2eutil.WriteTouched(t, tokens, "c0mplete,operator\n", time.Now().Add(-time.Hour))
	d := daemons.Start(t, "", "--auth-token-file", tokens)
	token := writeFile(t, "token", "c0mplete\n")
	complete := func(args ...string) ([]string, string) {
		t.Helper()
		code, stdout, stderr := runBinary(t, 30*time.Second, append([]string{"__complete"}, args...)...)
		if code != 0 {
			t.Fatalf("kubegcd __complete %q: exit %d, stderr %q", args, code, stderr)
		}
		return completions(stdout), stderr
	}
	conn := []string{"--server", d.ClientURL(), "--token-file", token}

	// The mirror lists the namespace's ConfigMaps once it has synced.
	want := []string{"cm/alpha-cfg", "cm/alpha-env", "cm/beta"}
	eventually(t, 60*time.Second, func() error {
		got, stderr := complete(append(append([]string{"why"}, conn...), "-n", ns, "cm/")...)
		if !slices.Equal(got, want) || stderr != completionEnd {
			return fmt.Errorf("why -n %s cm/: %q, stderr %q; want %q", ns, got, stderr, want)
		}
		return nil
	})
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"tree", "-n", ns, "cm/alpha"}, []string{"cm/alpha-cfg", "cm/alpha-env"}},
		{[]string{"cascade", "-n", ns, "configmaps", "b"}, []string{"beta"}},
		{[]string{"why", "config"}, []string{"configmaps"}},
		{[]string{"why", "cm/alpha-cfg", "-n", ns[:len(ns)-2]}, []string{ns}},
		{[]string{"get", "stuck", "--namespace", ns}, []string{ns}},
	} {
		// Completion gives up silently after 2 s: on a loaded machine a
		// try may come back empty, so each case has a few.
		eventually(t, 30*time.Second, func() error {
			got, stderr := complete(append(append(tc.args[:1:1], conn...), tc.args[1:]...)...)
			if !slices.Equal(got, tc.want) || stderr != completionEnd {
				return fmt.Errorf("__complete %q: %q, stderr %q; want %q", tc.args, got, stderr, tc.want)
			}
			return nil
		})
	}

	// kubectl runs kubectl_complete-gc for `kubectl gc why cm/<TAB>`.
	dir := t.TempDir()
	if code, _, stderr := runBinary(t, 30*time.Second, "kubectl-plugin", "install", "--dir", dir); code != 0 {
		t.Fatalf("kubectl-plugin install: exit %d, stderr %q", code, stderr)
	}
	plugin := exec.Command(filepath.Join(dir, "kubectl_complete-gc"), append(append([]string{"why"}, conn...), "-n", ns, "cm/al")...)
	var out bytes.Buffer
	plugin.Stdout = &out
	if err := plugin.Run(); err != nil || !slices.Equal(completions(out.String()), want[:2]) {
		t.Errorf("kubectl_complete-gc why cm/al: %v, %q; want %q", err, completions(out.String()), want[:2])
	}

	// Without the token, or from a server that is gone: nothing, quickly.
	if got, stderr := complete("why", "--server", d.ClientURL(), "-n", ns, "cm/"); got != nil || stderr != completionEnd {
		t.Errorf("without the token: %q, stderr %q; want nothing", got, stderr)
	}
	d.Stop()
	start := time.Now()
	if got, stderr := complete(append(append([]string{"why"}, conn...), "-n", "")...); got != nil || stderr != completionEnd {
		t.Errorf("server stopped: %q, stderr %q; want nothing", got, stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("completion from a stopped server took %s", took)
	}

	// A mistyped command names the one meant.
	if code, _, stderr := runBinary(t, 30*time.Second, "cascde", "cm/beta"); code != 2 ||
		stderr != `kubegcd: unknown command "cascde", did you mean "cascade"? (see 'kubegcd help')`+"\n" {
		t.Errorf("kubegcd cascde: exit %d, stderr %q", code, stderr)
	}
}
