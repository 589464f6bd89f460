package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestStartupError: the start's last word names the request, the status
// code and the server's message, and says what to do: give an anonymous
// kubeconfig credentials, bind the shipped role to a user without rights,
// reach the address.
func TestStartupError(t *testing.T) {
	const host = "https://api.example:6443"
	namespaces := schema.GroupResource{Resource: "namespaces"}
	anonymous := &apierrors.StatusError{ErrStatus: apierrors.NewForbidden(schema.GroupResource{}, "", nil).ErrStatus}
	anonymous.ErrStatus.Message = `forbidden: User "system:anonymous" cannot get path "/api"`
	tests := []struct {
		name      string
		err       error
		anonymous bool // the kubeconfig carries no credentials
		want      string
	}{
		{name: "anonymous", err: &startupRequestError{"GET /api", anonymous},
			want: `the API server at https://api.example:6443 answered GET /api with 403 Forbidden until --startup-timeout 5s ran out ` +
				`(forbidden: User "system:anonymous" cannot get path "/api"): ` +
				`the kubeconfig authenticates as system:anonymous: give it a token or client certificate`},
		{name: "no credentials, refused", anonymous: true,
			err: &startupRequestError{"GET /api", apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("no"))},
			want: `the API server at https://api.example:6443 answered GET /api with 403 Forbidden until --startup-timeout 5s ran out ` +
				`(forbidden: no): the kubeconfig authenticates as system:anonymous: give it a token or client certificate`},
		{name: "anonymous requests refused", anonymous: true,
			err: &startupRequestError{"GET /version", apierrors.NewUnauthorized("Unauthorized")},
			want: `the API server at https://api.example:6443 answered GET /version with 401 Unauthorized until --startup-timeout 5s ran out ` +
				`(Unauthorized): the kubeconfig carries no credentials, and the API server refuses anonymous requests: ` +
				`give it a token or client certificate`},
		{name: "credentials refused",
			err: &startupRequestError{"GET /version", apierrors.NewUnauthorized("Unauthorized")},
			want: `the API server at https://api.example:6443 answered GET /version with 401 Unauthorized until --startup-timeout 5s ran out ` +
				`(Unauthorized): the API server does not accept the kubeconfig's credentials: renew its token or certificate`},
		{name: "forbidden",
			err: &startupRequestError{"GET /api/v1/namespaces?limit=1", apierrors.NewForbidden(namespaces, "",
				errors.New(`User "kubegcd" cannot list resource "namespaces" in API group "" at the cluster scope`))},
			want: `the API server at https://api.example:6443 answered GET /api/v1/namespaces?limit=1 with 403 Forbidden ` +
				`until --startup-timeout 5s ran out (namespaces is forbidden: User "kubegcd" cannot list resource "namespaces" ` +
				`in API group "" at the cluster scope): ` +
				`the kubeconfig's user lacks the rights kubegcd needs: bind them to it with deploy/clusterrole.yaml`},
		{name: "not ready: no hint",
			err: &startupRequestError{"GET /apis", apierrors.NewServiceUnavailable("the server is starting")},
			want: `the API server at https://api.example:6443 answered GET /apis with 503 Service Unavailable ` +
				`until --startup-timeout 5s ran out (the server is starting)`},
		{name: "unreachable",
			err:  &startupRequestError{"GET /version", errors.New("dial tcp 10.0.0.1:6443: connect: connection refused")},
			want: `cannot reach the API server at https://api.example:6443 within --startup-timeout 5s: GET /version: dial tcp 10.0.0.1:6443: connect: connection refused`},
		{name: "no answer in time",
			err:  &startupRequestError{"GET /version", context.DeadlineExceeded},
			want: `cannot reach the API server at https://api.example:6443 within --startup-timeout 5s: GET /version: context deadline exceeded`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := startupError(host, 5*time.Second, tc.anonymous, tc.err).Error()
			if got != tc.want {
				t.Errorf("startupError:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestHasCredentials: a kubeconfig without any credential is anonymous.
func TestHasCredentials(t *testing.T) {
	tests := []struct {
		name string
		cfg  rest.Config
		want bool
	}{
		{"none", rest.Config{Host: "https://h"}, false},
		{"insecure TLS is no credential", rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, false},
		{"token", rest.Config{BearerToken: "t"}, true},
		{"token file", rest.Config{BearerTokenFile: "/f"}, true},
		{"basic auth", rest.Config{Username: "u", Password: "p"}, true},
		{"client certificate", rest.Config{TLSClientConfig: rest.TLSClientConfig{CertFile: "/c", KeyFile: "/k"}}, true},
		{"client certificate data", rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: []byte("c")}}, true},
	}
	for _, tc := range tests {
		if got := hasCredentials(&tc.cfg); got != tc.want {
			t.Errorf("%s: hasCredentials = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWaitForServerGivesUpAtTheTimeout: an API server that answers
// /version but refuses discovery ends the wait at the timeout, with its
// refusal.
func TestWaitForServerGivesUpAtTheTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/version" {
			fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,`+
			`"message":"forbidden: User \"system:anonymous\" cannot get path \"%s\""}`, r.URL.Path)
	}))
	defer srv.Close()
	const timeout = 1500 * time.Millisecond
	start := time.Now()
	err := waitForServer(context.Background(), &rest.Config{Host: srv.URL}, timeout)
	took := time.Since(start)
	want := `answered GET /api with 403 Forbidden until --startup-timeout 1.5s ran out ` +
		`(forbidden: User "system:anonymous" cannot get path "/api"): the kubeconfig authenticates as system:anonymous`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("waitForServer: %v, want it to say %q", err, want)
	}
	if took < timeout || took > timeout+time.Second {
		t.Errorf("gave up after %s, want at the timeout %s", took, timeout)
	}
}

// TestWaitForServer: kubegcd retries an API server that does not answer
// yet, once a second, and gives up at the timeout with the server's last
// error, or at once when it is stopped.
func TestWaitForServer(t *testing.T) {
	tests := []struct {
		name     string
		failures int // answers of 503 before /version answers; -1: never
		timeout  time.Duration
		cancel   bool // stop kubegcd at the first request
		want     string
		wantErr  error
		minCalls int
	}{
		{name: "answers at once", timeout: time.Minute, minCalls: 1},
		{name: "answers at the second attempt", failures: 1, timeout: time.Minute, minCalls: 2},
		{name: "never answers", failures: -1, timeout: 1500 * time.Millisecond, minCalls: 2,
			want: "the API server at %s answered GET /version with 503 Service Unavailable until --startup-timeout 1.5s ran out " +
				"(the server is currently unable to handle the request)"},
		{name: "stopped", failures: -1, timeout: time.Minute, cancel: true, wantErr: context.Canceled, minCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(calls.Add(1))
				if tc.cancel {
					cancel()
				}
				if tc.failures < 0 || n <= tc.failures {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.0"}`)
			}))
			defer srv.Close()

			start := time.Now()
			err := waitForServer(ctx, &rest.Config{Host: srv.URL}, tc.timeout)
			took := time.Since(start)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("err = %v, want %v", err, tc.wantErr)
				}
			case tc.want != "":
				if want := fmt.Sprintf(tc.want, srv.URL); err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Errorf("err = %v, want %q", err, want)
				}
				if took < tc.timeout {
					t.Errorf("gave up after %s, before the timeout", took)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			}
			if tc.want == "" && took >= tc.timeout {
				t.Errorf("returned after %s, not before the timeout %s", took, tc.timeout)
			}
			if n := int(calls.Load()); n < tc.minCalls {
				t.Errorf("%d requests, want at least %d", n, tc.minCalls)
			}
		})
	}
}
