package cli

import (
	"strings"
	"sync/atomic"
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

// FuzzHumanOutputHasNoControl: whatever names, kinds, Lease holders and
// messages the answers hold, what the commands print for people (tables,
// the tree, why's prose, status, error lines, completions) holds no rune
// a terminal would act on or not show, but the newline ending each line
// and the tab between a completion and its description; and the tree
// keeps one line per object. Each input runs one of humanCommands.
func FuzzHumanOutputHasNoControl(f *testing.F) {
	for _, s := range [][4]string{
		{"web", "ConfigMap", "kubegcd-0_1", "owner u-0 is gone"},
		{"web\x1b[1A\x1b[2K\nfake-row", "Kind\x1b]0;pwned\x07\u202e", "holder\x1b[31m\u009b2J", "boom\r\x1b[2Jgone\u2028next"},
		{"\t", "\x00", "\xff\xfe", "a\u200bb\ufeff"},
		{"q\u2028<é>", "名前", "\U000e0041", `\x1b`},
	} {
		for c := range humanCommands {
			f.Add(uint8(c), s[0], s[1], s[2], s[3])
		}
	}
	var h atomic.Pointer[hostile]
	h.Store(&hostile{})
	srv := hostileServer(f, &h)
	f.Fuzz(func(t *testing.T, command uint8, name, kind, holder, msg string) {
		h.Store(&hostile{name: name, kind: kind, holder: holder, msg: msg})
		checkHuman(t, srv, humanCommands[int(command)%len(humanCommands)])
	})
}
