package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// DefaultServer is where the client commands look for kubegcd when neither
// --server nor $KUBEGCD_SERVER says: the daemon's default --listen.
const DefaultServer = "http://127.0.0.1:8080"

// Environment variables the client commands read.
const (
	envServer = "KUBEGCD_SERVER"
	envToken  = "KUBEGCD_TOKEN"
)

// Client reads a running kubegcd's JSON API.
type Client struct {
	// Server is the base URL, without a trailing slash.
	Server string
	// Token, when set, is sent as a bearer token.
	Token string
	HTTP  *http.Client
	// MaxAnswer, when set, bounds what is read of one answer in bytes
	// (default 256 MiB): a larger answer is an error, read no further.
	MaxAnswer int64
}

// connFlags are the flags every client command takes to reach kubegcd.
type connFlags struct {
	server, tokenFile, caFile string
	insecure                  bool
}

func (c *connFlags) register(fs *pflag.FlagSet) {
	checkedVar(fs, &c.server, "server", "", "string", "URL of the kubegcd to ask (default $"+envServer+", else "+DefaultServer+")",
		serverWant, isServerURL)
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding a bearer token to send (default: the token in $"+envToken+")")
	fs.StringVar(&c.caFile, "certificate-authority", "", "PEM file of the CA that signed the server's certificate (https)")
	fs.BoolVar(&c.insecure, "insecure-skip-tls-verify", false, "do not check the server's certificate (https); insecure")
}

// usagef is a command line that cannot work: exit code 2.
func usagef(format string, args ...any) error { return cmdline.Usagef(format, args...) }

// client builds the Client the flags and the environment describe: --server,
// else $KUBEGCD_SERVER, else DefaultServer; the token from --token-file,
// else $KUBEGCD_TOKEN.
func (c *connFlags) client(lookupEnv func(string) (string, bool), stderr io.Writer) (*Client, error) {
	getenv := func(name string) string { v, _ := lookupEnv(name); return v }
	server := c.server
	if server == "" {
		server = getenv(envServer)
	}
	if server == "" {
		server = DefaultServer
	}
	if !isServerURL(server) {
		from := "--server"
		if c.server == "" {
			from = "$" + envServer
		}
		return nil, usagef("invalid %s %q: %s", from, server, serverWant)
	}
	token := ""
	if c.tokenFile != "" {
		data, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		if token = strings.TrimSpace(string(data)); token == "" {
			return nil, fmt.Errorf("--token-file %s: the file is empty", c.tokenFile)
		}
	} else {
		token = strings.TrimSpace(getenv(envToken))
	}
	if c.caFile != "" && c.insecure {
		return nil, usagef("--certificate-authority and --insecure-skip-tls-verify exclude each other")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	switch {
	case c.caFile != "":
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, fmt.Errorf("--certificate-authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--certificate-authority %s: no PEM certificate in the file", c.caFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	case c.insecure:
		fmt.Fprintln(stderr, "kubegcd: warning: --insecure-skip-tls-verify: the server's certificate is not checked, so anyone on the path can read and answer these requests")
		transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // asked for by the user, who was warned
	}
	return &Client{Server: strings.TrimRight(server, "/"), Token: token,
		HTTP: &http.Client{Timeout: 60 * time.Second, Transport: transport}}, nil
}

// APIError is an answer of the API other than 200: its status and the
// message of the API's JSON error.
type APIError struct {
	URL     string
	Status  int
	Message string
	// TokenSent: the request carried a bearer token (a 401 then means it
	// was refused rather than missing).
	TokenSent bool
}

func (e *APIError) Error() string {
	status := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	if e.Status == http.StatusUnauthorized {
		if e.TokenSent {
			return fmt.Sprintf("%s: %s: the server refused the bearer token (check --token-file or $%s)", e.URL, status, envToken)
		}
		return fmt.Sprintf("%s: %s: the server wants a bearer token: give --token-file FILE or set $%s", e.URL, status, envToken)
	}
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.URL, status)
	}
	return fmt.Sprintf("%s: %s: %s", e.URL, status, e.Message)
}

// maxAnswer bounds what the client reads of one answer unless
// Client.MaxAnswer says.
const maxAnswer = 256 << 20

// Get returns the body of GET path?query, which must answer 200; any other
// answer is an *APIError.
func (c *Client) Get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	u := c.Server + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return c.do(ctx, http.MethodGet, u, nil)
}

// Post sends v as JSON to path, which must answer 200; any other answer is
// an *APIError.
func (c *Client) Post(ctx context.Context, path string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, http.MethodPost, c.Server+path, body)
}

// PostBody sends body, of contentType, to path, which must answer 200;
// any other answer is an *APIError.
func (c *Client) PostBody(ctx context.Context, path, contentType string, body []byte) ([]byte, error) {
	if body == nil {
		body = []byte{}
	}
	return c.send(ctx, http.MethodPost, c.Server+path, contentType, body)
}

func (c *Client) do(ctx context.Context, method, u string, body []byte) ([]byte, error) {
	return c.send(ctx, method, u, "application/json", body)
}

func (c *Client) send(ctx context.Context, method, u, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	// A password in --server stays out of messages, as net/http keeps it
	// out of its own errors.
	shown := method + " " + req.URL.Redacted()
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// url.Error says METHOD "URL": cause, on one line.
		return nil, fmt.Errorf("cannot reach kubegcd: %w", err)
	}
	defer resp.Body.Close()
	limit := cmp.Or(c.MaxAnswer, maxAnswer)
	tooLarge := func() error {
		return fmt.Errorf("%s: the answer is larger than %d bytes, the most this command reads", shown, limit)
	}
	if resp.StatusCode == http.StatusOK && resp.ContentLength > limit {
		return nil, tooLarge() // not a byte read
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", shown, err)
	}
	// 201: a POST that made something (a restore).
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(answer, &e) // a body that is not the API's error shape leaves the status alone
		return nil, &APIError{URL: shown, Status: resp.StatusCode, Message: cmdline.OneLine(e.Error), TokenSent: c.Token != ""}
	}
	if int64(len(answer)) > limit {
		return nil, tooLarge()
	}
	return answer, nil
}

// GetJSON is Get, decoding the answer into v; it returns the answer too,
// for -o json to print as it came.
func (c *Client) GetJSON(ctx context.Context, path string, query url.Values, v any) ([]byte, error) {
	body, err := c.Get(ctx, path, query)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("GET %s: the answer is not the JSON expected (is --server a kubegcd?): %w", path, err)
	}
	return body, nil
}

// redacted is a URL with its password, if any, hidden.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
