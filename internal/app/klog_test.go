package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// client-go's klog lines go to the daemon started last; switching daemons
// while client-go logs is no data race (go test -race).
func TestKlogFollowsTheRunningDaemon(t *testing.T) {
	var first, second bytes.Buffer
	routeKlog(slog.New(slog.NewTextHandler(&first, nil)))
	klog.Background().Info("to the first")
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			klog.Background().V(0).Info("while switching")
		}
	})
	var mu sync.Mutex
	var sink bytes.Buffer
	for range 100 {
		routeKlog(slog.New(slog.NewTextHandler(lockedWriter{&mu, &sink}, nil)))
	}
	wg.Wait()
	routeKlog(slog.New(slog.NewTextHandler(&second, nil)))
	klog.Background().Info("to the second")
	if !strings.Contains(first.String(), "to the first") || strings.Contains(first.String(), "to the second") {
		t.Errorf("first daemon's log: %q", first.String())
	}
	if !strings.Contains(second.String(), "to the second") {
		t.Errorf("second daemon's log: %q", second.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestKlogHidesURLPasswords: a password in the user info of a URL that
// client-go logs (its throttling line quotes the request's URL) reaches
// the daemon's log as xxxxx, whatever carries it: the message, a string,
// a *url.URL, an error, a value bound with WithValues, a group.
func TestKlogHidesURLPasswords(t *testing.T) {
	const password = "Pw-LEAK-9f3k"
	u, err := url.Parse("https://kubeadmin:" + password + "@127.0.0.1:6443/api/v1/namespaces/ns/configmaps/gone")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		log  func(klog.Logger)
	}{
		{"the throttling line", func(l klog.Logger) {
			l.Info("Waited before sending request", "delay", time.Second, "verb", "GET", "URL", u)
		}},
		{"a url.URL value", func(l klog.Logger) { l.Info("request", "URL", *u) }},
		{"a string", func(l klog.Logger) { l.Info("request", "url", u.String()) }},
		{"the message", func(l klog.Logger) { l.Info("GET " + u.String() + " failed") }},
		{"an error", func(l klog.Logger) { l.Error(errors.New("Get \""+u.String()+"\": EOF"), "request failed") }},
		{"WithValues", func(l klog.Logger) { l.WithValues("server", u.String()).Info("connecting") }},
		{"a group", func(l klog.Logger) { l.WithName("reflector").WithValues("server", u.String()).V(1).Info("watch") }},
		{"a password with an @", func(l klog.Logger) { l.Info("request", "url", "https://kubeadmin:p@ss@host/x") }},
	}
	for _, format := range []string{logFormatText, logFormatJSON} {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				var out bytes.Buffer
				routeKlog(newLogger(&out, slog.LevelDebug, format).With("source", "client-go"))
				t.Cleanup(func() { routeKlog(slog.Default()) })
				tt.log(klog.Background())
				got := out.String()
				if got == "" {
					t.Fatal("nothing logged")
				}
				for _, secret := range []string{password, "p@ss"} {
					if strings.Contains(got, secret) {
						t.Errorf("the password is in the log: %s", got)
					}
				}
				if !strings.Contains(got, "kubeadmin:xxxxx@") {
					t.Errorf("no kubeadmin:xxxxx@ in the log: %s", got)
				}
			})
		}
	}
}

// TestRedactURLPasswords: only the password of a URL's user info is
// hidden; ports, e-mail addresses and URLs without one stay as they are.
func TestRedactURLPasswords(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://u:p@h:6443/x", "https://u:xxxxx@h:6443/x"},
		{"https://u:p@ss@h/x?a=b@c", "https://u:xxxxx@h/x?a=b@c"},
		{`Get "https://u:p@h/x": EOF, then https://v:q@k`, `Get "https://u:xxxxx@h/x": EOF, then https://v:xxxxx@k`},
		{"https://u:p@h1,https://v:q@h2", "https://u:xxxxx@h1,https://v:xxxxx@h2"},
		{"https://u@h:6443/x", "https://u@h:6443/x"},
		{"https://h:6443/x", "https://h:6443/x"},
		{"https://h:6443 mail a@b", "https://h:6443 mail a@b"},
		{"user:pw@host without a scheme", "user:pw@host without a scheme"},
	}
	for _, tt := range tests {
		if got := redactURLPasswords(tt.in); got != tt.want {
			t.Errorf("redactURLPasswords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestOnceWarnings: each warning of the API server is logged once.
func TestOnceWarnings(t *testing.T) {
	var out strings.Builder
	w := &onceWarnings{logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))}
	for _, h := range []struct {
		code int
		text string
	}{
		{299, "coordination.k8s.io/v1beta1 LeaseCandidate is deprecated"},
		{299, "coordination.k8s.io/v1beta1 LeaseCandidate is deprecated"},
		{299, "another"},
		{199, "not a warning"},
		{299, ""},
	} {
		w.HandleWarningHeaderWithContext(context.Background(), h.code, "", h.text)
	}
	want := `level=INFO msg="the API server warns (said once)" warning="coordination.k8s.io/v1beta1 LeaseCandidate is deprecated"
level=INFO msg="the API server warns (said once)" warning=another
`
	if out.String() != want {
		t.Errorf("logged:\n%s\nwant:\n%s", out.String(), want)
	}
}
