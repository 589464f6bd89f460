package cli

import (
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// FuzzParseObjectRef: any one or two arguments are an object (a kind and a
// name, neither empty, the name without a slash, both taken from the
// arguments as given) or a usage error, never a panic.
func FuzzParseObjectRef(f *testing.F) {
	for _, s := range [][2]string{{"deploy/web", ""}, {"deploy", "web"}, {"/web", ""}, {"deploy/", ""}, {"a/b/c", ""},
		{"deployments.apps/web", ""}, {"cm", "a/b"}, {"", ""}, {"deploy/web", "extra"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		args := []string{a}
		if b != "" {
			args = append(args, b)
		}
		ref, err := parseObjectRef(args)
		if err != nil {
			if _, ok := err.(*cmdline.UsageError); !ok {
				t.Fatalf("%q: %T %v, want a usage error", args, err, err)
			}
			return
		}
		if ref.kind == "" || ref.name == "" || strings.Contains(ref.name, "/") {
			t.Fatalf("%q parsed to %+v", args, ref)
		}
		if joined := strings.Join(args, "/"); joined != ref.kind+"/"+ref.name {
			t.Fatalf("%q parsed to %+v: not the arguments' own kind and name", args, ref)
		}
	})
}
