package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/kubegcd/kubegcd/docs"
	"github.com/kubegcd/kubegcd/internal/api"
)

// The whole graph in GraphViz is text, checked as a string.
func init() { openapi3filter.RegisterBodyDecoder("text/vnd.graphviz", openapi3filter.PlainBodyDecoder) }

// loadOpenAPI parses the document the server serves.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIServed: GET /openapi/v3 answers the document as JSON, and
// refuses parameters as the other paths do.
func TestOpenAPIServed(t *testing.T) {
	srv, _ := testServer(t)
	resp, body := get(t, srv, "/openapi/v3")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi/v3: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(body, docs.OpenAPI) {
		t.Errorf("GET /openapi/v3 is not the document")
	}
	if resp, _ := get(t, srv, "/openapi/v3?x=1"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /openapi/v3?x=1: %d, want 400", resp.StatusCode)
	}
}

// TestOpenAPINeedsAuthentication: with bearer tokens, the document is
// refused without one, as the other API paths are.
func TestOpenAPINeedsAuthentication(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("good\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadTokens(path, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(Options{Tokens: tok, Ingest: fakeIngest{}, DB: tokenStore(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		authorization string
		want          int
	}{{"", http.StatusUnauthorized}, {"Bearer bad", http.StatusUnauthorized}, {"Bearer good", http.StatusOK}} {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/openapi/v3", nil)
		if tc.authorization != "" {
			req.Header.Set("Authorization", tc.authorization)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("GET /openapi/v3 with %q: %d, want %d", tc.authorization, rec.Code, tc.want)
		}
	}
}

// TestOpenAPILimits: the server takes each ?limit= up to the maximum the
// document gives and refuses one more, and takes the document's default
// when the limit is absent.
func TestOpenAPILimits(t *testing.T) {
	doc := loadOpenAPI(t)
	srv, _ := testServer(t)
	n := 0
	for path, item := range doc.Paths.Map() {
		if item.Get == nil {
			continue
		}
		p := item.Get.Parameters.GetByInAndName("query", "limit")
		if p == nil {
			continue
		}
		n++
		s := p.Schema.Value
		target := strings.NewReplacer("{uid}", "uid-A", "{id}", "unused-configmaps").Replace(path) + "?"
		if path == "/objects" {
			target += "kind=ConfigMap&"
		}
		for _, tc := range []struct {
			limit float64
			want  int
		}{{*s.Max, http.StatusOK}, {*s.Max + 1, http.StatusBadRequest}, {*s.Min, http.StatusOK}, {*s.Min - 1, http.StatusBadRequest}} {
			if resp, body := get(t, srv, fmt.Sprintf("%slimit=%d", target, int(tc.limit))); resp.StatusCode != tc.want {
				t.Errorf("GET %slimit=%d: %d, want %d: %.200s", target, int(tc.limit), resp.StatusCode, tc.want, body)
			}
		}
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil)
		var got int
		withOperation(operationAt(t, path))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got = newQuery(r).limit()
		})).ServeHTTP(httptest.NewRecorder(), req)
		if float64(got) != s.Default {
			t.Errorf("%s: no limit reads %d, the document's default is %v", path, got, s.Default)
		}
	}
	if n < 7 {
		t.Errorf("%d paths take a limit, want 7", n)
	}
}

// operationAt is the GET operation of api.Operations at path.
func operationAt(t *testing.T, path string) *api.Operation {
	t.Helper()
	for i, op := range api.Operations {
		if op.Method == http.MethodGet && op.Path == path {
			return &api.Operations[i]
		}
	}
	t.Fatalf("no operation GET %s", path)
	return nil
}

// TestAnswersMatchOpenAPI: the server's answers, errors included, match
// the document's schemas for their path and status.
func TestAnswersMatchOpenAPI(t *testing.T) {
	doc := loadOpenAPI(t)
	srv, _ := testServer(t)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/status", 200}, {"/healthz", 200}, {"/readyz", 200}, {"/openapi/v3", 200}, {"/overview", 200},
		{"/pending", 200}, {"/pending?limit=0", 400}, {"/audit", 200}, {"/audit?outcome=x", 400},
		{"/graph", 200}, {"/graph?uid=uid-A", 200}, {"/graph?namespace=a&limit=2", 200}, {"/graph?format=dot&uid=uid-A", 200}, {"/graph?uid=nope", 404},
		{"/graph?uid=uid-D&at=" + time.Now().UTC().Format(time.RFC3339), 200},
		{"/objects?kind=ConfigMap", 200}, {"/objects?kind=configmaps&namespace=a&name=A", 200}, {"/objects", 400},
		{"/objects/uid-A", 200}, {"/objects/uid-B", 200}, {"/objects/uid-D", 200}, {"/objects/uid-G", 200}, {"/objects/nope", 404},
		{"/objects/uid-A/cascade", 200}, {"/objects/uid-D/cascade?propagation=foreground", 200}, {"/objects/nope/cascade", 404},
		{"/objects/uid-A/history", 200}, {"/objects/nope/history", 404},
		{"/stuck", 200}, {"/stuck?minAge=0", 200}, {"/lint", 200}, {"/lint?severity=x", 400}, {"/leases", 200},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := get(t, srv, tc.path)
			if resp.StatusCode != tc.want {
				t.Fatalf("GET %s: %d, want %d: %s", tc.path, resp.StatusCode, tc.want, body)
			}
			if err := validateAnswer(doc, http.MethodGet, srv.URL+tc.path, resp.StatusCode, resp.Header, body); err != nil {
				t.Errorf("%v\n%s", err, body)
			}
		})
	}
}

// validateAnswer checks an answer against the operation of the document
// that target's path names.
func validateAnswer(doc *openapi3.T, method, target string, status int, header http.Header, body []byte) error {
	req := httptest.NewRequest(method, target, nil)
	var template string
	var item *openapi3.PathItem
	segs := strings.Split(req.URL.Path, "/")
	for tpl, it := range doc.Paths.Map() {
		tsegs := strings.Split(tpl, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		match := true
		for i, s := range tsegs {
			if s != segs[i] && !strings.HasPrefix(s, "{") {
				match = false
			}
		}
		if match {
			template, item = tpl, it
		}
	}
	if item == nil {
		return &routers.RouteError{Reason: "no path of the document matches " + req.URL.Path}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req,
			Route: &routers.Route{Spec: doc, Path: template, PathItem: item, Method: method, Operation: item.GetOperation(method)}},
		Status: status, Header: header, Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}
