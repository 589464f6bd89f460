package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, which make test installs for the
// browser tests.
const chromiumPath = "/usr/bin/chromium"

// checkStuckPage opens the UI's Stuck page in headless Chromium, as a
// newcomer does first, and waits stuckTimeout for it to list every
// seeded stuck deletion. Chromium keeps its profile and temporary files in
// profile. With $KUBEGCD_SCREENSHOTS set, the page is saved there as
// demo-stuck.png.
func checkStuckPage(ctx context.Context, d demo, profile string) error {
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromiumPath), chromedp.UserDataDir(profile),
		chromedp.Env("TMPDIR="+profile),
		chromedp.WindowSize(1280, 900), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true))
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelAlloc()
	defer cancelBrowser()
	// Chromium's start is not the page's: the deadline begins once the
	// browser runs.
	if err := chromedp.Run(browser); err != nil {
		return fmt.Errorf("starting Chromium: %w", err)
	}
	if err := chromedp.Run(browser, chromedp.Navigate(d.URL+"/#/stuck")); err != nil {
		return fmt.Errorf("opening the Stuck page: %w", err)
	}
	deadline := time.Now().Add(stuckTimeout)
	var text string
	for {
		if err := chromedp.Run(browser, chromedp.Evaluate(`document.querySelector('main') ? document.querySelector('main').innerText : document.body.innerText`, &text)); err != nil {
			return fmt.Errorf("reading the Stuck page: %w", err)
		}
		var missing []string
		for _, w := range seededStuck {
			if !strings.Contains(text, w[strings.LastIndex(w, "/")+1:]) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 && !strings.Contains(text, "Nothing is stuck.") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Stuck page lacks %v %s after the demo was up; it shows %.300q", missing, stuckTimeout, text)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	// The filter shows the threshold the demo's kubegcd applies, not the
	// default's.
	var placeholder string
	if err := chromedp.Run(browser, chromedp.Evaluate(`document.querySelector('input[name="minAge"]').placeholder`, &placeholder)); err != nil {
		return err
	}
	if placeholder != demoStuckAfter.String() {
		return fmt.Errorf("the Stuck page's minAge placeholder is %q, want the demo's --stuck-after %s", placeholder, demoStuckAfter)
	}
	if dir := os.Getenv("KUBEGCD_SCREENSHOTS"); dir != "" {
		var png []byte
		if err := chromedp.Run(browser, chromedp.FullScreenshot(&png, 100)); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "demo-stuck.png"), png, 0o644)
	}
	return nil
}
