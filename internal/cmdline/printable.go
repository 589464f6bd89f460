package cmdline

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable is s with every rune a terminal would act on, or would not
// show, spelled out as Go spells it in a quoted string: C0 and C1 control
// characters (\x1b, \n, \u009b), format characters such as the bidi
// override \u202e, other runes unicode.IsPrint refuses (spaces other than
// ASCII's among them), and bytes that are not UTF-8 (\xff).
//
// Names, kinds and messages printed for people pass through it: Kubernetes
// does not validate an ownerReference's kind or name, nor a Lease's holder,
// and a server may answer anything. Printable text, a backslash included,
// is left as it is, so ordinary names read as they are and escaping twice
// changes nothing; what a script reads (-o json, -o yaml) keeps the bytes.
func Printable(s string) string {
	i := 0
	for i < len(s) && s[i] >= ' ' && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s // printable ASCII: the common case
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
