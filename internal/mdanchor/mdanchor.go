// Package mdanchor names Markdown headings as GitHub links to them, so
// that the docs generated from the code, the docs' link checks and the
// UI's links to the rules agree on one rule.
package mdanchor

import (
	"strings"
	"unicode"
)

// Of is the id GitHub gives a heading: lower case, code marks and
// punctuation but hyphens and underscores dropped, spaces made hyphens.
func Of(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
