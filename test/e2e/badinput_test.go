package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Query strings the daemon cannot read, kinds that cannot name one and
// apiVersions Kubernetes could not serve are 400s naming the problem, on
// the wire as the daemon serves them; well-formed filters still filter.
func TestMalformedQueriesAreRefused(t *testing.T) {
	t.Parallel()
	ns := namespaces.New(t, "badinput")
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := daemons.Start(t, "")
	d.WaitReady(t, 60*time.Second)
	found := func() int {
		var out struct{ Items []struct{ Name string } }
		d.GetJSON(t, "/objects?kind=ConfigMap&apiVersion=v1&namespace="+ns+"&name=kept", http.StatusOK, &out)
		return len(out.Items)
	}
	eventually(t, 30*time.Second, func() error {
		if n := found(); n != 1 {
			return fmt.Errorf("/objects finds %d ConfigMaps %s/kept, want 1", n, ns)
		}
		return nil
	})

	for _, tc := range []struct {
		path string // sent as is
		want string // in the error
	}{
		{"/pending?limit=5;drop", "malformed query string: invalid semicolon separator in query"},
		{"/audit?controller=%zz", `malformed query string: invalid URL escape "%zz"`},
		{"/status?%zz", `malformed query string: invalid URL escape "%zz"`},
		{"/stuck?kind='", `invalid kind "'"`},
		{"/objects?kind=ConfigMap&apiVersion=junk", `invalid apiVersion "junk"`},
		{"/objects?kind=ConfigMap&apiVersion=apps/V1", `invalid apiVersion "apps/V1"`},
	} {
		code, body, err := d.Get(tc.path)
		var e struct{ Error string }
		if err != nil || code != http.StatusBadRequest || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, tc.want) {
			t.Errorf("GET %s: %d %.200s %v; want a 400 saying %s", tc.path, code, body, err, tc.want)
		}
	}
	// Well formed and naming nothing held: empty, on every endpoint alike.
	for _, path := range []string{"/pending?kind=Widgetless", "/audit?kind=Widgetless", "/stuck?kind=Widgetless&minAge=0",
		"/objects?kind=Widgetless", "/objects?kind=ConfigMap&apiVersion=example.com/v1&namespace=" + ns} {
		var out struct{ Items []json.RawMessage }
		d.GetJSON(t, path, http.StatusOK, &out)
		if len(out.Items) != 0 {
			t.Errorf("GET %s: %d items, want none", path, len(out.Items))
		}
	}
}

// The release takes one JSON object, and its audit row keeps a bounded
// account of who asked, whatever User-Agent the client sends.
func TestReleaseRefusesTrailingDataAndBoundsWhoAsked(t *testing.T) {
	ns := namespaces.New(t, "badrelease")
	leaveNoGarbage(t, ns)
	d := daemons.Start(t, "", enforcing("--max-deletions-per-minute=1", "--blast-radius-resume=manual")...)
	d.WaitReady(t, 60*time.Second)
	uids := garbage(t, ns, 2)
	waitCapPaused(t, d, ns, 1, func() int { return remaining(t, ns, uids) })

	post := func(body, userAgent string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, d.URL+"/enforcement/release", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", userAgent)
		resp, err := d.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(`{"reason":"x"}{"reason":"y"}`, "e2e"); code != http.StatusBadRequest ||
		!strings.Contains(body, "data after the JSON object") {
		t.Fatalf("release with two objects: %d %s, want a 400", code, body)
	}
	if st := enforcementOf(t, d); !st.Paused {
		t.Fatalf("a refused release released: %+v", st)
	}

	userAgent := "e2e-" + strings.Repeat("ü", 16<<10) // 32 KB
	if code, body := post(`{"reason":"e2e: bounded"}`+"\n", userAgent); code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	var page auditPage
	d.GetJSON(t, "/audit?controller=operator", http.StatusOK, &page)
	if len(page.Items) != 1 || page.Items[0].Reason != "e2e: bounded" {
		t.Fatalf("release in /audit: %+v", page.Items)
	}
	var facts struct{ By string }
	if err := json.Unmarshal(page.Items[0].Facts, &facts); err != nil {
		t.Fatal(err)
	}
	_, ua, _ := strings.Cut(facts.By, " (")
	if !strings.HasPrefix(facts.By, "127.0.0.1:") || len(ua) > 256+len(")") || !strings.HasPrefix(ua, "e2e-ü") ||
		!strings.HasSuffix(ua, "…)") {
		t.Errorf("release row's by = %.120q… (%d bytes), want the address and the User-Agent cut to 256 bytes", facts.By, len(facts.By))
	}
}
