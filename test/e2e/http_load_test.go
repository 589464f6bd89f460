package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestAPILoadLeavesCollectionAlone keeps 32 clients asking for the whole
// graph and lint report, far more than --max-requests-inflight, while
// garbage appears: the requests beyond the limit get a 429 with
// Retry-After at once (never a 5xx, never a hang), health checks stay
// answered, and the collector, whose reads have connections of their own,
// deletes the garbage as it does when nobody asks.
func TestAPILoadLeavesCollectionAlone(t *testing.T) {
	ns := namespaces.New(t, "api-load")
	leaveNoGarbage(t, ns)
	d := daemons.Start(t, "", enforcing("--max-requests-inflight=4")...)
	d.WaitReady(t, time.Minute)

	ctx, stop := context.WithCancel(context.Background())
	// Each answer, a 429 included, is checked against the API's document.
	client := e2eutil.ValidatingClient(t, nil)
	var served, refused, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths := []string{"/graph", "/lint", "/graph?format=dot", "/stuck?minAge=0"}
			for n := 0; ctx.Err() == nil; n++ {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL+paths[(i+n)%len(paths)], nil)
				if err != nil {
					failed.Add(1)
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK:
					served.Add(1)
				case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "":
					refused.Add(1)
				default:
					t.Errorf("GET %s: %s", req.URL.Path, resp.Status)
					failed.Add(1)
				}
			}
		}()
	}
	defer func() {
		stop()
		wg.Wait()
	}()

	// Health checks pass the limit.
	for range 20 {
		if code, body, err := d.Get("/healthz"); err != nil || code != http.StatusOK {
			t.Fatalf("/healthz under load: %d %s %v", code, body, err)
		}
	}
	uids := garbage(t, ns, 20)
	took := eventually(t, time.Minute, func() error {
		if n := remaining(t, ns, uids); n > 0 {
			return fmt.Errorf("%d of %d garbage objects left", n, len(uids))
		}
		return nil
	})
	stop()
	wg.Wait()
	t.Logf("garbage collected in %v under load: %d requests served, %d refused with 429, %d failed",
		took.Round(time.Millisecond), served.Load(), refused.Load(), failed.Load())
	if refused.Load() == 0 || served.Load() == 0 || failed.Load() > 0 {
		t.Errorf("served %d, refused %d, failed %d: want some served, some refused, none failed",
			served.Load(), refused.Load(), failed.Load())
	}
}
