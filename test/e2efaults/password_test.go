package e2efaults

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// TestServerPasswordNotLogged: with a password in the kubeconfig's server
// URL, client-go's throttling lines (which quote each request's URL) and
// every other line keep it out of the log, while kubegcd still works: it
// authenticates with the URL's user and password (basic auth, here to a
// proxy that takes them for the API server's token), or, beside a token
// of the kubeconfig's user, with that token.
//
// The ConfigMaps' owners never existed: each is checked live and deleted,
// far more requests than --kube-api-burst, so client-go waits on its rate
// limiter and says so.
//
// Neither parallel nor with parallel subtests: client-go's lines go to the
// daemon started last in the process, which must be the one looked at.
func TestServerPasswordNotLogged(t *testing.T) {
	const user, password = "kubeadmin", "Pw-LEAK-9f3k"
	withPassword := func(server string) string {
		return strings.Replace(server, "https://", "https://"+user+":"+password+"@", 1)
	}
	tests := []struct {
		name       string
		kubeconfig func(t *testing.T, token string) string
	}{
		{"basic auth", func(t *testing.T, token string) string {
			return kubeconfig(t, withPassword(basicAuthProxy(t, user, password, token)), "")
		}},
		{"beside a token", func(t *testing.T, token string) string {
			return kubeconfig(t, withPassword(cluster.Config.Host), token)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := namespaces.New(t, "password")
			const garbage = 150
			for i := range garbage {
				createCM(t, ns, fmt.Sprintf("gone-%d", i), ref(fmt.Sprintf("owner-%d", i), uuid.NewUUID()))
			}
			d := e2eutil.DaemonOptions{Kubeconfig: tt.kubeconfig(t, confinedToken(t, ns))}.Start(t, "", enforcing...)

			eventually(t, 3*time.Minute, func() error {
				if line := lineWith(d.Logs.String(), password); line != "" {
					return e2eutil.StopError{Err: fmt.Errorf("the password is in the log: %s", line)}
				}
				list, err := kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					return err
				}
				if n := len(list.Items); n > 0 {
					return fmt.Errorf("%d of %d ConfigMaps with absent owners not collected", n, garbage)
				}
				return nil
			})
			log := d.Logs.String()
			if !strings.Contains(log, "Waited before sending request") {
				t.Error("client-go never logged its throttling: the test proves nothing")
			}
			if line := lineWith(log, password); line != "" {
				t.Errorf("the password is in the log: %s", line)
			}
		})
	}
}

// lineWith returns the first line of log that holds s, or "".
func lineWith(log, s string) string {
	for line := range strings.Lines(log) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// basicAuthProxy serves the API server to the clients that give user and
// password as basic auth, forwarding their requests with token, as an
// authenticating proxy in front of a cluster does; it returns its URL.
func basicAuthProxy(t *testing.T, user, password, token string) string {
	t.Helper()
	target, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	forward.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // the test API server's own certificate
	var refused atomic.Int64
	proxy := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			refused.Add(1)
			http.Error(w, "basic auth wanted", http.StatusUnauthorized)
			return
		}
		r.Header.Set("Authorization", "Bearer "+token)
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		proxy.Close()
		if n := refused.Load(); n > 0 {
			t.Errorf("the proxy refused %d requests without the URL's user and password", n)
		}
	})
	return proxy.URL
}
