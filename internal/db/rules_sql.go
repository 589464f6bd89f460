package db

import (
	"fmt"
	"slices"
	"strings"
)

// ruleStatement is a rule's SELECT as the lexer read it.
type ruleStatement struct {
	// text is the one statement, without the ';' that may end it nor the
	// comments and blanks after it.
	text string
	// params are the named parameters it binds (without their ':', '@'
	// or '$'), each once, in order.
	params []string
}

// lexRule reads q as SQLite's tokenizer would, far enough to tell that it
// is one statement that starts as a query does (SELECT, WITH or VALUES)
// and which named parameters it binds. Strings, quoted identifiers and
// comments are skipped whole, so a ';' inside them ends nothing. The
// authorizer, not this, decides what the statement may read: this only
// stops a second statement, which the driver would run after the first.
func lexRule(q string) (ruleStatement, error) {
	var st ruleStatement
	i, n := 0, len(q)
	end := -1 // where the statement's last token ends
	first := ""
	semicolon := false
	for i < n {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < n && q[i+1] == '-':
			for i < n && q[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < n && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return st, fmt.Errorf("%w: a comment is not closed", ErrRuleSyntax)
			}
			i += 2 + j + 2
			continue
		}
		if semicolon {
			return st, fmt.Errorf("%w: more text after the ';' that ends the statement", ErrRuleNotOneStatement)
		}
		start := i
		switch {
		case c == ';':
			semicolon = true
			i++
			continue
		case c == '\'' || c == '"' || c == '`':
			j, ok := closeQuote(q, i, c)
			if !ok {
				return st, fmt.Errorf("%w: a quoted string or name is not closed", ErrRuleSyntax)
			}
			i = j
		case c == '[':
			j := strings.IndexByte(q[i:], ']')
			if j < 0 {
				return st, fmt.Errorf("%w: a [name] is not closed", ErrRuleSyntax)
			}
			i += j + 1
		case c == '?':
			return st, fmt.Errorf("%w: positional parameters (?) are not supported: name them (:name)", ErrRuleSyntax)
		case (c == ':' || c == '@' || c == '$') && i+1 < n && isIdentByte(q[i+1]):
			i++
			for i < n && isIdentByte(q[i]) {
				i++
			}
			if p := q[start+1 : i]; !slices.Contains(st.params, p) {
				st.params = append(st.params, p)
			}
		case isIdentByte(c):
			for i < n && (isIdentByte(q[i]) || q[i] == '$') {
				i++
			}
			if first == "" {
				first = strings.ToUpper(q[start:i])
			}
		default:
			i++
		}
		if first == "" {
			first = q[start:i]
		}
		end = i
	}
	if end < 0 {
		return st, fmt.Errorf("%w: the statement is empty", ErrRuleSyntax)
	}
	switch first {
	case "SELECT", "WITH", "VALUES":
	default:
		return st, fmt.Errorf("%w: it starts with %q, not SELECT or WITH", ErrRuleNotSelect, first)
	}
	st.text = q[:end]
	return st, nil
}

// closeQuote returns the index after the quote that closes the one at i;
// a doubled quote inside stands for itself.
func closeQuote(q string, i int, quote byte) (int, bool) {
	for j := i + 1; j < len(q); j++ {
		if q[j] != quote {
			continue
		}
		if j+1 < len(q) && q[j+1] == quote {
			j++
			continue
		}
		return j + 1, true
	}
	return 0, false
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// RuleStatement returns a rule's one SELECT without the ';' and the
// comments that may end it, or why it is not one: for a caller that
// embeds it in a larger statement (as the rules' exclusions do).
func RuleStatement(q string) (string, error) {
	st, err := lexRule(q)
	return st.text, err
}
