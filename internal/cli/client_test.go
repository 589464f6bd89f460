package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// envOf is a lookupEnv over a map.
func envOf(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServerAndTokenResolution(t *testing.T) {
	tokenFile := writeTemp(t, "token", "from-file\n")
	tests := []struct {
		name                string
		flags               connFlags
		env                 map[string]string
		wantServer, wantTok string
	}{
		{"defaults", connFlags{}, nil, DefaultServer, ""},
		{"env", connFlags{}, map[string]string{envServer: "http://env:1", envToken: "from-env"}, "http://env:1", "from-env"},
		{"flags win over env", connFlags{server: "https://flag:2/", tokenFile: tokenFile},
			map[string]string{envServer: "http://env:1", envToken: "from-env"}, "https://flag:2", "from-file"},
		{"empty env is unset", connFlags{}, map[string]string{envServer: "", envToken: " "}, DefaultServer, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.flags.client(envOf(tt.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if c.Server != tt.wantServer || c.Token != tt.wantTok {
				t.Errorf("server %q token %q, want %q %q", c.Server, c.Token, tt.wantServer, tt.wantTok)
			}
		})
	}
}

func TestConnFlagErrors(t *testing.T) {
	empty := writeTemp(t, "empty", "\n")
	notPEM := writeTemp(t, "ca", "not a certificate")
	tests := []struct {
		name      string
		flags     connFlags
		env       map[string]string
		want      string
		wantUsage bool
	}{
		{"no scheme", connFlags{server: "127.0.0.1:8080"}, nil, `invalid --server "127.0.0.1:8080"`, true},
		{"bad env URL", connFlags{}, map[string]string{envServer: "ftp://x"}, `invalid $KUBEGCD_SERVER "ftp://x"`, true},
		{"empty token file", connFlags{tokenFile: empty}, nil, "the file is empty", false},
		{"missing token file", connFlags{tokenFile: empty + ".nope"}, nil, "--token-file: open", false},
		{"CA not PEM", connFlags{caFile: notPEM}, nil, "no PEM certificate", false},
		{"CA and insecure", connFlags{caFile: notPEM, insecure: true}, nil, "exclude each other", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.flags.client(envOf(tt.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one with %q", err, tt.want)
			}
			var ue *cmdline.UsageError
			if errors.As(err, &ue) != tt.wantUsage {
				t.Errorf("usage error = %v, want %v", errors.As(err, &ue), tt.wantUsage)
			}
		})
	}
}

// runCLI runs a client command as Main does, with env's variables only.
func runCLI(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{prog: "kubegcd", stdout: &out, stderr: &errb, lookupEnv: envOf(vars), now: time.Now}
	code = e.main(context.Background(), args)
	return code, out.String(), errb.String()
}

// statusServer answers /status as a kubegcd would, if the request carries
// the bearer token want (none when want is empty), else 401.
func statusServer(want string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if want != "" && r.Header.Get("Authorization") != "Bearer "+want {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error": "unauthorized"}`)
			return
		}
		_, _ = io.WriteString(w, `{"version": "v-test", "synced": true, "objects": 3, "resources": [], "controllers": []}`)
	}
}

func TestUnauthorized(t *testing.T) {
	srv := httptest.NewServer(statusServer("s3cret"))
	defer srv.Close()
	tests := []struct {
		name     string
		vars     map[string]string
		wantCode int
		want     string
	}{
		{"no token", map[string]string{envServer: srv.URL}, 1, "401 Unauthorized: the server wants a bearer token: give --token-file FILE or set $KUBEGCD_TOKEN"},
		{"wrong token", map[string]string{envServer: srv.URL, envToken: "wrong"}, 1, "401 Unauthorized: the server refused the bearer token"},
		{"right token", map[string]string{envServer: srv.URL, envToken: "s3cret"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.vars, "status")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.wantCode, stderr)
			}
			if tt.want == "" {
				if !strings.Contains(stdout, "kubegcd v-test") {
					t.Errorf("stdout %q lacks the status", stdout)
				}
				return
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q, want one line with %q", stderr, tt.want)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(statusServer(""))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	srv.StartTLS()
	defer srv.Close()
	ca := writeTemp(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	vars := map[string]string{envServer: srv.URL}

	code, _, stderr := runCLI(t, vars, "status")
	if code != 1 || !strings.Contains(stderr, "certificate") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("unknown CA: exit %d, stderr %q; want 1 and one line about the certificate", code, stderr)
	}
	code, stdout, stderr := runCLI(t, vars, "status", "--certificate-authority", ca)
	if code != 0 || !strings.Contains(stdout, "v-test") || stderr != "" {
		t.Errorf("--certificate-authority: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, vars, "status", "--insecure-skip-tls-verify")
	if code != 0 || !strings.Contains(stdout, "v-test") || !strings.Contains(stderr, "warning: --insecure-skip-tls-verify") {
		t.Errorf("--insecure-skip-tls-verify: exit %d, stdout %q, stderr %q; want 0 and a warning", code, stdout, stderr)
	}
}

func TestPasswordNotShown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	withPassword := strings.Replace(srv.URL, "http://", "http://admin:hunter2@", 1)
	for _, server := range []string{withPassword, "http://admin:hunter2@127.0.0.1:1"} {
		code, _, stderr := runCLI(t, map[string]string{envServer: server}, "status")
		if code != 1 || strings.Contains(stderr, "hunter2") || !strings.Contains(stderr, "admin:") {
			t.Errorf("exit %d, stderr %q; want 1 and the password hidden", code, stderr)
		}
	}
}

func TestAPIErrorMessage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "{\"error\": \"invalid kind \\\"nope\\\"\\nsecond line\"}\n")
	}))
	defer srv.Close()
	code, _, stderr := runCLI(t, map[string]string{envServer: srv.URL}, "get", "pending", "--kind", "nope")
	want := `kubegcd: GET ` + srv.URL + `/pending?kind=nope&limit=1000&order=oldest: 400 Bad Request: invalid kind "nope" second line` + "\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
}

// TestFollowsCursor pages through /audit and /pending as the API does,
// from a server whose pages are shorter than asked: rows up to --limit,
// the next cursor kept, one page passed through as it came.
func TestFollowsCursor(t *testing.T) {
	const rows, pageMax = 5, 2
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path+"?"+r.URL.RawQuery)
		before := rows + 1
		if c := r.URL.Query().Get("cursor"); c != "" {
			before, _ = strconv.Atoi(c)
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var items []string
		id := before - 1
		for ; id >= 1 && len(items) < min(limit, pageMax); id-- {
			items = append(items, fmt.Sprintf(`{"id": %d, "controller": "ownergc", "target": {"kind": "ConfigMap", "name": "cm-%d"}}`, id, id))
		}
		next := ""
		if id >= 1 {
			next = fmt.Sprintf(`, "next": "%d"`, id+1)
		}
		fmt.Fprintf(w, `{"items": [%s]%s}`, strings.Join(items, ", "), next)
	}))
	defer srv.Close()
	tests := []struct {
		limit     string
		wantIDs   []int
		wantNext  string
		wantAsked []string
	}{
		{"1", []int{5}, "5", []string{"limit=1"}},
		{"3", []int{5, 4, 3}, "3", []string{"limit=3", "cursor=4&limit=1"}},
		{"10", []int{5, 4, 3, 2, 1}, "", []string{"limit=10", "cursor=4&limit=8", "cursor=2&limit=6"}},
	}
	for _, tt := range tests {
		for _, list := range []string{"audit", "pending"} {
			t.Run(list+" limit "+tt.limit, func(t *testing.T) {
				asked = nil
				code, stdout, stderr := runCLI(t, map[string]string{envServer: srv.URL}, "get", list, "--limit", tt.limit, "-o", "json")
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				var got struct {
					Items []struct{ ID int }
					Next  string
				}
				if err := json.Unmarshal([]byte(stdout), &got); err != nil {
					t.Fatalf("%v: %s", err, stdout)
				}
				var ids []int
				for _, it := range got.Items {
					ids = append(ids, it.ID)
				}
				if diff := cmp.Diff(tt.wantIDs, ids); diff != "" {
					t.Errorf("ids (-want +got):\n%s", diff)
				}
				if got.Next != tt.wantNext {
					t.Errorf("next = %q, want %q", got.Next, tt.wantNext)
				}
				var wantAsked []string
				for _, q := range tt.wantAsked {
					if list == "pending" {
						q += "&order=oldest"
					}
					wantAsked = append(wantAsked, "/"+list+"?"+q)
				}
				if diff := cmp.Diff(wantAsked, asked); diff != "" {
					t.Errorf("queries (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestGetAuditFilters: get audit's --kind and --rule reach the API as its
// own kind and rule, unchanged.
func TestGetAuditFilters(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RawQuery)
		fmt.Fprint(w, `{"items": []}`)
	}))
	defer srv.Close()
	code, _, stderr := runCLI(t, map[string]string{envServer: srv.URL}, "get", "audit", "--kind", "deployments", "--rule", "BR-21-03", "-n", "shop")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Then, the list being empty, whether the mirror holds the namespace.
	if diff := cmp.Diff([]string{"kind=deployments&limit=100&namespace=shop&rule=BR-21-03"}, asked[:1]); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

// endless is an answer's body that never ends, counting what is read.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += int64(len(p))
	return len(p), nil
}

func (e *endless) Close() error { return nil }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestMaxAnswer: an answer larger than Client.MaxAnswer is an error; one
// that says its length is refused before a byte is read, one that does
// not is read no further than the cap.
func TestMaxAnswer(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name          string
		contentLength int64
		body          string // "": endless
		wantRead      int64  // at most
		wantErr       bool
	}{
		{"endless", -1, "", limit + 1, true},
		{"says it is larger", limit + 1, "", 0, true},
		{"at the cap", limit, `"` + strings.Repeat("a", limit-2) + `"`, limit, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &endless{}
			c := &Client{Server: "http://kubegcd.test", MaxAnswer: limit, HTTP: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp := &http.Response{StatusCode: http.StatusOK, ContentLength: tc.contentLength, Body: body, Request: r}
				if tc.body != "" {
					resp.Body = io.NopCloser(strings.NewReader(tc.body))
				}
				return resp, nil
			})}}
			answer, err := c.Get(context.Background(), "/objects", nil)
			if (err != nil) != tc.wantErr || body.read > tc.wantRead {
				t.Errorf("read %d bytes, err %v; want at most %d, error %v", body.read, err, tc.wantRead, tc.wantErr)
			}
			if err == nil && len(answer) != limit {
				t.Errorf("answer of %d bytes, want %d", len(answer), limit)
			}
			if err != nil && !strings.Contains(err.Error(), "larger than 1048576 bytes") {
				t.Errorf("error %q does not say the answer is too large", err)
			}
		})
	}
}
