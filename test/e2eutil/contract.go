package e2eutil

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/kubegcd/kubegcd/docs"
)

// contract is the API's OpenAPI document (what GET /openapi/v3 serves and
// docs/openapi.json holds), loaded once, with the answers validated
// against it by operation.
var contract struct {
	once sync.Once
	doc  *openapi3.T
	err  error

	mu sync.Mutex
	// validated counts the answers validated, by "METHOD /path template".
	validated map[string]int
}

// The whole graph in GraphViz is text, checked as a string.
func init() { openapi3filter.RegisterBodyDecoder("text/vnd.graphviz", openapi3filter.PlainBodyDecoder) }

func loadContract() (*openapi3.T, error) {
	contract.once.Do(func() {
		contract.doc, contract.err = openapi3.NewLoader().LoadFromData(docs.OpenAPI)
		if contract.err == nil {
			contract.err = contract.doc.Validate(context.Background())
		}
	})
	return contract.doc, contract.err
}

// CheckResponse validates an answer of the daemon against the API's
// OpenAPI document: its status must be one the operation lists, and its
// body must match that status's schema for contentType. A path the
// document does not describe (/metrics, /debug/pprof/, the UI, an unknown
// path) is not checked, and ok is false.
func CheckResponse(method, target string, status int, contentType string, body []byte) (ok bool, err error) {
	doc, err := loadContract()
	if err != nil {
		return false, fmt.Errorf("the OpenAPI document: %w", err)
	}
	u, err := url.Parse(target)
	if err != nil {
		return false, err
	}
	template, item := findPath(doc, u.Path)
	if item == nil {
		return false, nil
	}
	op := item.GetOperation(strings.ToUpper(method))
	if op == nil {
		return false, nil
	}
	req, err := http.NewRequest(method, u.String(), nil)
	if err != nil {
		return false, err
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req,
			Route: &routers.Route{Spec: doc, Path: template, PathItem: item, Method: method, Operation: op}},
		Status:  status,
		Header:  http.Header{"Content-Type": {contentType}},
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return true, fmt.Errorf("%s %s: %d answer does not match the OpenAPI document: %w", method, target, status, err)
	}
	contract.mu.Lock()
	defer contract.mu.Unlock()
	if contract.validated == nil {
		contract.validated = map[string]int{}
	}
	contract.validated[strings.ToUpper(method)+" "+template]++
	return true, nil
}

// findPath returns the document's path template that path matches, and
// its item; nil when none does.
func findPath(doc *openapi3.T, path string) (string, *openapi3.PathItem) {
	segs := strings.Split(path, "/")
	for template, item := range doc.Paths.Map() {
		tsegs := strings.Split(template, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		match := true
		for i, s := range tsegs {
			if s != segs[i] && !(strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") && segs[i] != "") {
				match = false
				break
			}
		}
		if match {
			return template, item
		}
	}
	return "", nil
}

// ValidateResponse fails t when an answer of the daemon does not match the
// API's OpenAPI document (see CheckResponse).
func ValidateResponse(t testing.TB, method, path string, status int, contentType string, body []byte) {
	t.Helper()
	if _, err := CheckResponse(method, path, status, contentType, body); err != nil {
		t.Error(err)
	}
}

// ContractCounts says how many answers were validated against the OpenAPI
// document, by operation, one operation a line; and which operations of
// the document no answer reached.
func ContractCounts() string {
	contract.mu.Lock()
	defer contract.mu.Unlock()
	var b strings.Builder
	total := 0
	ops := make([]string, 0, len(contract.validated))
	for op, n := range contract.validated {
		ops = append(ops, op)
		total += n
	}
	slices.Sort(ops)
	fmt.Fprintf(&b, "OpenAPI contract: %d answers validated, %d operations\n", total, len(ops))
	for _, op := range ops {
		fmt.Fprintf(&b, "  %6d  %s\n", contract.validated[op], op)
	}
	if doc, err := loadContract(); err == nil {
		var missed []string
		for template, item := range doc.Paths.Map() {
			for method := range item.Operations() {
				if op := method + " " + template; contract.validated[op] == 0 {
					missed = append(missed, op)
				}
			}
		}
		slices.Sort(missed)
		if len(missed) > 0 {
			fmt.Fprintf(&b, "  not reached: %s\n", strings.Join(missed, ", "))
		}
	}
	return b.String()
}

// validatingTransport checks each answer it carries against the OpenAPI
// document, and fails t when one does not match.
type validatingTransport struct {
	t    testing.TB
	next http.RoundTripper
}

// ValidatingClient returns a copy of c (a new client when nil) whose
// every answer is validated against the API's OpenAPI document; a
// mismatch fails t.
func ValidatingClient(t testing.TB, c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	next := out.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	out.Transport = &validatingTransport{t: t, next: next}
	return out
}

func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(req)
	if err != nil || req.Method == http.MethodHead {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		// A body cut short is the caller's to see: it reads what came.
		return resp, nil
	}
	if _, err := CheckResponse(req.Method, req.URL.RequestURI(), resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
		v.t.Errorf("%v", err)
	}
	return resp, nil
}

// ValidatingProxy serves target (a daemon's URL) on a loopback address of
// its own, over plain HTTP, and validates every answer it passes on
// against the API's OpenAPI document; a mismatch fails t. c (nil for
// http.DefaultTransport) carries the requests to target. The proxy stops
// when t ends. It is how the answers that a process under test reads
// itself, the CLI or a browser, are checked.
func ValidatingProxy(t testing.TB, target string, c *http.Client) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("the daemon's URL %q: %v", target, err)
	}
	next := http.DefaultTransport
	if c != nil && c.Transport != nil {
		next = c.Transport
	}
	p := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: &validatingTransport{t: t, next: next},
		// A client that goes away mid-answer is the test's to see.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	s := httptest.NewServer(p)
	t.Cleanup(s.Close)
	return s.URL
}
