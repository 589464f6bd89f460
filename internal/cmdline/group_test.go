package cmdline

import (
	"testing"

	"github.com/spf13/pflag"
)

// TestAddToAnnotatesGroups: each flag AddTo adds carries its group's name,
// for the tools that document the flags in groups.
func TestAddToAnnotatesGroups(t *testing.T) {
	var groups NamedFlagSets
	groups.FlagSet("cluster").String("kubeconfig", "", "the kubeconfig")
	groups.FlagSet("leader election").Bool("leader-elect", true, "run for a Lease")
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	groups.AddTo(fs)
	for flag, want := range map[string]string{"kubeconfig": "cluster", "leader-elect": "leader election"} {
		f := fs.Lookup(flag)
		if f == nil {
			t.Fatalf("--%s was not added", flag)
		}
		if got := f.Annotations[GroupAnnotation]; len(got) != 1 || got[0] != want {
			t.Errorf("--%s: group annotation %q, want [%q]", flag, got, want)
		}
	}
}
