package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// startupRequests are what kubegcd cannot start without, tried in this
// order at each attempt: the API server answers (/version, which even
// anonymous requests may read), discovery answers (the ingester's first
// requests), and a list answers (the ingester lists every resource).
var startupRequests = []struct{ path, query string }{
	{path: "/version"},
	{path: "/api"},
	{path: "/apis"},
	{path: "/api/v1/namespaces", query: "limit=1"},
}

// startupAttempt is the time one attempt may take at most.
const startupAttempt = 5 * time.Second

// waitForServer waits until the API server answers every startup request,
// retrying every second so that a daemon started alongside its cluster
// does not fail needlessly. It gives up at timeout, saying which request
// failed, how, and what to do (see startupError).
func waitForServer(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	probe := rest.CopyConfig(cfg)
	probe.Timeout = startupAttempt
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return fmt.Errorf("API server %s: %w", cfg.Host, err)
	}
	deadline, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		err := tryStartupRequests(deadline, dc.RESTClient())
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case last == nil || deadline.Err() == nil:
			// An attempt the deadline cut short says less than the one
			// before it: the API server's answer, not the deadline.
			last = err
		}
		select {
		case <-deadline.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return startupError(cfg.Host, timeout, !hasCredentials(cfg), last)
		case <-time.After(time.Second):
		}
	}
}

// startupRequestError is a startup request that failed.
type startupRequestError struct {
	request string // "GET /api"
	err     error
}

func (e *startupRequestError) Error() string { return e.request + ": " + e.err.Error() }
func (e *startupRequestError) Unwrap() error { return e.err }

// tryStartupRequests sends each startup request once, and returns the
// first failure.
func tryStartupRequests(ctx context.Context, client rest.Interface) error {
	for _, r := range startupRequests {
		req := client.Get().AbsPath(r.path)
		request := "GET " + r.path
		if r.query != "" {
			name, value, _ := strings.Cut(r.query, "=")
			req = req.Param(name, value)
			request += "?" + r.query
		}
		if err := req.Do(ctx).Error(); err != nil {
			return &startupRequestError{request: request, err: err}
		}
	}
	return nil
}

// startupError says why the start gave up: the API server at host could
// not be reached, or refused a request until timeout, with its status
// code and a hint. anonymous is true when the kubeconfig carries no
// credentials.
func startupError(host string, timeout time.Duration, anonymous bool, err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return fmt.Errorf("cannot reach the API server at %s within --startup-timeout %s: %w",
			host, timeout, err)
	}
	s := status.Status()
	request := "a request"
	if re := (*startupRequestError)(nil); errors.As(err, &re) {
		request = re.request
	}
	msg := fmt.Sprintf("the API server at %s answered %s with %d %s until --startup-timeout %s ran out",
		host, request, s.Code, http.StatusText(int(s.Code)), timeout)
	if s.Message != "" {
		msg += " (" + s.Message + ")"
	}
	if hint := startupHint(int(s.Code), s.Message, anonymous); hint != "" {
		msg += ": " + hint
	}
	return errors.New(msg)
}

// startupHint says what to do about a refusal at start with status code
// and message; anonymous is true when the kubeconfig carries no
// credentials.
func startupHint(code int, message string, anonymous bool) string {
	anonymous = anonymous || strings.Contains(message, `"system:anonymous"`)
	switch {
	case code == http.StatusForbidden && anonymous:
		return "the kubeconfig authenticates as system:anonymous: give it a token or client certificate"
	case code == http.StatusUnauthorized && anonymous:
		return "the kubeconfig carries no credentials, and the API server refuses anonymous requests: " +
			"give it a token or client certificate"
	case code == http.StatusUnauthorized:
		return "the API server does not accept the kubeconfig's credentials: renew its token or certificate"
	case code == http.StatusForbidden:
		return "the kubeconfig's user lacks the rights kubegcd needs: " +
			"bind them to it with deploy/clusterrole.yaml"
	}
	return ""
}

// hasCredentials says whether cfg authenticates its requests: without
// credentials, the API server takes them for system:anonymous.
func hasCredentials(cfg *rest.Config) bool {
	return cfg.BearerToken != "" || cfg.BearerTokenFile != "" || cfg.Username != "" || cfg.Password != "" ||
		len(cfg.CertData) > 0 || cfg.CertFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil
}
