package e2eui

import (
	"context"
	"encoding/csv"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

const (
	desktopWidth, desktopHeight = 1280, 900
	phoneWidth, phoneHeight     = 390, 844
	pageTimeout                 = 20 * time.Second
)

// page is one browser tab on the daemon's UI. Every console error or
// warning, uncaught exception and failed resource load the tab reports
// fails the test.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	problems []string
	// failures are the paths whose answer of a status the test expects,
	// such as a 404: the browser logs it as a failed load, which is not a
	// fault then.
	failures []expectedFailure
	// unauthorized: the test expects 401s (the API wants a token the page
	// has yet to ask for).
	unauthorized bool
}

func openPage(t *testing.T, d *e2eutil.Daemon) *page {
	t.Helper()
	p := newPage(t, d, false)
	p.waitLoaded()
	return p
}

// newPage opens a tab on the UI without waiting for its page: unauthorized
// says that 401s are expected.
func newPage(t *testing.T, d *e2eutil.Daemon, unauthorized bool) *page {
	t.Helper()
	// The page reaches the daemon through a proxy that validates every
	// answer the UI reads against the API's OpenAPI document. Started
	// first, the proxy stops after the tab.
	base := d.ClientURL()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx, base: base, unauthorized: unauthorized}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning || ev.Type == runtime.APITypeAssert {
				var args []string
				for _, a := range ev.Args {
					if a.Value != nil {
						args = append(args, string(a.Value))
					} else {
						args = append(args, a.Description)
					}
				}
				p.problem("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			p.problem("uncaught exception: %s", ev.ExceptionDetails.Error())
		case *cdplog.EventEntryAdded:
			if p.expected404(ev.Entry) {
				return
			}
			if ev.Entry.Level == cdplog.LevelError || ev.Entry.Level == cdplog.LevelWarning {
				p.problem("browser %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
			}
		}
	})
	// Registered after cancel, so run before it: the tab is still open.
	t.Cleanup(func() {
		if t.Failed() {
			var png []byte
			if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err == nil {
				_ = os.WriteFile(filepath.Join(shots, "FAILED-"+strings.ReplaceAll(t.Name(), "/", "_")+".png"), png, 0o644)
			}
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, pr := range p.problems {
			t.Errorf("browser console: %s", pr)
		}
	})
	// The first Run opens the tab, which lives as long as the context of
	// that Run: no timeout on it.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	p.run(cdplog.Enable(), chromedp.EmulateViewport(desktopWidth, desktopHeight), chromedp.Navigate(base+"/"))
	return p
}

// expectedFailure is an answer of status to a URL starting with path (and
// query) that a test expects.
type expectedFailure struct {
	path   string
	status int
}

// expectNotFound tells the page that a 404 for a URL starting with path
// (and query) is what the test wants.
func (p *page) expectNotFound(path string) {
	p.expectStatus(path, http.StatusNotFound)
}

// expectStatus tells the page that an answer of status (4xx or 5xx) for a
// URL starting with path (and query) is what the test wants.
func (p *page) expectStatus(path string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures = append(p.failures, expectedFailure{path: path, status: status})
}

func (p *page) expected404(e *cdplog.Entry) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unauthorized && e.Source == cdplog.SourceNetwork && strings.Contains(e.Text, "401") {
		return true
	}
	if e.Source != cdplog.SourceNetwork {
		return false
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		return false
	}
	for _, f := range p.failures {
		if strings.Contains(e.Text, strconv.Itoa(f.status)) && strings.HasPrefix(u.RequestURI(), f.path) {
			return true
		}
	}
	return false
}

func (p *page) problem(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *page) run(actions ...chromedp.Action) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression into v.
func (p *page) eval(js string, v any, opts ...chromedp.EvaluateOption) {
	p.t.Helper()
	p.run(chromedp.Evaluate(js, v, opts...))
}

// goTo opens a route (the part after #) and waits until its page has
// rendered.
func (p *page) goTo(route string) {
	p.t.Helper()
	// A route equal to the current one would not fire hashchange.
	p.eval(fmt.Sprintf(`(() => { const m = document.querySelector('.view'); if (m) delete m.dataset.loaded;
		const want = %q; if (location.hash === want) { window.dispatchEvent(new HashChangeEvent('hashchange')); } else { location.hash = want; } return true; })()`, "#"+route), nil)
	p.waitLoaded()
}

// waitLoaded waits until the current route's page has rendered.
func (p *page) waitLoaded() {
	p.t.Helper()
	p.waitJS(`!!document.querySelector('.view[data-loaded="true"]')`)
}

// waitJS waits until a JavaScript expression is true.
func (p *page) waitJS(js string) time.Duration {
	p.t.Helper()
	return e2eutil.Eventually(p.t, pageTimeout, func() error {
		var ok bool
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		if err := chromedp.Run(ctx, chromedp.Evaluate(js, &ok)); err != nil {
			return e2eutil.StopError{Err: err}
		}
		if !ok {
			return fmt.Errorf("not yet: %s", js)
		}
		return nil
	})
}

// text returns the text of the first element matching a CSS selector.
func (p *page) text(sel string) string {
	p.t.Helper()
	var s string
	p.eval(fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ''`, sel), &s)
	return s
}

// count returns how many elements match a CSS selector.
func (p *page) count(sel string) int {
	p.t.Helper()
	var n int
	p.eval(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
	return n
}

// shot writes a full-page screenshot to the screenshot directory.
func (p *page) shot(name string) {
	p.t.Helper()
	var png []byte
	// Quality 100 is a PNG.
	p.run(chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// phone switches the tab to a phone's viewport until the test ends or
// desktop is called.
func (p *page) phone() {
	p.t.Helper()
	p.run(chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateMobile))
}

func (p *page) desktop() {
	p.t.Helper()
	p.run(chromedp.EmulateViewport(desktopWidth, desktopHeight))
}

// waitItems waits until a list of the API (/pending, /stuck, /audit and
// the like) answers path with n items: decisions made, deletions mirrored.
func waitItems(t *testing.T, d *e2eutil.Daemon, timeout time.Duration, path string, n int) {
	t.Helper()
	e2eutil.Eventually(t, timeout, func() error {
		var out struct{ Items []struct{} }
		d.GetJSON(t, path, 200, &out)
		if len(out.Items) != n {
			return fmt.Errorf("GET %s: %d items, want %d", path, len(out.Items), n)
		}
		return nil
	})
}

// downloadCSV clicks the page's CSV download and returns the rows of the
// file it saves in dir, the one file there whose name matches pattern.
func (p *page) downloadCSV(dir, pattern string) [][]string {
	p.t.Helper()
	p.run(chromedpClick("#download-csv"))
	var rows [][]string
	e2eutil.Eventually(p.t, pageTimeout, func() error {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil || len(files) != 1 {
			return fmt.Errorf("downloaded files %v %v", files, err)
		}
		// Chromium makes the file empty under its final name, writes a
		// .crdownload beside it, then moves that over it.
		if partial, _ := filepath.Glob(filepath.Join(dir, "*.crdownload")); len(partial) > 0 {
			return fmt.Errorf("the download is under way: %v", partial)
		}
		f, err := os.Open(files[0])
		if err != nil {
			return err
		}
		defer f.Close()
		rows, err = csv.NewReader(f).ReadAll()
		if err == nil && len(rows) == 0 {
			return fmt.Errorf("%s is empty so far", files[0])
		}
		return err
	})
	return rows
}

// configMap creates a ConfigMap with the given owners.
func configMap(t *testing.T, ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// ownerRef references cm; controller and block set those flags.
func ownerRef(cm *corev1.ConfigMap, controller, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID,
		Controller: &controller, BlockOwnerDeletion: &block}
}

// danglingRef references a ConfigMap that does not exist.
func danglingRef(name string) metav1.OwnerReference {
	h := fnv.New64a()
	h.Write([]byte(name))
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-0000-%016x", h.Sum64()))}
}

func chromedpSendKeys(sel, keys string) chromedp.Action {
	return chromedp.SendKeys(sel, keys, chromedp.ByQuery)
}

func chromedpClick(sel string) chromedp.Action {
	return chromedp.Click(sel, chromedp.ByQuery)
}

func newOwned(ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners}}
}

// shotOf writes a screenshot of the first element matching a CSS selector:
// a graph above a page of tables.
func (p *page) shotOf(sel, name string) {
	p.t.Helper()
	var png []byte
	p.run(chromedp.Screenshot(sel, &png, chromedp.ByQuery))
	if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}
