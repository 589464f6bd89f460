package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
)

const whyHelp = `Explains in words what kubegcd knows of one object: its owners and their
state, its dependents, the decisions pending about it and why it is, or is
not, pending, what holds its deletion, lint findings about its
ownerReferences, what it references and what references it by name, the
cleanup rules that match it, and the last audit rows.

KIND is a kind, plural or short name (deploy, cm, po), in any case, with
.group when several API groups serve it (deployments.apps). Without -n,
every namespace is searched, and a name found in several is an error.
-o json or yaml prints the API's /objects/{uid} answer.

` + connHelp

// whyMaxDependents is how many dependents why names; the count is whole.
const whyMaxDependents = 10

func whyCommand(e *env) *cobra.Command {
	f := &objectFlags{}
	cmd := newCommand("why KIND/NAME [-n NS] [-o text|json|yaml]", "explain in words why an object is, or is not, collected", whyHelp)
	f.register(cmd, "text", outJSON, outYAML)
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return f.why(cmd.Context(), e, args) }
	return cmd
}

func (f *objectFlags) why(ctx context.Context, e *env, args []string) error {
	c, o, err := f.resolveObject(ctx, e, args)
	if err != nil {
		return err
	}
	var d api.ObjectDetail
	body, err := c.GetJSON(ctx, "/objects/"+url.PathEscape(o.UID), nil, &d)
	if err != nil {
		return err
	}
	if f.output != "text" {
		return printRaw(e.stdout, f.output, body)
	}
	return printWhy(e.stdout, &d, e.now())
}

func printWhy(w io.Writer, d *api.ObjectDetail, now time.Time) error {
	o := &d.Object
	printf(w, "%s (%s)\n", o.Target(), o.APIVersion)
	printf(w, "  uid:      %s\n", o.UID)
	fmt.Fprintf(w, "  created:  %s\n", ago(o.CreationTimestamp, now))
	if o.DeletionTimestamp != nil {
		fmt.Fprintf(w, "  deleting: since %s\n", ago(o.DeletionTimestamp, now))
	}
	if len(o.Finalizers) > 0 {
		printf(w, "  finalizers: %s\n", strings.Join(o.Finalizers, ", "))
	}
	printf(w, "\n%s\n", d.Why)

	fmt.Fprintln(w, "\nOwners:")
	if len(d.Owners) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, st := range d.Owners {
		name := st.Kind + " " + st.Name
		if st.Namespace != "" {
			name = st.Kind + " " + st.Namespace + "/" + st.Name
		}
		printf(w, "  %s: %s\n", name, st.State)
	}

	fmt.Fprintf(w, "\nDependents: %d", len(d.Dependents))
	if d.DependentsTruncated {
		fmt.Fprint(w, " or more")
	}
	fmt.Fprintln(w)
	for i, dep := range d.Dependents {
		if i == whyMaxDependents {
			fmt.Fprintf(w, "  … and %d more ('tree' shows them all)\n", len(d.Dependents)-i)
			break
		}
		flag := ""
		if dep.BlockOwnerDeletion {
			flag = " (blockOwnerDeletion)"
		}
		printf(w, "  %s%s\n", api.Target{Kind: dep.Kind, Namespace: dep.Namespace, Name: dep.Name}, flag)
	}

	printReferences(w, d, now)

	if len(d.Pending) > 0 {
		fmt.Fprintln(w, "\nPending decisions:")
		for _, p := range d.Pending {
			wait := ""
			if p.NotBefore != nil && p.NotBefore.After(now) {
				wait = ", waits until " + p.NotBefore.Sub(now).Round(time.Second).String() + " from now"
			}
			printf(w, "  %s: %s (rule %s, since %s%s): %s\n", p.Controller, p.Action, p.Rule, ago(&p.Since, now), wait, p.Reason)
		}
	}

	if s := d.Stuck; s != nil {
		// The explanation is in Why already.
		printf(w, "\nDeletion: %s, requested %s\n", s.State, ago(&s.DeletionRequested, now))
		if len(s.Blockers) > 0 {
			fmt.Fprintln(w, "  Blocked by:")
			printBlockers(w, s.Blockers, "    ")
		}
	}

	if len(d.Lint) > 0 {
		fmt.Fprintln(w, "\nLint findings:")
		for _, fd := range d.Lint {
			printf(w, "  %s %s (%s): %s\n", fd.Rule, fd.Name, fd.Severity, fd.Message)
		}
	}

	printRestored(w, d, now)

	if len(d.Rules) > 0 {
		fmt.Fprintln(w, "\nCleanup rules that match it:")
		for _, m := range d.Rules {
			finding := ""
			if m.Finding {
				finding = " (finding)"
			}
			printf(w, "  %s%s, for %s: %s\n", m.Rule, finding, age(&m.Since, now), m.Reason)
		}
	}

	fmt.Fprintln(w, "\nRecent audit:")
	if len(d.RecentAudit) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	t := newTable("  AGE", "CONTROLLER", "ACTION", "OUTCOME", "BY", "RULE", "REASON")
	for _, r := range d.RecentAudit {
		t.add("  "+age(&r.Time, now), string(r.Controller), string(r.Action), string(r.Outcome), r.Instance, r.Rule,
			r.Reason)
	}
	return t.print(w)
}

// printBlockers prints the chain of blockers as an indented list.
func printBlockers(w io.Writer, bs []api.Blocker, indent string) {
	for _, b := range bs {
		text := blockerText(b)
		if b.Reason != "" && text != b.Reason {
			text += ": " + b.Reason
		}
		printf(w, "%s- %s\n", indent, text)
		printBlockers(w, b.Blockers, indent+"  ")
	}
}

// printReferences prints what the object references by name and what
// references it, each section only when there is something to say.
func printReferences(w io.Writer, d *api.ObjectDetail, now time.Time) {
	if len(d.References) > 0 {
		fmt.Fprintf(w, "\nReferences: %d", len(d.References))
		if d.ReferencesTruncated {
			fmt.Fprint(w, " or more")
		}
		fmt.Fprintln(w)
		for _, r := range d.References {
			kind, name := r.Kind, r.Name
			if r.Group != "" {
				kind += "." + r.Group
			}
			if r.Prefix {
				name += "<ordinal>"
			}
			var state []string
			if !r.Exists {
				state = append(state, "missing")
			}
			if r.Optional {
				state = append(state, "optional")
			}
			note := ""
			if len(state) > 0 {
				note = ": " + strings.Join(state, ", ")
			}
			printf(w, "  %s (%s)%s\n", api.Target{Kind: kind, Namespace: r.Namespace, Name: name}, r.Via, note)
		}
	}
	switch {
	case len(d.ReferencedBy) > 0:
		fmt.Fprintf(w, "\nReferenced by: %d", len(d.ReferencedBy))
		if d.ReferencedByTruncated {
			fmt.Fprint(w, " or more")
		}
		fmt.Fprintln(w)
		for i, r := range d.ReferencedBy {
			if i == whyMaxDependents {
				fmt.Fprintf(w, "  … and %d more (-o json lists them)\n", len(d.ReferencedBy)-i)
				break
			}
			printf(w, "  %s (%s)\n", api.Target{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}, r.Via)
		}
	case d.LastReferenced != nil:
		fmt.Fprintf(w, "\nReferenced by: nothing now; last referenced %s\n", ago(d.LastReferenced, now))
	}
}

// printRestored says which deleted object a restore made this one from,
// and which rules leave it alone for that; nothing when it was not
// restored.
func printRestored(w io.Writer, d *api.ObjectDetail, now time.Time) {
	if d.RestoredFrom == nil && len(d.SparedBy) == 0 {
		return
	}
	fmt.Fprintln(w, "\nRestored:")
	if r := d.RestoredFrom; r != nil {
		by := string(r.DeletedBy)
		if r.Rule != "" {
			by = "rule " + r.Rule
		}
		printf(w, "  from uid %s, deleted by %s %s ago; restored %s ago by %s\n", r.DeletedUID, by, age(&r.TakenAt, now),
			age(r.RestoredAt, now), orNone(r.RestoredBy))
	}
	for _, s := range d.SparedBy {
		printf(w, "  rule %s leaves it alone while its text hashes to %s (since %s ago)\n", s.Rule, s.RuleHash,
			age(&s.Since, now))
	}
}
