package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestMetricsLabelsHostileClients: clients that send thousands of made-up
// methods, some of them 20 KB long with a foreign Host, to a daemon that
// wants a token, add no series to /metrics. Their requests are counted,
// under the method OTHER.
func TestMetricsLabelsHostileClients(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	e2eutil.WriteTouched(t, file, "m3trics,prometheus\n", time.Now().Add(-time.Hour))
	d := daemons.Start(t, "", "--auth-token-file", file)
	c := &http.Client{Timeout: 10 * time.Second}
	scrape := func() string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, d.URL+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer m3trics")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
		}
		return string(body)
	}
	requestLines := func(metrics string) int {
		return strings.Count(metrics, "\nkubegcd_http_request_duration_seconds_bucket{")
	}
	before := requestLines(scrape())

	// 3,000 pipelined requests on one connection, each with a method of
	// its own, then 100 with a 20 KB method and a Host not allowed.
	pipeline := func(n int, method func(i int) string, host string) {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(d.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
		go func() {
			w := bufio.NewWriter(conn)
			for i := range n {
				fmt.Fprintf(w, "%s /status HTTP/1.1\r\nHost: %s\r\n\r\n", method(i), host)
			}
			_ = w.Flush()
		}()
		br := bufio.NewReader(conn)
		for i := range n {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("response %d of %d: %v", i+1, n, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
				t.Fatalf("response %d: %d, want the request refused", i+1, resp.StatusCode)
			}
		}
	}
	pipeline(3000, func(i int) string { return fmt.Sprintf("M%05d", i) }, "127.0.0.1")
	long := strings.Repeat("X", 20<<10)
	pipeline(100, func(i int) string { return fmt.Sprintf("%s%03d", long, i) }, "evil.example")

	after := scrape()
	// At most a few new series (OTHER with 401 and 403 on an unmatched
	// or a served route) of 12 lines each.
	if grown := requestLines(after) - before; grown > 4*12 {
		t.Errorf("3,100 refused requests added %d bucket lines to /metrics, want at most %d", grown, 4*12)
	}
	if strings.Contains(after, `method="M0`) || strings.Contains(after, "XXXX") {
		t.Errorf("a method a client made up is a label value in /metrics")
	}
	if !strings.Contains(after, `method="OTHER"`) {
		t.Errorf("the refused requests are not counted under method OTHER")
	}
	if len(after) > 1<<20 {
		t.Errorf("/metrics is %d bytes", len(after))
	}
}
