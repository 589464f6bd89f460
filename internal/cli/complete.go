package cli

import (
	"context"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// completionTimeout bounds a completion's wait for kubegcd: the shell
// waits on it, and a TAB that offers nothing is better than one that hangs.
const completionTimeout = 2 * time.Second

// completionNames is how many objects of a kind completion reads: the API
// filters no name prefix, and a longer list is no use on a terminal.
const completionNames = 2000

// completionAuditRows is how many of the newest audit rows get audit --rule
// reads for the rule ids in use.
const completionAuditRows = 1000

// completionMaxAnswer bounds what completion reads of one answer. Its
// largest, /objects with completionNames objects, is about 1 MB when each
// has a long name and an owner; what is larger is no server's completion
// answer, and reading it would only cost the shell time and memory.
const completionMaxAnswer = 4 << 20

const noFiles = cobra.ShellCompDirectiveNoFileComp

// completion is value, with desc shown beside it when not empty, both made
// printable: they come from the server, and the shell would take a newline
// or a tab in them for its own, and pass an escape sequence to the
// terminal.
func completion(value, desc string) cobra.Completion {
	value = cmdline.Printable(value)
	if desc == "" {
		return value
	}
	return cobra.CompletionWithDesc(value, cmdline.Printable(desc))
}

// addCompletion completes, from the server the command line names (as
// kubectl completes resource names from the API server), an object's KIND
// and NAME, -n's namespaces, and get's --kind and --rule. Completion says
// nothing when the server cannot be reached or refuses: it offers nothing.
func (e *env) addCompletion(cmds []*cobra.Command) {
	for _, cmd := range cmds {
		switch cmd.Name() {
		case "why", "tree", "cascade":
			cmd.ValidArgsFunction = e.completeObject
		case "restore":
			cmd.ValidArgsFunction = e.completeDeletedCopy
		case "get":
			_ = cmd.RegisterFlagCompletionFunc("kind", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return e.completeKinds(cmd, toComplete), noFiles
			})
			_ = cmd.RegisterFlagCompletionFunc("rule", e.completeRule)
		}
		if cmd.Flags().Lookup("namespace") != nil {
			_ = cmd.RegisterFlagCompletionFunc("namespace", e.completeNamespace)
		}
	}
}

// completionClient is the client the command's flags and the environment
// describe, with completion's timeout; nil when they describe none.
func (e *env) completionClient(cmd *cobra.Command) (*Client, context.Context, context.CancelFunc) {
	fs := cmd.Flags()
	var f connFlags
	f.server, _ = fs.GetString("server")
	f.tokenFile, _ = fs.GetString("token-file")
	f.caFile, _ = fs.GetString("certificate-authority")
	f.insecure, _ = fs.GetBool("insecure-skip-tls-verify")
	c, err := f.client(e.lookupEnv, io.Discard)
	if err != nil {
		return nil, nil, nil
	}
	c.HTTP.Timeout = completionTimeout
	c.MaxAnswer = completionMaxAnswer
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	return c, ctx, cancel
}

// getJSON is GetJSON for completion: false on any error.
func (e *env) getJSON(cmd *cobra.Command, path string, q url.Values, v any) bool {
	c, ctx, cancel := e.completionClient(cmd)
	if c == nil {
		return false
	}
	defer cancel()
	_, err := c.GetJSON(ctx, path, q, v)
	return err == nil
}

// completeObject completes KIND/NAME or KIND NAME: the kinds first, then
// the names of that kind, in -n's namespace when given.
func (e *env) completeObject(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case len(args) == 0 && strings.Contains(toComplete, "/"):
		kind, prefix, _ := strings.Cut(toComplete, "/")
		names := e.completeNames(cmd, kind, prefix)
		for i := range names {
			names[i] = cmdline.Printable(kind) + "/" + names[i]
		}
		return names, noFiles
	case len(args) == 0:
		return e.completeKinds(cmd, toComplete), noFiles
	case len(args) == 1 && !strings.Contains(args[0], "/"):
		return e.completeNames(cmd, args[0], toComplete), noFiles
	}
	return nil, noFiles
}

// completeDeletedCopy completes restore's KIND/NAME from the copies kept,
// newest first, in -n's namespace when given.
func (e *env) completeDeletedCopy(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion,
	cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	q := url.Values{"limit": {strconv.Itoa(completionNames)}}
	if ns, _ := cmd.Flags().GetString("namespace"); ns != "" {
		q.Set("namespace", ns)
	}
	var list api.DeletedCopyList
	if !e.getJSON(cmd, "/deleted-copies", q, &list) {
		return nil, noFiles
	}
	var out []cobra.Completion
	seen := map[string]bool{}
	for _, dc := range list.Items {
		word := strings.ToLower(dc.Target.Kind) + "/" + dc.Target.Name
		if strings.HasPrefix(word, toComplete) && !seen[word] {
			seen[word] = true
			out = append(out, cmdline.Printable(word))
		}
	}
	return out, noFiles
}

// completeKinds are the resources the mirror holds objects of, by their
// plural as kubectl names them, with .group when several API groups serve
// that plural.
func (e *env) completeKinds(cmd *cobra.Command, toComplete string) []cobra.Completion {
	var st struct {
		Resources []struct {
			Group    string `json:"group"`
			Resource string `json:"resource"`
			Kind     string `json:"kind"`
			Objects  int64  `json:"objects"`
		} `json:"resources"`
	}
	if !e.getJSON(cmd, "/status", nil, &st) {
		return nil
	}
	groups := map[string]int{}
	for _, r := range st.Resources {
		groups[r.Resource]++
	}
	kinds := map[string]string{}
	for _, r := range st.Resources {
		name := r.Resource
		if groups[r.Resource] > 1 && r.Group != "" {
			name += "." + r.Group
		}
		if r.Objects > 0 && strings.HasPrefix(name, toComplete) {
			kinds[name] = r.Kind
		}
	}
	var out []cobra.Completion
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		out = append(out, completion(name, kinds[name]))
	}
	return out
}

// completeNames are the names of the objects of kind that start with
// prefix, in -n's namespace when given, each described by its namespaces.
func (e *env) completeNames(cmd *cobra.Command, kind, prefix string) []cobra.Completion {
	if kind == "" {
		return nil
	}
	q := url.Values{"kind": {kind}, "limit": {strconv.Itoa(completionNames)}}
	if ns, _ := cmd.Flags().GetString("namespace"); ns != "" {
		q.Set("namespace", ns)
	}
	var found api.Lookup
	if !e.getJSON(cmd, "/objects", q, &found) {
		return nil
	}
	namespaces := map[string][]string{}
	for _, o := range found.Items {
		if strings.HasPrefix(o.Name, prefix) && !slices.Contains(namespaces[o.Name], o.Namespace) {
			namespaces[o.Name] = append(namespaces[o.Name], o.Namespace)
		}
	}
	var out []cobra.Completion
	for _, name := range slices.Sorted(maps.Keys(namespaces)) {
		in := slices.DeleteFunc(namespaces[name], func(ns string) bool { return ns == "" })
		slices.Sort(in)
		out = append(out, completion(name, strings.Join(in, ", ")))
	}
	return out
}

// completeNamespace completes -n with the namespaces the mirror holds.
func (e *env) completeNamespace(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var found api.Lookup
	if !e.getJSON(cmd, "/objects", url.Values{"kind": {"namespaces"}, "limit": {strconv.Itoa(completionNames)}}, &found) {
		return nil, noFiles
	}
	var out []cobra.Completion
	for _, o := range found.Items {
		if strings.HasPrefix(o.Name, toComplete) {
			out = append(out, completion(o.Name, ""))
		}
	}
	slices.Sort(out)
	return out, noFiles
}

// completeRule completes get's --rule: for lint the lint rules, for audit
// the rule ids of the newest audit rows (of --controller and -n when
// given), as no list of the controllers' rules is served.
func (e *env) completeRule(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) != 1 {
		return nil, noFiles
	}
	var out []cobra.Completion
	switch args[0] {
	case "lint":
		for _, r := range api.LintRules {
			if strings.HasPrefix(strings.ToUpper(r.ID), strings.ToUpper(toComplete)) {
				out = append(out, completion(r.ID, r.Name+" ("+string(r.Severity)+")"))
			}
		}
	case "audit":
		q := url.Values{"limit": {strconv.Itoa(completionAuditRows)}}
		for flag, param := range map[string]string{"controller": "controller", "namespace": "namespace"} {
			if v, _ := cmd.Flags().GetString(flag); v != "" {
				q.Set(param, v)
			}
		}
		var page api.AuditList
		if !e.getJSON(cmd, "/audit", q, &page) {
			return nil, noFiles
		}
		rules := map[string]string{}
		for _, r := range page.Items {
			if r.Rule != "" && strings.HasPrefix(strings.ToUpper(r.Rule), strings.ToUpper(toComplete)) {
				rules[r.Rule] = string(r.Controller)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(rules)) {
			out = append(out, completion(id, rules[id]))
		}
	}
	return out, noFiles
}
