package e2eui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUIAsksForTheToken: against a kubegcd with --auth-token-file, the UI
// loads, asks for a token once, and with it shows the overview; a wrong
// token is asked for again.
func TestUIAsksForTheToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("ui-s3cret,browser\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "", "--auth-token-file", file)
	p := newPage(t, d, true)
	p.waitJS(`!!document.querySelector('#token-dialog[open]')`)
	if msg := p.text("#token-dialog p"); !strings.Contains(msg, "Bearer") {
		t.Errorf("the dialog says %q, want the API's reason", msg)
	}
	p.shot("sign-in")
	// A wrong token: asked again.
	p.run(chromedp.SendKeys("#token-input", "wrong"), chromedp.Click("#token-submit"))
	p.waitJS(`!!document.querySelector('#token-dialog[open]') && document.querySelector('#token-input').value === ''`)
	p.run(chromedp.SendKeys("#token-input", "ui-s3cret"), chromedp.Click("#token-submit"))
	p.waitLoaded()
	if n := p.count("#token-dialog"); n != 0 {
		t.Errorf("%d sign-in dialogs left open", n)
	}
	// The token stays for the tab: another page needs no sign-in.
	p.goTo("/leases")
	if n := p.count("#token-dialog"); n != 0 {
		t.Error("asked for the token again")
	}
	p.goTo("/")
	p.shot("overview-signed-in")
	if !strings.Contains(d.Logs.String(), "caller=browser") {
		t.Error("the request log does not name the token's caller")
	}
}
