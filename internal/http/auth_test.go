package http

import (
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
