package http

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// fuzzPaths are the endpoints whose query parameters FuzzQueryParameters
// throws bytes at.
var fuzzPaths = []string{"/pending", "/audit", "/graph", "/objects", "/objects/uid-B", "/objects/uid-A/cascade",
	"/objects/uid-B/history", "/lint", "/stuck", "/leases", "/status", "/overview", "/healthz", "/metrics"}

// FuzzQueryParameters: whatever the query string, an endpoint answers 200,
// 400 or 404 with JSON (an error message when not 200), never a 500 and
// never a panic (the recoverer would turn one into a 500); one that
// url.ParseQuery refuses is a 400, never an answer to the pairs left.
func FuzzQueryParameters(f *testing.F) {
	srv, _ := testServer(f)
	h := srv.Config.Handler
	for i, q := range []string{"", "limit=10", "limit=-1", "limit=99999999999999999999", "since=2026-01-01T00:00:00Z",
		"since=1h", "cursor=abc", "uid=uid-A&uid=uid-B", "at=2026-01-01T00:00:00Z&uid=uid-A", "format=dot",
		"propagation=orphan", "propagation=%zz", "kind=cm&name=A", "kind=&name=", "minAge=0", "minAge=-5m",
		"severity=warning&rule=KG-LINT-01", "namespace=a&namespace=b", "unknown=1", "limit=1&limit=2", ";", "%"} {
		f.Add(uint8(i), q)
	}
	f.Fuzz(func(t *testing.T, which uint8, rawQuery string) {
		path := fuzzPaths[int(which)%len(fuzzPaths)]
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		req.URL.Path, req.URL.RawQuery = path, rawQuery
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound:
		default:
			t.Fatalf("GET %s?%s: %d %s", path, rawQuery, rec.Code, rec.Body)
		}
		if _, err := url.ParseQuery(rawQuery); err != nil && rec.Code != http.StatusBadRequest {
			t.Fatalf("GET %s?%s: %d, want 400 for a malformed query string (%v)", path, rawQuery, rec.Code, err)
		}
		if path == "/metrics" || (path == "/graph" && rec.Code == http.StatusOK && strings.Contains(rawQuery, "dot")) {
			return // not JSON
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("GET %s?%s: %d, not JSON: %v: %s", path, rawQuery, rec.Code, err, rec.Body)
		}
		if msg, _ := body["error"].(string); rec.Code != http.StatusOK && msg == "" {
			t.Fatalf("GET %s?%s: %d without an error message: %s", path, rawQuery, rec.Code, rec.Body)
		}
	})
}

// FuzzDOTQuote: any string becomes one DOT quoted string: quotes and
// backslashes escaped, no raw line break, no C0 or C1 control character
// and no bidi control a terminal would act on, and the text itself kept.
func FuzzDOTQuote(f *testing.F) {
	for _, s := range []string{"", "web", `a"b`, `a\b`, "line\nbreak", "tab\there", "\x00\x7f", "ünïcödé", "\xff\xfe", `\"`, "csi\u009b2J", "evil\u202eexe", "iso\u2066late\u2069"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := dotQuote(s)
		if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
			t.Fatalf("dotQuote(%q) = %s: not quoted", s, q)
		}
		inner := q[1 : len(q)-1]
		for i := 0; i < len(inner); i++ {
			switch c := inner[i]; {
			case c == '\\':
				if i+1 == len(inner) || !strings.ContainsRune(`"\n`+"\\", rune(inner[i+1])) {
					t.Fatalf("dotQuote(%q) = %s: a lone backslash at %d", s, q, i)
				}
				i++
			case c == '"':
				t.Fatalf("dotQuote(%q) = %s: an unescaped quote at %d", s, q, i)
			case c < 0x20 || c == 0x7f:
				t.Fatalf("dotQuote(%q) = %s: control character %#x", s, q, c)
			}
		}
		for _, r := range inner {
			if isTerminalControl(r) {
				t.Fatalf("dotQuote(%q) = %s: control character %U", s, q, r)
			}
		}
		// Printable ASCII text comes through unchanged but for escapes.
		plain := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n").Replace(inner)
		if isPrintableASCII(s) && plain != s {
			t.Fatalf("dotQuote(%q) = %s: the text changed", s, q)
		}
	})
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < 0x20 && s[i] != '\n') || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
