package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
)

const cascadeHelp = `Previews what deleting an object with a propagation policy would take
with it, from kubegcd's mirror alone (nothing is deleted): every object the
garbage collector would delete, orphan or leave, how deep in the chain, and
which dependents would hold a foreground deletion.

-o json or yaml prints the API's /objects/{uid}/cascade answer.

` + connHelp

func cascadeCommand(e *env) *cobra.Command {
	f := &objectFlags{}
	cmd := newCommand("cascade KIND/NAME [-n NS] [--propagation background|foreground|orphan] [-o table|wide|json|yaml]",
		"what deleting an object would take with it", cascadeHelp)
	f.register(cmd, outTable, outWide, outJSON, outYAML)
	propagation := "background"
	policies := []string{"background", "foreground", "orphan"}
	choiceVar(cmd.Flags(), &propagation, "propagation", policies, "the delete's propagation policy: "+orList(policies))
	_ = cmd.RegisterFlagCompletionFunc("propagation", cobra.FixedCompletions(policies, cobra.ShellCompDirectiveNoFileComp))
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return f.cascade(cmd.Context(), e, propagation, args) }
	return cmd
}

func (f *objectFlags) cascade(ctx context.Context, e *env, propagation string, args []string) error {
	c, o, err := f.resolveObject(ctx, e, args)
	if err != nil {
		return err
	}
	var p api.Cascade
	body, err := c.GetJSON(ctx, "/objects/"+url.PathEscape(o.UID)+"/cascade", url.Values{"propagation": {propagation}}, &p)
	if err != nil {
		return err
	}
	if f.output == outJSON || f.output == outYAML {
		return printRaw(e.stdout, f.output, body)
	}
	return printCascade(e.stdout, &p, o, propagation, f.output == outWide)
}

func printCascade(w io.Writer, p *api.Cascade, o *api.Object, propagation string, wide bool) error {
	printf(w, "Deleting %s with propagation %s would touch %s", o.Target(), propagation, count(p.Total, "object", "objects"))
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(p.ByKind)) {
		for _, action := range slices.Sorted(maps.Keys(p.ByKind[kind])) {
			n := p.ByKind[kind][action]
			parts = append(parts, fmt.Sprintf("%s %s", action, count(n, kind, kindPlural(kind))))
		}
	}
	if len(parts) > 0 {
		printf(w, ": %s", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, ".")
	if p.Truncated {
		fmt.Fprintln(w, "The preview is cut: the object has more dependents than the API looked at.")
	}
	if len(p.Items) > 0 {
		header := []string{"DEPTH", "ACTION", "KIND", "NAMESPACE", "NAME", "RULE"}
		if wide {
			header = append(header, "PROPAGATION", "UID", "REASON")
		}
		t := newTable(header...)
		for _, it := range p.Items {
			cells := []string{strconv.Itoa(it.Depth), string(it.Action), it.Target.Kind, orNone(it.Target.Namespace), it.Target.Name, orNone(it.Rule)}
			if wide {
				cells = append(cells, orNone(it.Propagation), it.Target.UID, it.Reason)
			}
			t.add(cells...)
		}
		fmt.Fprintln(w)
		if err := t.print(w); err != nil {
			return err
		}
	}
	if len(p.BlockedBy) > 0 {
		fmt.Fprintln(w, "\nA foreground deletion would wait for:")
		for _, b := range p.BlockedBy {
			printf(w, "  %s (holds %s): %s\n", b.Target, b.Owner, b.Reason)
		}
	}
	return nil
}
