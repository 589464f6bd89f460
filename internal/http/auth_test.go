package http

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTokens(t *testing.T) {
	tests := []struct {
		file    string
		want    []string // names, in order
		wantErr string
	}{
		{"abc,alice\n", []string{"alice"}, ""},
		{"# comment\n\n  abc , alice \ndef\n", []string{"alice", "token-4"}, ""},
		{"abc", []string{"token-1"}, ""},
		{"", nil, "no token"},
		{"# only a comment\n", nil, "no token"},
		{",alice\n", nil, "line 1"},
		{"a b,alice\n", nil, "line 1"},
	}
	for _, tc := range tests {
		got, err := parseTokens([]byte(tc.file))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.file, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.file, err)
			continue
		}
		var names []string
		for _, e := range got {
			names = append(names, e.name)
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: names %v, want %v", tc.file, names, tc.want)
		}
	}
}

func TestTokensReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	write := func(content string, mod time.Time) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	write("old,alice\n", time.Unix(1000, 0))
	var logged []string
	tok, err := LoadTokens(path, func(msg string, _ ...any) { logged = append(logged, msg) })
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(5000, 0)
	tok.now = func() time.Time { return clock }
	check := func(token, wantName string, wantOK bool) {
		t.Helper()
		if name, ok := tok.Check(token); ok != wantOK || name != wantName {
			t.Errorf("Check(%q) = %q, %v; want %q, %v", token, name, ok, wantName, wantOK)
		}
	}
	check("old", "alice", true)
	check("ol", "", false)
	check("", "", false)
	write("new,bob\n", time.Unix(2000, 0))
	check("old", "alice", true) // within the second: not looked at yet
	clock = clock.Add(time.Second)
	check("new", "bob", true)
	check("old", "", false)
	write("broken line here\n", time.Unix(3000, 0))
	clock = clock.Add(time.Second)
	check("new", "bob", true) // a broken file keeps the tokens loaded
	if len(logged) != 1 {
		t.Errorf("logged %v, want one line about the broken file", logged)
	}
	if _, err := LoadTokens(filepath.Join(t.TempDir(), "missing"), nil); err == nil || !strings.Contains(err.Error(), "--auth-token-file") {
		t.Errorf("a missing file: %v", err)
	}
}

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
