package cmdline

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"ASCII", "deploy/web-1 (ns) <none>", "deploy/web-1 (ns) <none>"},
		{"printable Unicode", "q <é> ◀ └─ 名前 🙂", "q <é> ◀ └─ 名前 🙂"},
		{"a backslash stays", `a\x1b\n`, `a\x1b\n`},
		{"escape sequences", "\x1b[1A\x1b[2K\x1b]0;title\x07", `\x1b[1A\x1b[2K\x1b]0;title\a`},
		{"C0 with short forms", "\a\b\f\n\r\t\v", `\a\b\f\n\r\t\v`},
		{"C0 without", "\x00\x01\x1f", `\x00\x01\x1f`},
		{"DEL", "\x7f", `\x7f`},
		{"C1", "\u0080\u0085\u009b\u009f", `\u0080\u0085\u009b\u009f`},
		{"bidi overrides and isolates", "abc\u202edef\u2066\u2069\u200e\u200f\u061c", `abc\u202edef\u2066\u2069\u200e\u200f\u061c`},
		{"invisible format characters", "a\u200bb\u00adc\ufeff", `a\u200bb\u00adc\ufeff`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`},
		{"spaces other than ASCII's", "a\u00a0b\u3000", `a\u00a0b\u3000`},
		{"tag characters", "a\U000e0041", `a\U000e0041`},
		{"private use", "\ue000", `\ue000`},
		{"not UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"a C1 byte alone", "\x9b2J", `\x9b2J`},
		{"a surrogate's bytes", "\xed\xa0\x80", `\xed\xa0\x80`},
		{"U+FFFD itself", "\ufffd", "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Printable(tt.in)
			if got != tt.want {
				t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := Printable(got); again != got {
				t.Errorf("Printable(%q) = %q: not the same twice", got, again)
			}
		})
	}
}

// FuzzPrintable: whatever the text, what Printable returns is UTF-8 that a
// terminal shows as it is, printable text comes through as it was, and
// escaping twice changes nothing.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"", "web", "\x1b[2J", "a\u202eb", "\xff", "q <é>", `\x1b`, "\u0085\u009b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Printable(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Printable(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if !unicode.IsPrint(r) {
				t.Fatalf("Printable(%q) = %q: holds %U", s, got, r)
			}
		}
		if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 && got != s {
			t.Fatalf("Printable(%q) = %q: printable text changed", s, got)
		}
		if Printable(got) != got {
			t.Fatalf("Printable(%q) = %q, and again %q", s, got, Printable(got))
		}
	})
}
