package e2eui

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestRestoreFromTheDeletedObjectsPage: a rule deletes a ConfigMap; its
// page says a copy was kept, shows it, and restores it after a
// confirmation naming it. The ConfigMap exists again with its data, the
// new object's page says where it came from and that the rule spares it,
// and the deleted object's page then says what it was restored as and
// offers no second restore. A page opened before the restore is refused,
// with the restore made linked.
func TestRestoreFromTheDeletedObjectsPage(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-restore")
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Labels: map[string]string{"app": "shop"}},
		Data:       map[string]string{"colour": "blue"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configMap(t, ns, "bystander")
	uid := string(cm.UID)
	dir := t.TempDir()
	rulesFile := `rules:
  - id: drop-settings
    description: The test's one ConfigMap, by namespace and name.
    select: SELECT uid, 'unwanted' AS reason FROM objects WHERE kind = 'ConfigMap' AND namespace = :ns AND name = :name
    params:
      ns: ` + ns + `
      name: settings
    interval: 1s
    occurrences: 1
    action: delete
`
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rulesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	// Only svgc, which nothing in this cluster gives work, beside the
	// rules: nothing else of the shared cluster is enforced on.
	d := daemons.Start(t, "", "--rules-dir="+dir, "--dry-run=false", "--leader-elect=false", "--controllers=svgc")
	e2eutil.Eventually(t, 60*time.Second, func() error {
		_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the ConfigMap is still there (%v)", err)
		}
		// The page tells a deleted object by the mirror's 404.
		if code, _, err := d.Get("/objects/" + uid); code != http.StatusNotFound {
			return fmt.Errorf("GET /objects/%s: %d %v, want the mirror to have let it go", uid, code, err)
		}
		return nil
	})

	// A second tab, opened before the restore, keeps offering it.
	late := openPage(t, d)
	late.expectNotFound("/objects/" + uid)
	late.expectNotFound("/graph?uid=" + uid)
	late.goTo("/objects/" + uid)
	late.waitJS(`!!document.getElementById('restore')`)

	p := openPage(t, d)
	p.expectNotFound("/objects/" + uid)
	p.expectNotFound("/graph?uid=" + uid)
	p.goTo("/objects/" + uid)
	p.waitJS(`!!document.getElementById('restore')`)
	if got, want := p.text("#copy-kept"), "A copy was kept when rule drop-settings deleted it"; !strings.HasPrefix(got, want) {
		t.Errorf("#copy-kept: %q, want it to start %q", got, want)
	}
	if n := p.count(`#copy-kept a[href="#/rules?rule=drop-settings"]`); n != 1 {
		t.Errorf("#copy-kept: %d links to the rule, want 1", n)
	}
	// View copy: the object as it was, with its data.
	p.run(chromedpClick("#copy-view summary"))
	p.waitJS(`!!document.querySelector('#copy-view pre.copy-json')`)
	if got := p.text("#copy-view pre.copy-json"); !strings.Contains(got, `"colour": "blue"`) || !strings.Contains(got, `"app": "shop"`) {
		t.Errorf("the copy shown lacks its data or label: %s", got)
	}
	p.shot("restore-page")
	p.shotOf("#copy-section", "restore")

	// Cancel restores nothing.
	p.run(chromedpClick("#restore"))
	p.waitJS(`!!document.querySelector('#restore-dialog[open]')`)
	if got, want := p.text("#restore-what"), "ConfigMap "+ns+"/settings"; got != want {
		t.Errorf("the confirmation names %q, want %q", got, want)
	}
	p.shot("restore-confirm")
	p.run(chromedpClick("#restore-cancel"))
	p.waitJS(`!document.getElementById('restore-dialog')`)
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after Cancel, the ConfigMap: %v, want it still deleted", err)
	}

	// A phone: the section and its confirmation fit the screen.
	p.phone()
	p.goTo("/objects/" + uid)
	p.waitJS(`!!document.getElementById('restore')`)
	p.run(chromedpClick("#copy-view summary"))
	p.waitJS(`!!document.querySelector('#copy-view pre.copy-json')`)
	var overflow int
	p.eval(fmt.Sprintf(`document.documentElement.scrollWidth - %d`, phoneWidth), &overflow)
	if overflow > 0 {
		t.Errorf("the deleted object's page on a phone: %d px wider than the screen", overflow)
	}
	p.shot("phone-restore")
	p.run(chromedpClick("#restore"))
	p.waitJS(`!!document.querySelector('#restore-dialog[open]')`)
	p.eval(`(() => { const r = document.getElementById('restore-dialog').getBoundingClientRect(); return Math.max(0, Math.ceil(r.right) - window.innerWidth, -Math.floor(r.left)); })()`, &overflow)
	if overflow > 0 {
		t.Errorf("the confirmation on a phone: %d px off the screen", overflow)
	}
	p.shot("phone-restore-confirm")
	p.run(chromedpClick("#restore-cancel"))
	p.waitJS(`!document.getElementById('restore-dialog')`)
	p.desktop()

	p.run(chromedpClick("#restore"))
	p.waitJS(`!!document.querySelector('#restore-dialog[open]')`)
	p.run(chromedpClick("#restore-confirm"))
	p.waitJS(`!!document.querySelector('#restored-link a')`)
	restored, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the restore: %v", err)
	}
	if restored.Data["colour"] != "blue" || restored.Labels["app"] != "shop" {
		t.Errorf("the restored ConfigMap: data %v, labels %v; want its data and labels back", restored.Data, restored.Labels)
	}
	newUID := string(restored.UID)
	var href string
	p.eval(`document.querySelector('#restored-link a').getAttribute('href')`, &href)
	if want := "#/objects/" + newUID; href != want {
		t.Errorf("the restored object's link: %q, want %q", href, want)
	}
	if n := p.count("#restore"); n != 0 {
		t.Error("the Restore button is still offered after the restore")
	}
	p.shot("restore-done")

	// The tab opened before: refused, the restore made linked.
	late.expectStatus(fmt.Sprintf("/objects/%s/restore", uid), http.StatusConflict)
	late.run(cdppage.BringToFront())
	late.run(chromedpClick("#restore"))
	late.waitJS(`!!document.querySelector('#restore-dialog[open]')`)
	late.run(chromedpClick("#restore-confirm"))
	late.waitJS(`!!document.getElementById('restore-refused')`)
	if got, want := late.text("#restore-refused"), "Refused: this copy was restored already."; got != want {
		t.Errorf("#restore-refused: %q, want %q", got, want)
	}
	if n := late.count(fmt.Sprintf(`#restored-as a[href="#/objects/%s"]`, newUID)); n != 1 {
		t.Errorf("after the refusal, %d links to the restored object, want 1", n)
	}
	if n := late.count("#restore"); n != 0 {
		t.Error("after the refusal, the Restore button is still offered")
	}
	late.shot("restore-refused")

	p.run(cdppage.BringToFront())

	// The new object, once mirrored and matched again: where it came
	// from, and the rule that spares it.
	e2eutil.Eventually(t, 30*time.Second, func() error {
		var det struct {
			RestoredFrom *api.Restoration `json:"restoredFrom"`
			Rules        []struct{ Rule string }
		}
		if code, _, err := d.Get("/objects/" + newUID); code != http.StatusOK {
			return fmt.Errorf("GET /objects/%s: %d %v", newUID, code, err)
		}
		d.GetJSON(t, "/objects/"+newUID, http.StatusOK, &det)
		if det.RestoredFrom == nil || len(det.Rules) == 0 {
			return fmt.Errorf("/objects/%s: restoredFrom %v, rules %v; want both", newUID, det.RestoredFrom, det.Rules)
		}
		return nil
	})
	p.run(chromedpClick("#restored-link a"))
	p.waitJS(fmt.Sprintf(`location.hash === '#/objects/%s' && !!document.querySelector('.view[data-loaded="true"] #restored-from')`, newUID))
	if got, want := p.text("#restored-from"), "Restored from "+uid+" (deleted by rule drop-settings"; !strings.HasPrefix(got, want) {
		t.Errorf("#restored-from: %q, want it to start %q", got, want)
	}
	if n := p.count(fmt.Sprintf(`#restored-from a[href="#/objects/%s"]`, uid)); n != 1 {
		t.Errorf("#restored-from: %d links to the deleted object, want 1", n)
	}
	if got := p.text(`#restored-from .spared[data-rule="drop-settings"]`); !strings.HasPrefix(got, "Rule drop-settings leaves it alone while its text is unchanged") {
		t.Errorf("the spared line: %q", got)
	}
	// The rule matches it still, and spares it.
	if n := p.count(`#object-rules .badge.spared`); n != 1 {
		t.Errorf("the cleanup rules that match it: %d marked spared, want 1", n)
	}
	p.shot("restored-object")

	// The deleted object's page again: restored as, and no second restore.
	p.goTo("/objects/" + uid)
	p.waitJS(`!!document.getElementById('restored-as')`)
	if got, want := p.text("#restored-as"), "Restored as ConfigMap "+ns+"/settings (uid "+newUID+") by "; !strings.HasPrefix(got, want) {
		t.Errorf("#restored-as: %q, want it to start %q", got, want)
	}
	if n := p.count("#restore"); n != 0 {
		t.Error("a restored copy is offered for a second restore")
	}

	p.phone()
	p.goTo("/objects/" + uid)
	p.eval(fmt.Sprintf(`document.documentElement.scrollWidth - %d`, phoneWidth), &overflow)
	if overflow > 0 {
		t.Errorf("the restored copy's page on a phone: %d px wider than the screen", overflow)
	}
	p.shot("phone-restored")
	p.desktop()
}

// TestRestoreASecretWithoutItsData: a Secret deleted by a rule without
// --keep-deleted-secrets: its page says the data was not kept, and the
// confirmation restores it only once told to create it without data.
func TestRestoreASecretWithoutItsData(t *testing.T) {
	ctx := context.Background()
	ns := namespaces.New(t, "ui-restore-secret")
	sec, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token", Labels: map[string]string{"app": "shop"}},
		StringData: map[string]string{"password": "s3cret"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(sec.UID)
	dir := t.TempDir()
	rulesFile := `rules:
  - id: drop-token
    select: SELECT uid, 'unwanted' AS reason FROM objects WHERE kind = 'Secret' AND namespace = :ns AND name = 'token'
    params:
      ns: ` + ns + `
    interval: 1s
    occurrences: 1
    action: delete
`
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), []byte(rulesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", "--rules-dir="+dir, "--dry-run=false", "--leader-elect=false", "--controllers=svgc")
	e2eutil.Eventually(t, 60*time.Second, func() error {
		if code, _, err := d.Get("/objects/" + uid); code != http.StatusNotFound {
			return fmt.Errorf("GET /objects/%s: %d %v, want the Secret deleted", uid, code, err)
		}
		return nil
	})
	p := openPage(t, d)
	p.expectNotFound("/objects/" + uid)
	p.expectNotFound("/graph?uid=" + uid)
	p.goTo("/objects/" + uid)
	p.waitJS(`!!document.getElementById('restore')`)
	if got, want := p.text("#copy-no-data"), " Its data was not kept: kubegcd ran without --keep-deleted-secrets."; got != want {
		t.Errorf("#copy-no-data: %q, want %q", got, want)
	}
	p.run(chromedpClick("#copy-view summary"))
	p.waitJS(`!!document.querySelector('#copy-view pre.copy-json')`)
	if got := p.text("#copy-view pre.copy-json"); strings.Contains(got, `"data"`) || !strings.Contains(got, `"app": "shop"`) {
		t.Errorf("the Secret's copy shown: %s; want its labels and no data", got)
	}
	p.run(chromedpClick("#restore"))
	p.waitJS(`!!document.querySelector('#restore-dialog[open]')`)
	var disabled bool
	p.eval(`document.getElementById('restore-confirm').disabled`, &disabled)
	if !disabled {
		t.Error("the confirmation restores a Secret without data before it is told to")
	}
	p.shot("restore-secret-confirm")
	p.run(chromedpClick("#restore-empty-secret"), chromedpClick("#restore-confirm"))
	p.waitJS(`!!document.querySelector('#restored-link a')`)
	if got := p.text("#restore-result"); !strings.Contains(got, "The Secret was created without data.") {
		t.Errorf("#restore-result: %q, want it to say the Secret has no data", got)
	}
	restored, err := kube.CoreV1().Secrets(ns).Get(ctx, "token", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the restore: %v", err)
	}
	if len(restored.Data) != 0 || restored.Labels["app"] != "shop" {
		t.Errorf("the restored Secret: %d data keys, labels %v; want no data and its labels", len(restored.Data), restored.Labels)
	}
	p.shot("restore-secret-done")
}
