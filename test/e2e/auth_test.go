package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/test/e2eutil"
)

// call GETs url with client, and a bearer token when not empty.
func call(t *testing.T, client *http.Client, url, token string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: %d, not JSON: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode, resp.Header, body
}

// TestAPIBearerTokens: with --auth-token-file every path but the health
// checks wants a token of the file; the file is re-read when it changes;
// the CLI sends one from --token-file and says what a 401 means.
func TestAPIBearerTokens(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	e2eutil.WriteTouched(t, file, "# operators\ns3cret-a,alice\nt0ken-b\n", time.Now().Add(-time.Hour))
	d := daemons.Start(t, "", "--auth-token-file", file)
	c := e2eutil.ValidatingClient(t, &http.Client{Timeout: 10 * time.Second})

	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _, _ := call(t, c, d.URL+p, ""); code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Errorf("%s without a token: %d, want it answered", p, code)
		}
	}
	// The UI's files load without a token (they hold no data; the page
	// then asks for one).
	if resp, err := c.Get(d.URL + "/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the UI page without a token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, p := range []string{"/status", "/graph", "/metrics", "/objects/x", "/api/no-such"} {
		code, h, body := call(t, c, d.URL+p, "")
		if code != http.StatusUnauthorized || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") || body["error"] == "" {
			t.Errorf("%s without a token: %d %v %v, want a 401 JSON error with WWW-Authenticate", p, code, h, body)
		}
	}
	if code, _, body := call(t, c, d.URL+"/status", "wrong"); code != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(body["error"]), "not valid") {
		t.Errorf("a wrong token: %d %v", code, body)
	}
	for _, token := range []string{"s3cret-a", "t0ken-b"} {
		code, _, body := call(t, c, d.URL+"/status", token)
		if code != http.StatusOK || body["authentication"] != "token" {
			t.Errorf("token %s: %d %v, want 200 and authentication token", token, code, body["authentication"])
		}
	}
	// The request log names the caller.
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(d.Logs.String(), "caller=alice") {
			return fmt.Errorf("no request logged with caller=alice")
		}
		return nil
	})

	// The CLI: without a token, one line saying how to give one; with it,
	// the answer.
	code, _, stderr := cliRun("status", "--server", d.ClientURL())
	if code != 1 || !strings.Contains(stderr, "401") || !strings.Contains(stderr, "--token-file") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("kubegcd status without a token: exit %d, stderr %q", code, stderr)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	e2eutil.WriteTouched(t, tokenFile, "t0ken-b\n", time.Now())
	if code, stdout, stderr := cliRun("status", "--server", d.ClientURL(), "--token-file", tokenFile); code != 0 || stdout == "" {
		t.Errorf("kubegcd status --token-file: exit %d, stderr %q", code, stderr)
	}

	// Rotation without a restart: the old tokens go, the new one works.
	e2eutil.WriteTouched(t, file, "n3w-c,carol\n", time.Now())
	eventually(t, 10*time.Second, func() error {
		if code, _, _ := call(t, c, d.URL+"/status", "n3w-c"); code != http.StatusOK {
			return fmt.Errorf("the new token: %d", code)
		}
		return nil
	})
	if code, _, _ := call(t, c, d.URL+"/status", "s3cret-a"); code != http.StatusUnauthorized {
		t.Errorf("a token removed from the file: %d, want 401", code)
	}
}

// TestAPITokenRevocation: every edit of --auth-token-file takes effect
// within seconds, and none leaves a removed token valid. A token removed
// is refused; an emptied or deleted file refuses every token and makes
// /readyz 503 (saying why) until a valid file appears, while /healthz
// stays 200; a malformed line is skipped with a warning naming its line,
// never its text, and the other lines take effect.
func TestAPITokenRevocation(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	mod := time.Now().Add(-time.Hour)
	// edit writes the file with a new modification time each time.
	edit := func(content string) {
		t.Helper()
		mod = mod.Add(time.Minute)
		e2eutil.WriteTouched(t, file, content, mod)
	}
	edit("\ufeffgood-DDDD,dave\ngood-KKKK,kim\n")
	d := daemons.Start(t, "", "--auth-token-file", file)
	d.WaitReady(t, time.Minute)
	c := e2eutil.ValidatingClient(t, &http.Client{Timeout: 10 * time.Second})

	// expect waits until each token gets its code on /status.
	expect := func(step string, codes map[string]int) {
		t.Helper()
		eventually(t, 15*time.Second, func() error {
			for token, want := range codes {
				if code, _, body := call(t, c, d.URL+"/status", token); code != want {
					return fmt.Errorf("%s: token %s: %d (error %v), want %d", step, token, code, body["error"], want)
				}
			}
			return nil
		})
	}
	// readyz waits until /readyz answers code with msg in its body.
	readyz := func(step string, code int, msg string) {
		t.Helper()
		eventually(t, 15*time.Second, func() error {
			got, _, body := call(t, c, d.URL+"/readyz", "")
			// Tests beside this one add and remove CRDs, so the mirror
			// may be briefly behind: a 503 for that says nothing of the
			// tokens.
			if code == http.StatusOK && got == http.StatusServiceUnavailable && !strings.Contains(fmt.Sprint(body), "token") {
				return nil
			}
			if got != code || !strings.Contains(fmt.Sprint(body), msg) {
				return fmt.Errorf("%s: /readyz %d %v, want %d with %q", step, got, body, code, msg)
			}
			return nil
		})
	}
	healthz := func(step string) {
		t.Helper()
		if code, _, body := call(t, c, d.URL+"/healthz", ""); code != http.StatusOK {
			t.Errorf("%s: /healthz %d %v, want 200", step, code, body)
		}
	}
	// The byte-order mark an editor put first is no part of the token.
	expect("at start", map[string]int{"good-DDDD": 200, "good-KKKK": 200})

	edit("good-KKKK,kim\n")
	expect("a token removed", map[string]int{"good-DDDD": 401, "good-KKKK": 200})
	readyz("a token removed", 200, "ready")

	edit("")
	expect("the file emptied", map[string]int{"good-KKKK": 401})
	readyz("the file emptied", 503, "no valid token")
	healthz("the file emptied")
	if _, _, body := call(t, c, d.URL+"/status", "good-KKKK"); !strings.Contains(fmt.Sprint(body["error"]), "revoked") {
		t.Errorf("a 401 while every token is revoked: %v, want it to say so", body)
	}
	if _, _, body := call(t, c, d.URL+"/graph", "good-KKKK"); body["error"] == nil {
		t.Errorf("/graph while every token is revoked: %v, want a 401", body)
	}

	edit("good-KKKK,kim\n")
	expect("a valid file again", map[string]int{"good-KKKK": 200})
	readyz("a valid file again", 200, "ready")

	edit("# only comments\n\n")
	expect("comments only", map[string]int{"good-KKKK": 401})
	readyz("comments only", 503, "no valid token")

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	expect("the file deleted", map[string]int{"good-KKKK": 401})
	readyz("the file deleted", 503, "no such file")
	healthz("the file deleted")

	edit("good-EEEE,eve\nbad token with spaces\n")
	expect("a malformed line", map[string]int{"good-EEEE": 200, "good-KKKK": 401, "good-DDDD": 401})
	readyz("a malformed line", 200, "ready")
	code, _, status := call(t, c, d.URL+"/status", "good-EEEE")
	if tf, _ := status["authTokenFile"].(map[string]any); code != 200 || tf == nil || tf["tokens"] != 1.0 ||
		fmt.Sprint(tf["skippedLines"]) != "[2]" || tf["error"] != nil {
		t.Errorf("/status authTokenFile: %d %v, want 1 token, line 2 skipped, no error", code, status["authTokenFile"])
	}
	logs := d.Logs.String()
	if !strings.Contains(logs, "lines skipped") || !strings.Contains(logs, "lines=[2]") {
		t.Errorf("no warning naming the skipped line 2 in the log:\n%s", tail(logs, 20))
	}
	if strings.Contains(logs, "bad token") || strings.Contains(logs, "good-") {
		t.Error("the log holds a line of the token file")
	}
	// Once when the file was emptied, once when it was left with comments
	// only, and once more when, deleted, it was refused for another
	// reason: not every second.
	if n := strings.Count(logs, "every bearer token is refused"); n != 3 {
		t.Errorf("%d log lines saying every token is refused, want 3", n)
	}
}

// TestAPITLSAndClientCertificates: HTTPS from --tls-cert-file, reloaded
// when the files change; with --client-ca-file a certificate it signed
// authenticates a client without a token, a client without one gets a
// 401 but for the health checks, and one signed by another CA is refused.
func TestAPITLSAndClientCertificates(t *testing.T) {
	t.Parallel()
	pki := e2eutil.NewPKI(t, "kubegcd-test-ca")
	pki.Issue(t, "server", "kubegcd", 10, true, time.Now().Add(-time.Hour))
	alice := pki.Issue(t, "alice", "alice", 11, false, time.Now())
	other := e2eutil.NewPKI(t, "someone-else")
	mallory := other.Issue(t, "mallory", "mallory", 12, false, time.Now())

	clientWith := func(certs ...tls.Certificate) *http.Client {
		return e2eutil.ValidatingClient(t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pki.Pool, Certificates: certs, MinVersion: tls.VersionTLS12}}})
	}
	anonymous := clientWith()
	d := e2eutil.DaemonOptions{Kubeconfig: cluster.Kubeconfig, Client: anonymous}.Start(t, "",
		"--tls-cert-file", pki.CertFile("server"), "--tls-private-key-file", pki.KeyFile("server"),
		"--client-ca-file", pki.CAFile())

	if code, _, _ := call(t, anonymous, d.URL+"/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz over HTTPS without a client certificate: %d", code)
	}
	if code, _, body := call(t, anonymous, d.URL+"/status", ""); code != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(body["error"]), "client certificate") {
		t.Errorf("/status without a client certificate: %d %v, want 401", code, body)
	}
	code, _, body := call(t, clientWith(alice), d.URL+"/status", "")
	if code != http.StatusOK || body["authentication"] != "client-certificate" {
		t.Errorf("/status with alice's certificate: %d %v", code, body["authentication"])
	}
	// A certificate of another CA, sent though the server asked for its
	// own CA's: the handshake fails, or at most the request is anonymous.
	forced := e2eutil.ValidatingClient(t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pki.Pool, MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &mallory, nil }}}})
	if resp, err := forced.Get(d.URL + "/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("a client certificate of another CA was accepted")
		}
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(strings.Replace(d.URL, "https:", "http:", 1) + "/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP was served on the HTTPS port")
		}
	}

	// A renewed certificate is served without a restart.
	pki.Issue(t, "server", "kubegcd", 20, true, time.Now())
	eventually(t, 15*time.Second, func() error {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(d.URL, "https://"), &tls.Config{RootCAs: pki.Pool, MinVersion: tls.VersionTLS12})
		if err != nil {
			return err
		}
		defer conn.Close()
		if serial := conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(); serial != 20 {
			return fmt.Errorf("served certificate %d, want the renewed 20", serial)
		}
		return nil
	})
}

// TestListenRefusedWithoutAuthentication: a --listen address other hosts
// reach, without tokens or client certificates, stops the start with one
// line naming the flags (exit 2); --insecure-allow-unauthenticated
// overrides it, loudly in the log and in /status.
func TestListenRefusedWithoutAuthentication(t *testing.T) {
	t.Parallel()
	code, _, stderr := runBinary(t, 30*time.Second, "run", "--kubeconfig", cluster.Kubeconfig,
		"--db", filepath.Join(t.TempDir(), "k.db"), "--listen", "0.0.0.0:0")
	if code != 2 || !strings.Contains(stderr, "--auth-token-file") || !strings.Contains(stderr, "--insecure-allow-unauthenticated") ||
		strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("--listen 0.0.0.0:0 without authentication: exit %d, stderr %q; want exit 2 and one line naming the flags", code, stderr)
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	d := daemons.Start(t, "", "--listen", "0.0.0.0:"+port, "--insecure-allow-unauthenticated")
	var status map[string]any
	d.GetJSON(t, "/status", http.StatusOK, &status)
	if status["insecureUnauthenticated"] != true || status["authentication"] != "none" {
		t.Errorf("/status: insecureUnauthenticated %v, authentication %v", status["insecureUnauthenticated"], status["authentication"])
	}
	if !strings.Contains(d.Logs.String(), "serves everyone who reaches it") {
		t.Error("no warning in the log")
	}
}
