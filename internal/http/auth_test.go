package http

import (
	"crypto/sha256"
	"encoding/json"
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

	"github.com/kubegcd/kubegcd/internal/db/dbtest"
)

// TestParseTokens: each valid line is a token, named or not; a malformed
// line is skipped and its number kept; a byte-order mark is no part of the
// first token.
func TestParseTokens(t *testing.T) {
	tests := []struct {
		file        string
		want        []string // names, in order
		wantSkipped []int
	}{
		{"abc,alice\n", []string{"alice"}, nil},
		{"# comment\n\n  abc , alice \ndef\n", []string{"alice", "token-4"}, nil},
		{"abc", []string{"token-1"}, nil},
		{"\ufeffabc\r\ndef,bob\r\n", []string{"token-1", "bob"}, nil},
		{"", nil, nil},
		{"# only a comment\n", nil, nil},
		{",alice\n", nil, []int{1}},
		{"a b,alice\nabc,bob\n\tx\ty\n", []string{"bob"}, []int{1, 3}},
	}
	for _, tc := range tests {
		got, skipped := parseTokens([]byte(tc.file))
		var names []string
		for _, e := range got {
			names = append(names, e.name)
		}
		if fmt.Sprint(names) != fmt.Sprint(tc.want) || fmt.Sprint(skipped) != fmt.Sprint(tc.wantSkipped) {
			t.Errorf("%q: names %v, skipped %v; want %v, %v", tc.file, names, skipped, tc.want, tc.wantSkipped)
		}
	}
	if got, _ := parseTokens([]byte("\ufeffabc\n")); len(got) != 1 || got[0].sum != sha256.Sum256([]byte("abc")) {
		t.Error("the byte-order mark is part of the first token")
	}
}

// tokenFixture is a token file loaded as the daemon loads it, with a clock
// the test moves and the log lines kept.
type tokenFixture struct {
	path   string
	tokens *Tokens
	clock  time.Time
	logged []string // each line: the message and its arguments
	srv    *server
}

func newTokenFixture(t *testing.T, content string, clientCerts bool) *tokenFixture {
	t.Helper()
	f := &tokenFixture{path: filepath.Join(t.TempDir(), "tokens"), clock: time.Unix(5000, 0)}
	writeTokenFile(t, f.path, content, time.Unix(1000, 0))
	tok, err := LoadTokens(f.path, func(msg string, args ...any) {
		line := msg
		for i := 0; i+1 < len(args); i += 2 {
			line += fmt.Sprintf(" %v=%v", args[i], args[i+1])
		}
		f.logged = append(f.logged, line)
	})
	if err != nil {
		t.Fatal(err)
	}
	tok.now = func() time.Time { return f.clock }
	f.tokens = tok
	f.srv = &server{Options: Options{Tokens: tok, ClientCerts: clientCerts, Ingest: fakeIngest{}, DB: tokenStore(t),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	return f
}

// tokenStore is an empty database for /status to count.
func tokenStore(t *testing.T) Store {
	t.Helper()
	store := dbtest.Open(t)
	return store.Reads()
}

// writeTokenFile writes the file with a modification time unlike its last,
// so that a reload sees the change even within the file system's time step.
func writeTokenFile(t *testing.T, path, content string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// get sends a GET through authentication to the handler of path, as the
// server routes it.
func (f *tokenFixture) get(path, authorization string) *httptest.ResponseRecorder {
	handler := map[string]http.HandlerFunc{"/readyz": f.srv.readyz, "/status": f.srv.status}[path]
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	f.srv.authenticate(handler).ServeHTTP(rec, req)
	return rec
}

// TestTokensReload: each edit of the token file takes effect at the next
// look, at most a second later. A token removed is refused; a file
// emptied, left with comments only, deleted or unreadable refuses every
// token (fail closed) and makes /readyz 503 until a valid file appears; a
// malformed line is skipped with a warning naming its line, never its
// text, while the other lines take effect.
func TestTokensReload(t *testing.T) {
	const initial = "old,alice\nkeep,bob\n"
	write := func(content string) func(t *testing.T, path string) {
		return func(t *testing.T, path string) { t.Helper(); writeTokenFile(t, path, content, time.Unix(2000, 0)) }
	}
	tests := []struct {
		name     string
		edit     func(t *testing.T, path string)
		accepted map[string]string // token: name
		refused  []string
		// revoked: every token is refused, /readyz says why (wantReason).
		revoked    bool
		wantReason string
		// wantLog is in the log; notLogged never is.
		wantLog, notLogged string
		wantSkipped        []int
	}{
		{name: "token removed", edit: write("keep,bob\n"), accepted: map[string]string{"keep": "bob"}, refused: []string{"old"}},
		{name: "emptied", edit: write(""), refused: []string{"old", "keep"}, revoked: true, wantReason: "no valid token"},
		{name: "comments only", edit: write("# nobody\n\n   \n"), refused: []string{"old", "keep"}, revoked: true, wantReason: "no valid token"},
		{name: "deleted", edit: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, refused: []string{"old", "keep"}, revoked: true, wantReason: "no such file"},
		{name: "a directory", edit: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, refused: []string{"old", "keep"}, revoked: true, wantReason: "is a directory"},
		{name: "malformed line among good", edit: write("new,eve\nbad token with spaces\n,nameless\n"),
			accepted: map[string]string{"new": "eve"}, refused: []string{"old", "keep", "bad"},
			wantLog: "lines=[2 3]", notLogged: "bad token", wantSkipped: []int{2, 3}},
		{name: "only malformed lines", edit: write("bad token with spaces\n"), refused: []string{"old", "keep", "bad"},
			revoked: true, wantReason: "no valid token", notLogged: "bad token"},
		{name: "byte-order mark", edit: write("\ufeffnew,eve\n"), accepted: map[string]string{"new": "eve"}, refused: []string{"\ufeffnew", "old"}},
		{name: "CRLF line ends", edit: write("new,eve\r\nother\r\n"), accepted: map[string]string{"new": "eve", "other": "token-2"}, refused: []string{"old"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTokenFixture(t, initial, false)
			if name, ok := f.tokens.Check("old"); !ok || name != "alice" {
				t.Fatalf("before the edit: Check(old) = %q, %v", name, ok)
			}
			tc.edit(t, f.path)
			f.clock = f.clock.Add(time.Second)
			for token, want := range tc.accepted {
				if rec := f.get("/status", "Bearer "+token); rec.Code != http.StatusOK {
					t.Errorf("token %q: %d %s, want 200", token, rec.Code, rec.Body)
				}
				if name, ok := f.tokens.Check(token); !ok || name != want {
					t.Errorf("Check(%q) = %q, %v; want %q", token, name, ok, want)
				}
			}
			for _, token := range tc.refused {
				if rec := f.get("/status", "Bearer "+token); rec.Code != http.StatusUnauthorized {
					t.Errorf("token %q: %d %s, want 401", token, rec.Code, rec.Body)
				}
			}
			ready := f.get("/readyz", "")
			if tc.revoked {
				if ready.Code != http.StatusServiceUnavailable || !strings.Contains(ready.Body.String(), tc.wantReason) ||
					!strings.Contains(ready.Body.String(), "token") {
					t.Errorf("/readyz: %d %s, want 503 saying %q", ready.Code, ready.Body, tc.wantReason)
				}
				if rec := f.get("/status", "Bearer old"); !strings.Contains(rec.Body.String(), "revoked") {
					t.Errorf("a token while all are revoked: %d %s, want a 401 that says so", rec.Code, rec.Body)
				}
			} else if ready.Code != http.StatusOK {
				t.Errorf("/readyz: %d %s, want 200", ready.Code, ready.Body)
			}
			logs := strings.Join(f.logged, "\n")
			if tc.wantLog != "" && !strings.Contains(logs, tc.wantLog) {
				t.Errorf("log %q, want %q in it", logs, tc.wantLog)
			}
			if tc.notLogged != "" && strings.Contains(logs, tc.notLogged) {
				t.Errorf("log %q holds the line's text %q", logs, tc.notLogged)
			}
			for token := range tc.accepted {
				var status struct {
					AuthTokenFile map[string]any `json:"authTokenFile"`
				}
				rec := f.get("/status", "Bearer "+token)
				if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
					t.Fatalf("/status: %v: %s", err, rec.Body)
				}
				got, wantSkipped := status.AuthTokenFile, "<nil>"
				if tc.wantSkipped != nil {
					wantSkipped = fmt.Sprint(tc.wantSkipped)
				}
				if got == nil || got["tokens"] != float64(len(tc.accepted)) || got["error"] != nil || fmt.Sprint(got["skippedLines"]) != wantSkipped {
					t.Errorf("/status authTokenFile %v, want %d tokens, skipped lines %s, no error", got, len(tc.accepted), wantSkipped)
				}
				break
			}
			// Looked at again and again, an unchanged file is neither
			// logged nor read again.
			before := len(f.logged)
			for range 5 {
				f.clock = f.clock.Add(time.Second)
				f.tokens.Check("old")
			}
			if len(f.logged) != before {
				t.Errorf("an unchanged file logged again: %q", f.logged[before:])
			}

			// A valid file takes effect again.
			if err := os.RemoveAll(f.path); err != nil {
				t.Fatal(err)
			}
			writeTokenFile(t, f.path, "fresh,zed\n", time.Unix(3000, 0))
			f.clock = f.clock.Add(time.Second)
			if rec := f.get("/status", "Bearer fresh"); rec.Code != http.StatusOK {
				t.Errorf("after a valid file: %d %s", rec.Code, rec.Body)
			}
			if rec := f.get("/readyz", ""); rec.Code != http.StatusOK {
				t.Errorf("/readyz after a valid file: %d %s", rec.Code, rec.Body)
			}
		})
	}
}

// TestTokensRevokedStatus: while every token is revoked /status (reached
// with a client certificate, which still authenticates) says why and
// since when, and /readyz stays 200: the API still serves its callers.
func TestTokensRevokedStatus(t *testing.T) {
	f := newTokenFixture(t, "old,alice\n", true)
	writeTokenFile(t, f.path, "# all gone\n", time.Unix(2000, 0))
	f.clock = f.clock.Add(time.Second)
	if _, ok := f.tokens.Check("old"); ok {
		t.Fatal("a token of an emptied file is accepted")
	}
	revokedAt := f.clock
	f.clock = f.clock.Add(time.Minute)
	rec := httptest.NewRecorder()
	f.srv.status(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/status", nil))
	var status struct {
		AuthTokenFile struct {
			Tokens int       `json:"tokens"`
			Error  string    `json:"error"`
			Since  time.Time `json:"since"`
		} `json:"authTokenFile"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
		t.Fatalf("/status: %v: %s", err, rec.Body)
	}
	if got := status.AuthTokenFile; got.Tokens != 0 || !strings.Contains(got.Error, "no valid token") || !got.Since.Equal(revokedAt) {
		t.Errorf("/status authTokenFile %+v, want 0 tokens, the error and since %v", got, revokedAt)
	}
	if rec := f.get("/readyz", ""); rec.Code != http.StatusOK {
		t.Errorf("/readyz with client certificates still accepted: %d %s, want 200", rec.Code, rec.Body)
	}
}

// TestTokensLookedAtOncePerSecond: an edit is seen at the first request a
// second after the last look, not before.
func TestTokensLookedAtOncePerSecond(t *testing.T) {
	f := newTokenFixture(t, "old,alice\n", false)
	f.tokens.Check("old")
	writeTokenFile(t, f.path, "new,bob\n", time.Unix(2000, 0))
	if name, ok := f.tokens.Check("old"); !ok || name != "alice" {
		t.Errorf("within the second: Check(old) = %q, %v; want the file not looked at yet", name, ok)
	}
	f.clock = f.clock.Add(time.Second)
	if name, ok := f.tokens.Check("new"); !ok || name != "bob" {
		t.Errorf("a second later: Check(new) = %q, %v", name, ok)
	}
}

// TestLoadTokens: the daemon does not start without a valid token; a
// malformed line is skipped there as on a reload, so that a file the
// running daemon took also starts it again.
func TestLoadTokens(t *testing.T) {
	tests := []struct {
		name    string
		content *string // nil: no file
		want    map[string]string
		wantErr string
	}{
		{"one token", ptr("abc,alice\n"), map[string]string{"abc": "alice"}, ""},
		{"names and comments", ptr("# comment\n\n  abc , alice \ndef\n"), map[string]string{"abc": "alice", "def": "token-4"}, ""},
		{"no trailing newline", ptr("abc"), map[string]string{"abc": "token-1"}, ""},
		{"byte-order mark", ptr("\ufeffabc,alice\n"), map[string]string{"abc": "alice"}, ""},
		{"malformed line skipped", ptr("a b,mallory\nabc,alice\n"), map[string]string{"abc": "alice"}, ""},
		{"empty", ptr(""), nil, "no valid token"},
		{"comments only", ptr("# only a comment\n"), nil, "no valid token"},
		{"malformed only", ptr(",alice\n"), nil, "no valid token"},
		{"missing", nil, nil, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tokens")
			if tc.content != nil {
				writeTokenFile(t, path, *tc.content, time.Unix(1000, 0))
			}
			tok, err := LoadTokens(path, func(string, ...any) {})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--auth-token-file") {
					t.Fatalf("err %v, want one naming --auth-token-file and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for token, want := range tc.want {
				if name, ok := tok.Check(token); !ok || name != want {
					t.Errorf("Check(%q) = %q, %v; want %q", token, name, ok, want)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestAuthenticateMessages: a 401 says what the API takes: a token, a
// client certificate, or either; a token sent to an API that takes only
// certificates is not called invalid.
func TestAuthenticateMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("good,alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := LoadTokens(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	tests := []struct {
		name        string
		s           *server
		auth        string
		wantCode    int
		wantMessage string
	}{
		{"no token", &server{Options: Options{Tokens: tokens}}, "", 401, "send Authorization: Bearer TOKEN"},
		{"wrong token", &server{Options: Options{Tokens: tokens}}, "Bearer bad", 401, "not valid"},
		{"good token", &server{Options: Options{Tokens: tokens}}, "Bearer good", 200, ""},
		{"scheme in lower case", &server{Options: Options{Tokens: tokens}}, "bearer good", 200, ""},
		{"scheme in upper case", &server{Options: Options{Tokens: tokens}}, "BEARER good", 200, ""},
		{"extra spaces", &server{Options: Options{Tokens: tokens}}, "Bearer   good  ", 200, ""},
		{"a tab", &server{Options: Options{Tokens: tokens}}, "Bearer\tgood", 200, ""},
		{"no space", &server{Options: Options{Tokens: tokens}}, "Bearergood", 401, "not valid"},
		{"another scheme", &server{Options: Options{Tokens: tokens}}, "Basic good", 401, "not valid"},
		{"certificates only", &server{Options: Options{ClientCerts: true}}, "Bearer good", 401, "present a client certificate"},
		{"either", &server{Options: Options{Tokens: tokens, ClientCerts: true}}, "", 401, "or a client certificate"},
		{"neither configured", &server{}, "", 200, ""},
	}
	for _, tc := range tests {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/status", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		tc.s.authenticate(ok).ServeHTTP(rec, req)
		if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantMessage) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, rec.Code, rec.Body, tc.wantCode, tc.wantMessage)
		}
	}
}
