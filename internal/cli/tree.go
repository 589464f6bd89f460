package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/cmdline"
)

const treeHelp = `Draws an object's ownership tree, as kubectl tree does: its owners above
it, down to the object, then everything it owns, each with its state
(exists, missing, being deleted, deleting dependents) and the flags of the
ownerReference that ties it to the line above (controller,
blockOwnerDeletion). Coloured on a terminal unless NO_COLOR is set.

--at TIME draws the tree as kubegcd's history shows it then: an RFC 3339
time, or a duration back from now (10m); a time in the future is refused,
and an object that did not exist then is an error, as a name kubectl does
not find is. -o json or yaml prints the API's
/graph answer, -o dot its GraphViz form (the shape of kube-controller-manager's
garbage collector dump).

` + connHelp

func treeCommand(e *env) *cobra.Command {
	f := &objectFlags{}
	cmd := newCommand("tree KIND/NAME [-n NS] [-o tree|json|yaml|dot] [--at TIME]", "an object's owners up and dependents down", treeHelp)
	f.register(cmd, outTree, outJSON, outYAML, outDOT)
	var at string
	checkedVar(cmd.Flags(), &at, "at", "", "string", "draw the tree as it stood then: an RFC 3339 time, or a duration ago such as 1h",
		"want an RFC 3339 time, or a duration ago such as 1h", isPast)
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return f.tree(cmd.Context(), e, at, args) }
	return cmd
}

func (f *objectFlags) tree(ctx context.Context, e *env, at string, args []string) error {
	q := url.Values{}
	var when time.Time
	if at != "" {
		t, err := sinceTime(at, e.now())
		if err != nil {
			return usagef("invalid --at %q: want an RFC 3339 time, or a duration ago such as 1h", at)
		}
		if t.After(e.now()) {
			return usagef("invalid --at %q: it is in the future, and history only knows the past", at)
		}
		when = t
		q.Set("at", t.Format(time.RFC3339Nano))
	}
	c, o, err := f.resolveObject(ctx, e, args)
	if err != nil {
		return err
	}
	q.Set("uid", o.UID)
	if f.output == outDOT {
		q.Set("format", "dot")
	}
	body, err := c.Get(ctx, "/graph", q)
	if err != nil {
		return err
	}
	if f.output == outDOT {
		_, err := e.stdout.Write(body)
		return err
	}
	if f.output != outTree {
		return printRaw(e.stdout, f.output, body)
	}
	var g api.Graph
	if err := json.Unmarshal(body, &g); err != nil {
		return fmt.Errorf("GET /graph: the answer is not the JSON expected: %w", err)
	}
	if !slices.ContainsFunc(g.Nodes, func(n api.GraphNode) bool { return n.UID == o.UID }) {
		// An object without owners or dependents is no vertex of the graph:
		// it is drawn as the mirror shows it now, or, with --at, as its
		// history shows it then, if it existed then.
		n := api.GraphNode{UID: o.UID, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace,
			Name: o.Name, BeingDeleted: o.DeletionTimestamp != nil}
		if !when.IsZero() {
			if n, err = nodeAt(ctx, c, o, when); err != nil {
				return err
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	if g.Truncated {
		fmt.Fprintln(e.stderr, "warning: the graph is larger than the API's limit; the tree is cut")
	}
	return printTree(e.stdout, &g, o.UID, useColor(e.stdout, e.lookupEnv))
}

// nodeAt is o as its history shows it at time at, or an error saying that
// it did not exist then.
func nodeAt(ctx context.Context, c *Client, o *api.Object, at time.Time) (api.GraphNode, error) {
	var h api.ObjectHistory
	if _, err := c.GetJSON(ctx, "/objects/"+url.PathEscape(o.UID)+"/history", nil, &h); err != nil {
		return api.GraphNode{}, err
	}
	name := o.Kind + " " + o.Name
	if o.Namespace != "" {
		name = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	i := -1 // the last change at or before at
	for j, it := range h.Items {
		if !it.Time.After(at) {
			i = j
		}
	}
	switch {
	case len(h.Items) == 0:
		return api.GraphNode{}, fmt.Errorf("%s: kubegcd's history does not know it at %s", name, stamp(at))
	case i < 0:
		return api.GraphNode{}, fmt.Errorf("%s did not exist at %s: kubegcd's history first saw it at %s",
			name, stamp(at), stamp(h.Items[0].Time))
	case h.Items[i].Event == api.HistoryDeleted:
		return api.GraphNode{}, fmt.Errorf("%s did not exist at %s: it was deleted at %s", name, stamp(at), stamp(h.Items[i].Time))
	}
	it := h.Items[i]
	n := api.GraphNode{UID: o.UID, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name,
		BeingDeleted: it.DeletionTimestamp != nil}
	n.DeletingDependents = n.BeingDeleted && slices.Contains(it.Finalizers, "foregroundDeletion")
	return n, nil
}

// treeLine is one line of the tree, before alignment.
type treeLine struct {
	namespace, name, state, edge string
	root                         bool
}

// buildTree lays the graph out from root's topmost owners down: along the
// way to root only the owners on it, from root every dependent. An object
// with two owners on the way shows under each, as kubectl tree does.
func buildTree(g *api.Graph, root string) []treeLine {
	nodes := map[string]api.GraphNode{}
	for _, n := range g.Nodes {
		nodes[n.UID] = n
	}
	owners := map[string][]api.GraphEdge{}
	dependents := map[string][]api.GraphEdge{}
	for _, e := range g.Edges {
		owners[e.Dependent] = append(owners[e.Dependent], e)
		dependents[e.Owner] = append(dependents[e.Owner], e)
	}
	// Kind and name are the ownerReference's, which Kubernetes does not
	// validate: a newline in one must not start a line of its own.
	label := func(uid string) string {
		n := nodes[uid]
		return cmdline.Printable(n.Kind + "/" + n.Name)
	}
	for _, es := range dependents {
		slices.SortFunc(es, func(a, b api.GraphEdge) int {
			return cmp.Or(cmp.Compare(label(a.Dependent), label(b.Dependent)), cmp.Compare(a.Dependent, b.Dependent))
		})
	}
	// root's transitive owners, and the topmost of them.
	above := map[string]bool{}
	var tops []string
	var up func(uid string)
	up = func(uid string) {
		if len(owners[uid]) == 0 {
			if !slices.Contains(tops, uid) {
				tops = append(tops, uid)
			}
			return
		}
		for _, e := range owners[uid] {
			if !above[e.Owner] && e.Owner != root {
				above[e.Owner] = true
				up(e.Owner)
			}
		}
	}
	up(root)
	if len(tops) == 0 {
		tops = []string{root} // a cycle through root: start at root
	}
	slices.SortFunc(tops, func(a, b string) int { return cmp.Compare(label(a), label(b)) })

	var lines []treeLine
	onPath := map[string]bool{}
	var walk func(uid string, edge *api.GraphEdge, prefix, branch string, below bool)
	walk = func(uid string, edge *api.GraphEdge, prefix, branch string, below bool) {
		n := nodes[uid]
		below = below || uid == root
		l := treeLine{namespace: cmdline.Printable(n.Namespace), name: prefix + branch + label(uid), state: nodeState(n), root: uid == root}
		if l.root {
			l.name += " ◀" // the object asked about, also without colours
		}
		if edge != nil {
			l.edge = edgeFlags(*edge)
		}
		if onPath[uid] {
			lines = append(lines, treeLine{namespace: l.namespace, name: l.name + " (cycle)", state: l.state, edge: l.edge})
			return
		}
		lines = append(lines, l)
		onPath[uid] = true
		defer delete(onPath, uid)
		var next []api.GraphEdge
		for _, e := range dependents[uid] {
			if below || above[e.Dependent] || e.Dependent == root {
				next = append(next, e)
			}
		}
		childPrefix := prefix
		switch branch {
		case "├─":
			childPrefix += "│ "
		case "└─":
			childPrefix += "  "
		}
		for i, e := range next {
			b := "├─"
			if i == len(next)-1 {
				b = "└─"
			}
			walk(e.Dependent, &e, childPrefix, b, below)
		}
	}
	for _, t := range tops {
		walk(t, nil, "", "", false)
	}
	return lines
}

func nodeState(n api.GraphNode) string {
	switch {
	case n.Missing || n.Virtual:
		return "missing"
	case n.DeletingDependents:
		return "deleting dependents"
	case n.BeingDeleted:
		return "being deleted"
	}
	return "exists"
}

func edgeFlags(e api.GraphEdge) string {
	var flags []string
	if e.Controller {
		flags = append(flags, "controller")
	}
	if e.BlockOwnerDeletion {
		flags = append(flags, "blockOwnerDeletion")
	}
	return strings.Join(flags, ",")
}

// ANSI colours of the states; the object asked about is bold.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

func stateColor(state string) string {
	switch state {
	case "exists":
		return ansiGreen
	case "missing":
		return ansiRed
	}
	return ansiYellow
}

// printTree aligns the lines itself rather than through tabwriter, which
// would count the colours' escape codes as width.
func printTree(w io.Writer, g *api.Graph, root string, color bool) error {
	lines := buildTree(g, root)
	header := treeLine{namespace: "NAMESPACE", name: "NAME", edge: "OWNER REF", state: "STATE"}
	nsW, nameW, edgeW := 0, 0, 0
	for _, l := range append(lines, header) {
		nsW = max(nsW, utf8.RuneCountInString(l.namespace))
		nameW = max(nameW, utf8.RuneCountInString(l.name))
		edgeW = max(edgeW, utf8.RuneCountInString(l.edge))
	}
	pad := func(s string, width int) string {
		return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)+3)
	}
	paint := func(s, code string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	fmt.Fprintln(w, pad(header.namespace, nsW)+pad(header.name, nameW)+pad(header.edge, edgeW)+header.state)
	for _, l := range lines {
		name := pad(l.name, nameW)
		if l.root {
			name = paint(name, ansiBold)
		}
		if _, err := fmt.Fprintln(w, pad(l.namespace, nsW)+name+pad(l.edge, edgeW)+paint(l.state, stateColor(l.state))); err != nil {
			return err
		}
	}
	return nil
}
