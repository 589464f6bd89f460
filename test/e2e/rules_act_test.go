package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/reconcile/cleanup"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// writeRules writes a rules file named rules.yaml into dir.
func writeRules(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// createConfigMap creates a ConfigMap with these annotations and labels.
func createConfigMap(t *testing.T, ns, name string, annotations, labels map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, Labels: labels},
		Data:       map[string]string{"key": "value of " + name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// exists reports whether the ConfigMap ns/name is there.
func configMapExists(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// ruleAudit returns the audit rows of controller rules about namespace ns,
// oldest first.
func ruleAudit(t *testing.T, d *daemon, ns string) []api.AuditEntry {
	t.Helper()
	var list api.AuditList
	d.GetJSON(t, "/audit?controller=rules&limit=1000&namespace="+ns, http.StatusOK, &list)
	out := make([]api.AuditEntry, 0, len(list.Items))
	for i := len(list.Items) - 1; i >= 0; i-- {
		out = append(out, list.Items[i])
	}
	return out
}

// ruleInfo returns the rule id as GET /rules shows it.
func ruleInfo(t *testing.T, d *daemon, id string) api.RuleInfo {
	t.Helper()
	var list api.RuleList
	d.GetJSON(t, "/rules", http.StatusOK, &list)
	for _, r := range list.Items {
		if r.ID == id {
			return r
		}
	}
	for _, e := range list.Errors {
		t.Logf("refused: %s", e.Message)
	}
	t.Fatalf("rule %s is not loaded", id)
	return api.RuleInfo{}
}

// TestRuleDeletesPastTTL runs ttl-expired with action delete, enforcing.
// A ConfigMap past its TTL is deleted once the rule has matched it for
// its occurrences; one with an hour to go is not, nor one in an excluded
// namespace. A Namespace past its TTL is deleted with what it holds.
func TestRuleDeletesPastTTL(t *testing.T) {
	ctx := context.Background()
	e2eutil.StartNamespaceController(t, cluster)
	ns := namespaces.New(t, "act-ttl")
	kept := namespaces.New(t, "act-ttl-kept")
	ttl := func(v string) map[string]string { return map[string]string{"kubegcd.io/ttl": v} }
	createConfigMap(t, ns, "expired", ttl("5s"), nil)
	createConfigMap(t, ns, "later", ttl("1h"), nil)
	createConfigMap(t, kept, "expired", ttl("5s"), nil)
	doomed := namespaces.New(t, "act-ttl-doomed")
	if _, err := kube.CoreV1().Namespaces().Patch(ctx, doomed, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"kubegcd.io/ttl":"5s"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfigMap(t, doomed, "inside", nil, nil)

	dir := t.TempDir()
	writeRules(t, dir, fmt.Sprintf(`rules:
- id: ttl-expired
  action: delete
  interval: 1s
  exclude: {namespaces: [%s]}
`, kept))
	d := daemons.Start(t, "", "--dry-run=false", "--rules-dir", dir)
	d.WaitReady(t, 60*time.Second)

	eventually(t, 90*time.Second, func() error {
		if configMapExists(t, ns, "expired") {
			return fmt.Errorf("%s/expired is still there", ns)
		}
		_, err := kube.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("namespace %s is still there", doomed)
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	if !configMapExists(t, ns, "later") {
		t.Errorf("%s/later, an hour from its TTL, was deleted", ns)
	}
	if !configMapExists(t, kept, "expired") {
		t.Errorf("%s/expired, in an excluded namespace, was deleted", kept)
	}
	// Each deletion is audited once, as the rule's, after two passes.
	deleted := map[string]api.AuditEntry{}
	var all api.AuditList
	d.GetJSON(t, "/audit?controller=rules&outcome=applied&limit=1000", http.StatusOK, &all)
	for _, e := range all.Items {
		deleted[e.Target.Kind+" "+e.Target.Namespace+"/"+e.Target.Name] = e
	}
	for _, key := range []string{"ConfigMap " + ns + "/expired", "Namespace /" + doomed} {
		e, ok := deleted[key]
		if !ok {
			t.Errorf("no applied audit row of %s; rows: %v", key, deleted)
			continue
		}
		var facts struct {
			RuleHash string `json:"ruleHash"`
			Passes   int    `json:"passes"`
		}
		if err := json.Unmarshal(e.Facts, &facts); err != nil {
			t.Fatal(err)
		}
		if e.Rule != "ttl-expired" || e.Action != api.ActionDelete || e.DryRun || facts.Passes < 2 ||
			facts.RuleHash != ruleInfo(t, d, "ttl-expired").Hash {
			t.Errorf("the audit row of %s: %+v, facts %+v; want rule ttl-expired, enforced, after two passes, "+
				"with the rule's hash", key, e, facts)
		}
	}
	if _, err := kube.CoreV1().ConfigMaps(doomed).Get(ctx, "inside", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap inside the deleted namespace: %v, want NotFound", err)
	}
}

// TestRuleDryRunRecordsOnce runs ttl-expired with action delete under the
// default dry-run: nothing is deleted, and /pending and /audit show each
// decision once, however many passes make it again.
func TestRuleDryRunRecordsOnce(t *testing.T) {
	t.Parallel()
	ns := namespaces.New(t, "act-dry")
	createConfigMap(t, ns, "expired", map[string]string{"kubegcd.io/ttl": "2s"}, nil)
	dir := t.TempDir()
	writeRules(t, dir, "rules:\n- id: ttl-expired\n  action: delete\n  interval: 1s\n  occurrences: 1\n")
	d := daemons.Start(t, "", "--rules-dir", dir)
	d.WaitReady(t, 60*time.Second)

	var pending api.PendingList
	var first time.Time
	eventually(t, 60*time.Second, func() error {
		d.GetJSON(t, "/pending?controller=rules&namespace="+ns, http.StatusOK, &pending)
		if len(pending.Items) != 1 {
			return fmt.Errorf("pending: %+v", pending.Items)
		}
		// The decision is pending before the pass that made it ends.
		p := ruleInfo(t, d, "ttl-expired").LastPass
		if p == nil {
			return fmt.Errorf("no pass of ttl-expired has ended")
		}
		first = p.StartedAt
		return nil
	})
	// Five more passes make the same decision.
	eventually(t, 60*time.Second, func() error {
		if p := ruleInfo(t, d, "ttl-expired").LastPass; p.StartedAt.Before(first.Add(5 * time.Second)) {
			return fmt.Errorf("last pass at %v", p.StartedAt)
		}
		return nil
	})
	rows := ruleAudit(t, d, ns)
	if len(rows) != 1 || rows[0].Outcome != api.OutcomeDryRun || !rows[0].DryRun || rows[0].Target.Name != "expired" {
		t.Errorf("audit rows of the rules: %+v; want one dry-run row of expired", rows)
	}
	d.GetJSON(t, "/pending?controller=rules&namespace="+ns, http.StatusOK, &pending)
	if len(pending.Items) != 1 || pending.Items[0].Rule != "ttl-expired" || pending.Items[0].Action != api.ActionDelete {
		t.Errorf("pending: %+v; want ttl-expired's delete of expired", pending.Items)
	}
	if !configMapExists(t, ns, "expired") {
		t.Error("dry-run deleted the ConfigMap")
	}
	if acted := ruleInfo(t, d, "ttl-expired").LastPass.Acted; acted == nil || acted.DryRun < 1 {
		t.Errorf("/rules: last pass acted %+v, want a dry-run deletion", acted)
	}
}

// actUnusedRule deletes the ConfigMaps of namespace ns that nothing
// references, two passes a second apart after a notice 6 s before.
const actUnusedRule = `rules:
- id: act-unused
  select: |
    SELECT o.uid, 'unreferenced' AS reason FROM objects o
    WHERE o.namespace = :ns AND o.kind = 'ConfigMap' AND o.name != 'kube-root-ca.crt'
      AND NOT EXISTS (SELECT 1 FROM refs r WHERE r.target_kind = 'ConfigMap'
                      AND r.target_namespace = o.namespace AND r.target_name = o.name)
  params: {ns: %s}
  action: delete
  interval: 1s
  notify_before: 6s
`

// notices returns the notice Events about the ConfigMap ns/name.
func notices(t *testing.T, ns, name string) []corev1.Event {
	t.Helper()
	list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=" + cleanup.NoticeReason})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// deletedAt is when the rule deleted ns/name, from its audit row.
func deletedAt(t *testing.T, d *daemon, ns, name string) (time.Time, bool) {
	t.Helper()
	for _, e := range ruleAudit(t, d, ns) {
		if e.Target.Name == name && e.Outcome == api.OutcomeApplied {
			return e.Time, true
		}
	}
	return time.Time{}, false
}

// TestRuleNoticeAndLiveRecheck runs a rule that deletes after a notice.
// An untouched ConfigMap gets its notice Event at least notify_before
// before the delete, and none after. One relabelled after its notice is
// matched again from the start: a second notice, then the delete. One
// that a Pod mounts after its notice is not deleted.
func TestRuleNoticeAndLiveRecheck(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "act-notice")
	for _, name := range []string{"plain", "touched", "mounted"} {
		createConfigMap(t, ns, name, nil, nil)
	}
	dir := t.TempDir()
	writeRules(t, dir, fmt.Sprintf(actUnusedRule, ns))
	d := daemons.Start(t, "", "--dry-run=false", "--rules-dir", dir)
	d.WaitReady(t, 60*time.Second)

	eventually(t, 60*time.Second, func() error {
		for _, name := range []string{"touched", "mounted"} {
			if len(notices(t, ns, name)) == 0 {
				return fmt.Errorf("no notice on %s yet", name)
			}
		}
		return nil
	})
	if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "touched", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mounts"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "mounted"}}}}}}}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The relabelled one starts again: a second notice, then the delete.
	eventually(t, 90*time.Second, func() error {
		for _, name := range []string{"plain", "touched"} {
			if _, ok := deletedAt(t, d, ns, name); !ok {
				return fmt.Errorf("%s is not deleted yet", name)
			}
		}
		return nil
	})
	for _, name := range []string{"plain", "touched"} {
		at, ok := deletedAt(t, d, ns, name)
		evs := notices(t, ns, name)
		if !ok || len(evs) == 0 {
			t.Fatalf("%s: deleted %v, notices %d", name, ok, len(evs))
		}
		last := evs[len(evs)-1].FirstTimestamp.Time
		for _, ev := range evs {
			if ev.FirstTimestamp.After(at) {
				t.Errorf("%s: a notice at %v, after the delete at %v", name, ev.FirstTimestamp, at)
			}
			if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, "act-unused") {
				t.Errorf("%s: notice %q (%s), want a Warning naming the rule", name, ev.Message, ev.Type)
			}
		}
		// Events carry seconds: the delete comes notify_before after the
		// last notice, give or take that second.
		if at.Sub(last) < 5*time.Second {
			t.Errorf("%s: deleted at %v, %v after its last notice at %v; want 6s", name, at, at.Sub(last), last)
		}
		if name == "touched" && len(evs) < 2 {
			t.Errorf("touched: %d notices; a change after the first must start the match again", len(evs))
		}
	}
	if configMapExists(t, ns, "plain") || configMapExists(t, ns, "touched") {
		t.Error("a ConfigMap the audit says is deleted is still there")
	}
	if !configMapExists(t, ns, "mounted") {
		t.Fatal("the ConfigMap a Pod mounts after its notice was deleted")
	}
	if _, ok := deletedAt(t, d, ns, "mounted"); ok {
		t.Error("the audit has a delete of the mounted ConfigMap")
	}
}

// TestRuleCaps runs a rule that matches 30 ConfigMaps. Capped at 10 a
// pass, it deletes none and says so in /rules, the audit and the metric;
// capped at 50, all 30 go.
func TestRuleCaps(t *testing.T) {
	ns := namespaces.New(t, "act-cap")
	for i := range 30 {
		createConfigMap(t, ns, fmt.Sprintf("cap-%02d", i), nil, nil)
	}
	rule := func(maxCount int) string {
		return fmt.Sprintf(`rules:
- id: act-cap
  select: SELECT uid, 'named cap-' AS reason FROM objects WHERE namespace = :ns AND name LIKE 'cap-%%'
  params: {ns: %s}
  action: delete
  interval: 1s
  occurrences: 1
  limits: {max_count: %d}
`, ns, maxCount)
	}
	dir := t.TempDir()
	writeRules(t, dir, rule(10))
	d := daemons.Start(t, "", "--dry-run=false", "--rules-dir", dir)
	d.WaitReady(t, 60*time.Second)

	var capped string
	eventually(t, 60*time.Second, func() error {
		p := ruleInfo(t, d, "act-cap").LastPass
		if p == nil || p.Acted == nil || p.Acted.Capped == "" {
			return fmt.Errorf("last pass %+v", p)
		}
		capped = p.Acted.Capped
		return nil
	})
	if !strings.Contains(capped, "30 objects due, more than max_count 10") {
		t.Errorf("/rules says %q", capped)
	}
	if got := d.Metric(t, "kubegcd_rule_capped", "rule=act-cap"); got != 1 {
		t.Errorf("kubegcd_rule_capped = %v, want 1", got)
	}
	var list api.AuditList
	d.GetJSON(t, "/audit?controller=rules&rule=act-cap", http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].Outcome != api.OutcomeSkipped ||
		!strings.Contains(list.Items[0].Reason, "max_count 10") {
		t.Errorf("audit of the capped rule: %+v; want one skipped row with the reason", list.Items)
	}
	list2, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(list2.Items, "cap-"); n != 30 {
		t.Fatalf("%d of the 30 ConfigMaps left under the cap, want 30", n)
	}

	writeRules(t, dir, rule(50))
	eventually(t, 90*time.Second, func() error {
		list, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if n := countPrefix(list.Items, "cap-"); n > 0 {
			return fmt.Errorf("%d ConfigMaps left", n)
		}
		return nil
	})
	if got := d.Metric(t, "kubegcd_rule_capped", "rule=act-cap"); got != 0 {
		t.Errorf("kubegcd_rule_capped = %v after the cap was raised, want 0", got)
	}
}

func countPrefix(cms []corev1.ConfigMap, prefix string) int {
	n := 0
	for _, cm := range cms {
		if strings.HasPrefix(cm.Name, prefix) {
			n++
		}
	}
	return n
}

// actUndoRule deletes the objects of namespace ns labelled doomed.
const actUndoRule = `rules:
- id: act-undo
  description: %s
  select: |
    SELECT o.uid, 'doomed' AS reason FROM objects o JOIN labels l ON l.uid = o.uid AND l.key = 'doomed'
    WHERE o.namespace = :ns
  params: {ns: %s}
  action: delete
  occurrences: 1
  interval: 1s
`

// TestRuleUndo: a ConfigMap a rule deleted is restored by kubegcd restore
// with its data, labels and annotations; a Secret's data was not kept; a
// restore over a name taken is refused. The rule leaves the restored
// ConfigMap alone for three passes and more, and why says so; once the
// rule's text changes, it deletes it again.
func TestRuleUndo(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "act-undo")
	doomed := map[string]string{"doomed": "yes", "app": "web"}
	createConfigMap(t, ns, "keepsake", map[string]string{"example.com/note": "keep me"}, doomed)
	createConfigMap(t, ns, "taken", nil, doomed)
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token", Labels: doomed},
		Data:       map[string][]byte{"password": []byte("hunter2")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeRules(t, dir, fmt.Sprintf(actUndoRule, "first text", ns))
	d := daemons.Start(t, "", "--dry-run=false", "--rules-dir", dir,
		"--mirror-labels", "configmaps=[doomed],secrets=[doomed]")
	d.WaitReady(t, 60*time.Second)
	eventually(t, 60*time.Second, func() error {
		for _, name := range []string{"keepsake", "taken"} {
			if configMapExists(t, ns, name) {
				return fmt.Errorf("%s is still there", name)
			}
		}
		if _, err := kube.CoreV1().Secrets(ns).Get(ctx, "token", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Secret: %v", err)
		}
		return nil
	})

	// Restored with its data, labels and annotations.
	cliOK(t, d, []string{"ConfigMap " + ns + "/keepsake restored as uid "}, "restore", "configmap/keepsake", "-n", ns)
	restored, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "keepsake", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if restored.Data["key"] != "value of keepsake" || restored.Labels["app"] != "web" ||
		restored.Annotations["example.com/note"] != "keep me" {
		t.Errorf("restored %+v", restored.ObjectMeta)
	}
	// The Secret's copy holds no data.
	var list api.DeletedCopyList
	d.GetJSON(t, "/deleted-copies?kind=Secret&namespace="+ns, http.StatusOK, &list)
	if len(list.Items) != 1 || !list.Items[0].SecretDataDropped || list.Items[0].Rule != "act-undo" {
		t.Errorf("copies of the Secret: %+v; want one, by act-undo, without data", list.Items)
	}
	// A name taken again is not restored over.
	other := createConfigMap(t, ns, "taken", nil, nil)
	code, _, stderr := cliRun("restore", "configmap/taken", "-n", ns, "--server", d.ClientURL())
	if code == 0 || !strings.Contains(stderr, "exists (uid "+string(other.UID)+")") {
		t.Errorf("restore over a taken name: exit %d, %q", code, stderr)
	}

	// Spared for three passes and more, though it still matches.
	restoredAt := time.Now()
	eventually(t, 60*time.Second, func() error {
		p := ruleInfo(t, d, "act-undo").LastPass
		if p.StartedAt.Before(restoredAt.Add(4 * time.Second)) {
			return fmt.Errorf("last pass at %v", p.StartedAt)
		}
		if p.Acted == nil || p.Acted.Skipped["spared"] != 1 {
			return stopError{Err: fmt.Errorf("last pass acted %+v; want keepsake spared", p.Acted)}
		}
		return nil
	})
	if live, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "keepsake", metav1.GetOptions{}); err != nil ||
		live.UID != restored.UID {
		t.Fatalf("the restored ConfigMap went: %v", err)
	}
	cliOK(t, d, []string{"Restored:", "rule act-undo leaves it alone while its text hashes to"},
		"why", "configmap/keepsake", "-n", ns)

	// A rule whose text changed is another rule: it deletes it again.
	writeRules(t, dir, fmt.Sprintf(actUndoRule, "second text", ns))
	eventually(t, 60*time.Second, func() error {
		if configMapExists(t, ns, "keepsake") {
			return fmt.Errorf("keepsake is still there")
		}
		return nil
	})
}
