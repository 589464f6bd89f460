package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

type fakeLedger struct{ err error }

func (f fakeLedger) LedgerError() error { return f.err }

type fakeReleaser struct {
	err        error
	reason, by string
}

func (f *fakeReleaser) Release(_ context.Context, reason, by string) error {
	f.reason, f.by = reason, by
	return f.err
}

func enforcementServer(t *testing.T, ledger Ledger, rel Releaser) *httptest.Server {
	t.Helper()
	h, err := NewHandler(Options{Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), Ledger: ledger, Releaser: rel,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestRelease(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		query       string
		contentType string
		body        string
		releaseErr  error
		code        int
		wantError   string
		wantReason  string
	}{
		{name: "released", contentType: "application/json", body: `{"reason": " checked "}`, code: 200, wantReason: "checked"},
		{name: "charset parameter", contentType: "application/json; charset=utf-8", body: `{}`, code: 200},
		{name: "empty body", contentType: "application/json", code: 200},
		{name: "no content type", body: `{"reason": "x"}`, code: 415, wantError: "Content-Type: application/json"},
		{name: "form post, as a browser sends across origins", contentType: "text/plain", body: `{"reason": "x"}`, code: 415,
			wantError: "Content-Type: application/json"},
		{name: "unknown field", contentType: "application/json", body: `{"reasons": "x"}`, code: 400, wantError: "invalid body"},
		{name: "a second object", contentType: "application/json", body: `{"reason":"x"}{"reason":"y"}`, code: 400,
			wantError: "invalid body: data after the JSON object"},
		{name: "text after the object", contentType: "application/json", body: `{"reason":"x"} and more`, code: 400,
			wantError: "invalid body"},
		{name: "a stray brace after the object", contentType: "application/json", body: `{"reason":"x"}}`, code: 400,
			wantError: "invalid body"},
		{name: "white space after the object", contentType: "application/json", body: "{\"reason\":\"x\"} \r\n\t\n", code: 200,
			wantReason: "x"},
		{name: "reason too long", contentType: "application/json", body: `{"reason": "` + strings.Repeat("x", 1001) + `"}`, code: 400,
			wantError: "reason too long"},
		{name: "nothing held", contentType: "application/json", body: `{}`, code: 409,
			releaseErr: fmt.Errorf("%w: nothing is paused by the blast-radius cap", ErrNotHeld), wantError: "enforcement is not held"},
		{name: "audit history not writable", contentType: "application/json", body: `{}`, code: 503,
			releaseErr: fmt.Errorf("%w: disk full", ErrLedgerUnavailable), wantError: "cannot be recorded"},
		{name: "other failure is not leaked", contentType: "application/json", body: `{}`, code: 500,
			releaseErr: errors.New("secret detail"), wantError: "internal error"},
		{name: "GET", method: http.MethodGet, code: 405, wantError: "method GET not allowed"},
		// A parameter the release does not take, such as a hoped-for
		// preview, must not release.
		{name: "a query parameter", query: "?dry-run=true", contentType: "application/json", body: `{}`, code: 400,
			wantError: `unknown query parameter "dry-run"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rel := &fakeReleaser{err: tc.releaseErr}
			srv := enforcementServer(t, nil, rel)
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, srv.URL+"/enforcement/release"+tc.query, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			var e errorJSON
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if !strings.Contains(e.Error, tc.wantError) || (tc.wantError == "") != (e.Error == "") {
				t.Errorf("error %q, want it to name %q", e.Error, tc.wantError)
			}
			if tc.code == 400 && rel.by != "" {
				t.Errorf("a bad request released enforcement (by %q)", rel.by)
			}
			if tc.code == 200 && (rel.reason != tc.wantReason || !strings.HasPrefix(rel.by, "127.0.0.1:")) {
				t.Errorf("released with reason %q by %q", rel.reason, rel.by)
			}
		})
	}
}

func TestReadyzReportsTheAuditStore(t *testing.T) {
	cause := errors.New("enforcement paused: audit history cannot be written: database audit: commit: database or disk is full")
	for _, tc := range []struct {
		name   string
		ledger Ledger
		code   int
		want   string
	}{
		{"writable", fakeLedger{}, 200, ""},
		{"not writable", fakeLedger{err: cause}, 503, "enforcement paused: audit history cannot be written: database audit: commit: database or disk is full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := enforcementServer(t, tc.ledger, nil)
			r, body := get(t, srv, "/readyz")
			var e errorJSON
			_ = json.Unmarshal(body, &e)
			if r.StatusCode != tc.code || e.Error != tc.want {
				t.Fatalf("/readyz %d %s, want %d %q", r.StatusCode, body, tc.code, tc.want)
			}
		})
	}
}

// What the release's audit row records of who asked is bounded, as its
// reason is: the User-Agent and the caller's name are cut, on a UTF-8
// boundary and marked, so that a client cannot store 60 KB in the row.
func TestReleaseCapsWhoAsked(t *testing.T) {
	longName := strings.Repeat("n", 5000)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte("release-test-token,"+longName+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := LoadTokens(tokenFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel := &fakeReleaser{}
	h, err := NewHandler(Options{Ingest: fakeIngest{}, Registry: prometheus.NewRegistry(), Releaser: rel, Tokens: tokens,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, userAgent string
		wantUA          string // in by, between parentheses
	}{
		{"a short User-Agent is kept", "kubegcd/1.0", "kubegcd/1.0"},
		{"60 KB of two-byte runes", strings.Repeat("é", 30000), strings.Repeat("é", 126) + "…"},
		{"one byte over", strings.Repeat("a", maxWhoLen+1), strings.Repeat("a", maxWhoLen-len("…")) + "…"},
		{"at the bound", strings.Repeat("a", maxWhoLen), strings.Repeat("a", maxWhoLen)},
		{"not UTF-8", "a\xff\xfeb", "a\uFFFDb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/enforcement/release", strings.NewReader(`{"reason":"x"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer release-test-token")
			req.Header.Set("User-Agent", tc.userAgent)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("release: %d %s", rec.Code, rec.Body)
			}
			wantCaller := longName[:maxWhoLen-len("…")] + "…"
			want := wantCaller + " from " + req.RemoteAddr + " (" + tc.wantUA + ")"
			if rel.by != want {
				t.Errorf("by = %.80q… (%d bytes), want %.80q… (%d bytes)", rel.by, len(rel.by), want, len(want))
			}
			if !utf8.ValidString(rel.by) {
				t.Errorf("by is not valid UTF-8: %q", rel.by)
			}
		})
	}
}
