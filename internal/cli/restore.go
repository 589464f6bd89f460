package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
)

const restoreHelp = `Re-creates a deleted object from the copy kubegcd kept of it. The cleanup
rules' deletions keep a copy, and the collectors' that --deleted-copies-for
names. Only the kubegcd instance that deleted an object holds its copy.

The object comes back as it was read just before its deletion, with a new
UID. Its ownerReferences to owners that no longer exist are dropped. The
restore is refused, saying why, when an object of that name exists, when
the copy was restored already, or when the API server no longer serves its
kind. A Secret deleted without --keep-deleted-secrets has no data in its
copy: its restore is refused unless --allow-empty-secret, which makes the
Secret without data. The restore is recorded in the audit history as the
controller operator, and the rule that deleted the object leaves the
restored one alone until the rule's text changes.

KIND is a kind, plural or short name (cm, secret), in any case. With
several copies of that name, give --uid: the refusal lists them. 'get
deleted-copies' lists every copy.

` + connHelp

type restoreFlags struct {
	conn             connFlags
	namespace, uid   string
	output           string
	allowEmptySecret bool
}

func restoreCommand(e *env) *cobra.Command {
	f := &restoreFlags{}
	cmd := newCommand("restore KIND/NAME [-n NS] [--uid UID] [--allow-empty-secret] [-o text|json|yaml]",
		"re-create a deleted object from its copy", restoreHelp)
	f.conn.register(cmd.Flags())
	namespaceVar(cmd.Flags(), &f.namespace, "the object's namespace (default: search every namespace)")
	registerOutput(cmd, &f.output, "text", outJSON, outYAML)
	cmd.Flags().StringVar(&f.uid, "uid", "", "the deleted object's UID, to pick one of several copies")
	cmd.Flags().BoolVar(&f.allowEmptySecret, "allow-empty-secret", false,
		"restore a Secret whose copy holds no data (it was deleted without --keep-deleted-secrets), empty")
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return f.restore(cmd.Context(), e, args) }
	return cmd
}

func (f *restoreFlags) restore(ctx context.Context, e *env, args []string) error {
	ref, err := parseObjectRef(args)
	if err != nil {
		return err
	}
	c, err := f.conn.client(e.lookupEnv, e.stderr)
	if err != nil {
		return err
	}
	q := url.Values{"kind": {ref.kind}, "name": {ref.name}, "limit": {"1000"}}
	if f.namespace != "" {
		q.Set("namespace", f.namespace)
	}
	var list api.DeletedCopyList
	if _, err := c.GetJSON(ctx, "/deleted-copies", q, &list); err != nil {
		return err
	}
	dc, err := f.pick(e, ref, list.Items)
	if err != nil {
		return err
	}
	body, err := c.Post(ctx, "/objects/"+url.PathEscape(dc.Target.UID)+"/restore",
		api.RestoreRequest{AllowEmptySecret: f.allowEmptySecret})
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if f.output != "text" {
		return printRaw(e.stdout, f.output, body)
	}
	var res api.RestoreResult
	if err := json.Unmarshal(body, &res); err != nil {
		return fmt.Errorf("restore: the answer is not the JSON expected: %w", err)
	}
	printf(e.stdout, "%s restored as uid %s (the deleted object's uid was %s)\n", res.Target, res.Target.UID,
		res.DeletedUID)
	for _, o := range res.DroppedOwnerReferences {
		printf(e.stdout, "  ownerReference dropped: %s %s (uid %s) no longer exists\n", o.Kind, o.Name, o.UID)
	}
	if res.SecretDataEmpty {
		fmt.Fprintln(e.stdout, "  the Secret has no data: its copy was kept without it")
	}
	if res.Warning != "" {
		printf(e.stderr, "warning: %s\n", res.Warning)
	}
	return nil
}

// pick is the copy to restore: the one --uid names, else the one copy of
// that name not restored yet. Copies already restored count only when no
// other is left, so that the server says when and as what.
func (f *restoreFlags) pick(e *env, ref objectRef, copies []api.DeletedCopy) (*api.DeletedCopy, error) {
	where := ""
	if f.namespace != "" {
		where = " in namespace " + f.namespace
	}
	if len(copies) == 0 {
		return nil, fmt.Errorf("no copy of %s %q is kept%s (see 'get deleted-copies'): "+
			"only the cleanup rules' deletions and those of the collectors --deleted-copies-for names keep one",
			ref.kind, ref.name, where)
	}
	if f.uid != "" {
		for i := range copies {
			if copies[i].Target.UID == f.uid {
				return &copies[i], nil
			}
		}
		printCopies(e, copies)
		return nil, fmt.Errorf("no copy of %s %q%s has uid %s: the copies are listed above", ref.kind,
			ref.name, where, f.uid)
	}
	var open []api.DeletedCopy
	for _, dc := range copies {
		if dc.RestoredUID == "" {
			open = append(open, dc)
		}
	}
	switch len(open) {
	case 0:
		return &copies[0], nil // the newest: the server says it was restored
	case 1:
		return &open[0], nil
	}
	printCopies(e, open)
	return nil, fmt.Errorf("%d copies of %s %q%s: give --uid with one of the UIDs listed above", len(open), ref.kind,
		ref.name, where)
}

// printCopies lists copies on stderr, one a line: uid, object, when
// deleted, by what, and as what restored.
func printCopies(e *env, copies []api.DeletedCopy) {
	now := e.now()
	t := newTable("UID", "OBJECT", "DELETED", "BY", "RESTORED AS")
	for _, dc := range copies {
		by := string(dc.Controller)
		if dc.Rule != "" {
			by = "rule " + dc.Rule
		}
		t.add(dc.Target.UID, dc.Target.String(), age(&dc.TakenAt, now)+" ago", by, orNone(dc.RestoredUID))
	}
	_ = t.print(e.stderr)
}
