package cli

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// objectRef is an object as kubectl names one: KIND/NAME or KIND NAME,
// KIND being a kind, plural or short name, alone or with .group.
type objectRef struct{ kind, name string }

func parseObjectRef(args []string) (objectRef, error) {
	var r objectRef
	switch len(args) {
	case 1:
		var ok bool
		if r.kind, r.name, ok = strings.Cut(args[0], "/"); !ok {
			return r, usagef("%q: want KIND/NAME or KIND NAME, such as deploy/web", args[0])
		}
	case 2:
		r.kind, r.name = args[0], args[1]
		if strings.Contains(r.kind, "/") {
			return r, usagef("%q %q: want KIND/NAME or KIND NAME, not both", args[0], args[1])
		}
	case 0:
		return r, usagef("no object given: want KIND/NAME or KIND NAME, such as deploy/web")
	default:
		return r, usagef("too many arguments %q: want KIND/NAME or KIND NAME", args)
	}
	if r.kind == "" || r.name == "" || strings.Contains(r.name, "/") {
		return r, usagef("%q: want KIND/NAME or KIND NAME, such as deploy/web", strings.Join(args, " "))
	}
	return r, nil
}

// resolve finds the one object ref names, in namespace when given, else in
// any: a name several namespaces or API groups hold is an error that says
// how to pick one, as is a kind the mirror does not know.
func resolve(ctx context.Context, c *Client, prog string, ref objectRef, namespace string) (*api.Object, error) {
	q := url.Values{"kind": {ref.kind}, "name": {ref.name}}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	var found api.Lookup
	if _, err := c.GetJSON(ctx, "/objects", q, &found); err != nil {
		return nil, err
	}
	if len(found.Items) == 0 && namespace != "" {
		if err := namespaceInMirror(ctx, c, namespace); err != nil {
			return nil, err
		}
	}
	if len(found.Items) == 0 {
		// Without the name: is the kind unknown, or the object?
		var any api.Lookup
		if _, err := c.GetJSON(ctx, "/objects", url.Values{"kind": {ref.kind}, "limit": {"1"}}, &any); err != nil {
			return nil, err
		}
		if len(any.Items) == 0 {
			return nil, fmt.Errorf("unknown kind %q: no resource in kubegcd's mirror has that kind, plural or short name, "+
				"or none of its objects exist (see '%s status' for the resources mirrored)", ref.kind, prog)
		}
		where := "in any namespace"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		return nil, fmt.Errorf("%s %q not found %s", any.Items[0].Kind, ref.name, where)
	}
	var groups, namespaces []string
	for _, o := range found.Items {
		group, _, ok := strings.Cut(o.APIVersion, "/")
		if !ok {
			group = "core"
		}
		if !slices.Contains(groups, group) {
			groups = append(groups, group)
		}
		if !slices.Contains(namespaces, o.Namespace) {
			namespaces = append(namespaces, o.Namespace)
		}
	}
	if len(groups) > 1 {
		example := groups[0]
		if example == "core" {
			example = groups[1]
		}
		return nil, fmt.Errorf("%q matches %q in several API groups (%s): give KIND.group, such as %s.%s/%s",
			ref.kind, ref.name, strings.Join(groups, ", "), strings.ToLower(found.Items[0].Kind), example, ref.name)
	}
	if len(namespaces) > 1 {
		return nil, fmt.Errorf("%s %q exists in several namespaces (%s): give -n NAMESPACE",
			found.Items[0].Kind, ref.name, strings.Join(namespaces, ", "))
	}
	return &found.Items[0], nil
}

// namespaceInMirror returns an error naming the namespaces ns may mean
// (those completion offers) when the mirror holds namespaces but not ns;
// nil when it holds ns, or none at all (kubegcd may not list them).
func namespaceInMirror(ctx context.Context, c *Client, ns string) error {
	var found api.Lookup
	if _, err := c.GetJSON(ctx, "/objects", url.Values{"kind": {"namespaces"}, "name": {ns}}, &found); err != nil {
		return err
	}
	if len(found.Items) > 0 {
		return nil
	}
	var all api.Lookup
	q := url.Values{"kind": {"namespaces"}, "limit": {strconv.Itoa(completionNames)}}
	if _, err := c.GetJSON(ctx, "/objects", q, &all); err != nil {
		return err
	}
	if len(all.Items) == 0 {
		return nil
	}
	names := make([]string, len(all.Items))
	for i, o := range all.Items {
		names[i] = o.Name
	}
	return fmt.Errorf("namespace %q not found in kubegcd's mirror%s", ns, cmdline.DidYouMean(ns, names))
}

// objectFlags are the flags of the commands about one object.
type objectFlags struct {
	conn              connFlags
	namespace, output string
}

// register registers the flags on cmd: -o takes one of outputs, the
// first being the default.
func (f *objectFlags) register(cmd *cobra.Command, outputs ...string) {
	f.conn.register(cmd.Flags())
	namespaceVar(cmd.Flags(), &f.namespace, "the object's namespace (default: search every namespace)")
	registerOutput(cmd, &f.output, outputs...)
}

// resolveObject is the start of every command about one object: the
// reference parsed, a client, and the object found.
func (f *objectFlags) resolveObject(ctx context.Context, e *env, args []string) (*Client, *api.Object, error) {
	ref, err := parseObjectRef(args)
	if err != nil {
		return nil, nil, err
	}
	c, err := f.conn.client(e.lookupEnv, e.stderr)
	if err != nil {
		return nil, nil, err
	}
	o, err := resolve(ctx, c, e.prog, ref, f.namespace)
	return c, o, err
}
