// Package e2eui drives the web UI in Debian's Chromium, headless, against
// kubegcd on a real etcd + kube-apiserver: what a person sees, clicks and
// types, checked in the browser, with a screenshot of every page.
package e2eui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegcd/kubegcd/internal/testcluster"
	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// chromiumPath is Debian's chromium; make chromium installs it.
const chromiumPath = "/usr/bin/chromium"

var (
	cluster *testcluster.Cluster
	kube    kubernetes.Interface
	// browser is one headless Chromium for the package; each test opens
	// its own tab.
	browser context.Context
	// shots is where the screenshots go: $KUBEGCD_SCREENSHOTS, else
	// test/e2eui/screenshots (git-ignored).
	shots string
	// daemons start kubegcd against the cluster and wait until it is ready.
	daemons e2eutil.DaemonOptions
	// namespaces make each test's namespaces.
	namespaces e2eutil.NamespaceOptions
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if _, err := os.Stat(chromiumPath); err != nil {
		fmt.Fprintf(os.Stderr, "e2eui: %s not found: run make chromium (or apt-get install chromium) to install Debian's Chromium\n", chromiumPath)
		return 1
	}
	shots = os.Getenv("KUBEGCD_SCREENSHOTS")
	if shots == "" {
		shots = "screenshots"
	}
	var err error
	if shots, err = filepath.Abs(shots); err == nil {
		err = os.MkdirAll(shots, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eui: screenshot directory:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Coordinated leader election on, so that the Leases page can show
	// LeaseCandidates.
	cluster, err = testcluster.Start(ctx, testcluster.Options{CoordinatedLeaderElection: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eui: starting the control plane:", err)
		return 1
	}
	defer cluster.Stop()
	kube = kubernetes.NewForConfigOrDie(cluster.Config)
	daemons = e2eutil.DaemonOptions{Kubeconfig: cluster.Kubeconfig, ReadyTimeout: 30 * time.Second}
	namespaces = e2eutil.NamespaceOptions{Kube: kube}

	profile, err := os.MkdirTemp("", "kubegcd-e2eui-chromium-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2eui:", err)
		return 1
	}
	defer os.RemoveAll(profile)
	// Without the background-networking flags Chromium reaches out to
	// Google's services, and in a closed network fails doing so.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	var cancelBrowser context.CancelFunc
	browser, cancelBrowser = chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Run(browser); err != nil {
		fmt.Fprintln(os.Stderr, "e2eui: starting Chromium:", err)
		return 1
	}
	code := m.Run()
	// Every answer the pages read went through a validating proxy: say
	// how many were checked against the API's OpenAPI document.
	fmt.Print(e2eutil.ContractCounts())
	return code
}
