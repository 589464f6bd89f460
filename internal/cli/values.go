package cli

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubegcd/kubegcd/internal/api"
)

// A flag's value is checked as pflag parses it, so that a bad one is a
// usage error naming the flag and what it wants (cmdline words pflag's
// errors so) before any request: never the server's 400, or a request
// that fails on something else first.

// choice is a flag whose value is one of a few words.
type choice struct {
	p       *string
	allowed []string
}

func (c *choice) String() string { return *c.p }
func (c *choice) Type() string   { return "string" }
func (c *choice) Set(v string) error {
	if !slices.Contains(c.allowed, v) {
		return fmt.Errorf("want %s", orList(c.allowed))
	}
	*c.p = v
	return nil
}

// choiceVar registers a flag that takes one of allowed, or stays empty
// when not given.
func choiceVar(fs *pflag.FlagSet, p *string, name string, allowed []string, usage string) {
	fs.Var(&choice{p, allowed}, name, usage)
}

// checked is a text flag that only some values are, which ok tells: Set
// refuses the others, saying want.
type checked struct {
	p    *string
	typ  string
	want string
	ok   func(string) bool
}

func (c *checked) String() string { return *c.p }
func (c *checked) Type() string   { return c.typ }
func (c *checked) Set(v string) error {
	if !c.ok(v) {
		return errors.New(c.want)
	}
	*c.p = v
	return nil
}

// checkedVar registers a checked flag; typ names its value in the help.
func checkedVar(fs *pflag.FlagSet, p *string, name, shorthand, typ, usage, want string, ok func(string) bool) {
	fs.VarP(&checked{p: p, typ: typ, want: want, ok: ok}, name, shorthand, usage)
}

// namespaceVar registers -n/--namespace: a namespace's name, or "" for
// every namespace.
func namespaceVar(fs *pflag.FlagSet, p *string, usage string) {
	checkedVar(fs, p, "namespace", "n", "string", usage,
		"want a namespace's name: lower-case letters, digits and '-', at most 63",
		func(v string) bool { return v == "" || len(validation.IsDNS1123Label(v)) == 0 })
}

var tokenRE = regexp.MustCompile(api.TokenPattern)

// isToken reports whether v can name a kind or a rule, as the API takes
// them (api.TokenPattern).
func isToken(v string) bool { return tokenRE.MatchString(v) }

// isMinAge reports whether v is a duration of at least 0, as GET /stuck
// takes minAge.
func isMinAge(v string) bool {
	d, err := time.ParseDuration(v)
	return err == nil && d >= 0
}

// isPast reports whether v is what sinceTime reads: a duration back from
// now, or a time.
func isPast(v string) bool {
	_, err := sinceTime(v, time.Now())
	return err == nil
}

// serverWant is what --server and $KUBEGCD_SERVER want.
const serverWant = "want http://HOST:PORT or https://HOST:PORT"

// isServerURL reports whether v is a URL the client can ask.
func isServerURL(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
