package http

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubegcd/kubegcd/internal/api"
)

// query reads and validates query parameters; the first problem wins.
// Defaults, limits and enums come from the operation the router matched.
type query struct {
	v   url.Values
	op  *api.Operation
	err error
}

// newQuery parses r's query string. r.URL.Query() drops the pairs it
// cannot parse ("limit=5;drop", "%zz") and keeps the rest, which would
// turn a filter the client sent into none; here they are the request's
// error.
func newQuery(r *http.Request) *query {
	v, err := url.ParseQuery(r.URL.RawQuery)
	q := &query{v: v, op: operationOf(r)}
	if err != nil {
		q.fail("malformed query string: %v", err)
	}
	return q
}

func (q *query) fail(format string, args ...any) {
	if q.err == nil {
		q.err = fmt.Errorf(format, args...)
	}
}

// known rejects parameters the operation does not take, so a typo is an
// error rather than a silently ignored filter.
func (q *query) known() {
	for k := range q.v {
		if p := q.op.Param(k); p == nil || p.In != "query" {
			q.fail("unknown query parameter %q", k)
		}
	}
}

// param is the operation's query parameter name. The handlers ask only for
// their own: a missing one is a mistake of the code.
func (q *query) param(name string) *api.Param {
	p := q.op.Param(name)
	if p == nil {
		panic(fmt.Sprintf("%s %s has no parameter %q", q.op.Method, q.op.Path, name))
	}
	return p
}

func (q *query) str(name string) string {
	if len(q.v[name]) > 1 {
		q.fail("query parameter %q given more than once", name)
	}
	return q.v.Get(name)
}

// enum reads one of the parameter's enum values, or its default when it is
// absent.
func (q *query) enum(name string) string {
	p := q.param(name)
	s := q.str(name)
	if s == "" {
		d, _ := p.Default.(string)
		return d
	}
	if !slices.Contains(p.Enum, s) {
		q.fail("invalid %s %q", name, s)
	}
	return s
}

// token reads a kind or a rule id: letters, digits, '-' and '.', at most
// 100 characters. Anything else cannot name one, and is an error rather
// than an empty answer.
func (q *query) token(name string) string {
	s := q.str(name)
	if s != "" && !tokenRE.MatchString(s) {
		q.fail("invalid %s %q: want letters, digits, '-' and '.'", name, s)
	}
	return s
}

var tokenRE = regexp.MustCompile(api.TokenPattern)

// resourceRef reads a kind as kubectl takes it (a kind, a resource or a
// short name, alone or followed by "." and its group) in token's
// characters; a group is a DNS subdomain of up to 253, so it may be longer
// than a token.
func (q *query) resourceRef(name string) string {
	s := q.str(name)
	if s != "" && !resourceRefRE.MatchString(s) {
		q.fail("invalid %s %q: want a kind, a resource or a short name, alone or followed by . and its group", name, s)
	}
	return s
}

var resourceRefRE = regexp.MustCompile(api.ResourceRefPattern)

// apiVersion reads an apiVersion and returns its group: group/version, or
// v1 alone for the core group, as Kubernetes could serve them (a group is
// a DNS subdomain, a version a DNS label; the core group has only v1).
// Anything else names nothing, and is an error rather than an empty or,
// worse, unfiltered answer.
func (q *query) apiVersion(name string) (group string, ok bool) {
	s := q.str(name)
	if s == "" {
		return "", false
	}
	group, version, grouped := strings.Cut(s, "/")
	if !grouped {
		group, version = "", s
	}
	switch {
	case !grouped && version != "v1":
		q.fail("invalid %s %q: the core group has only v1; want group/version, such as apps/v1, or v1", name, s)
	case grouped && len(validation.IsDNS1123Subdomain(group)) > 0, grouped && len(validation.IsDNS1035Label(version)) > 0:
		q.fail("invalid %s %q: want group/version, such as apps/v1, or v1 for the core group", name, s)
	}
	return group, true
}

// limit reads ?limit= within the operation's bounds, or its default.
func (q *query) limit() int {
	return q.limitUpTo(q.param("limit").Max)
}

// limitUpTo reads ?limit= up to max, which may be lower than the
// parameter's own maximum.
func (q *query) limitUpTo(max int) int {
	p := q.param("limit")
	s := q.str("limit")
	if s == "" {
		return p.Default.(int)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < p.Min || n > max {
		q.fail("invalid limit %q: want a number from %d to %d", s, p.Min, max)
	}
	return n
}

func (q *query) time(name string) time.Time {
	s := q.str(name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.fail("invalid %s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", name, s)
	}
	return t
}
