package ingest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubegcd/kubegcd/internal/db"
)

// KeyAllowList says which labels, or which annotations, the mirror keeps
// of each resource, in kube-state-metrics' syntax:
// configmaps=[app,team],*=[kubegcd.io/keep]. A resource is named by its
// plural, optionally with its group (ingresses.networking.k8s.io); "*"
// names every resource, and the key "*" every key. It is a pflag.Value:
// each Set adds to what the earlier ones allowed.
type KeyAllowList map[string][]string

// ParseKeyAllowList reads s as --mirror-labels takes it.
func ParseKeyAllowList(s string) (KeyAllowList, error) {
	l := KeyAllowList{}
	return l, l.Set(s)
}

// Set adds the entries of s.
func (l KeyAllowList) Set(s string) error {
	entries, err := splitEntries(s)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name, keys, err := parseEntry(e)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !slices.Contains(l[name], k) {
				l[name] = append(l[name], k)
			}
		}
		if _, ok := l[name]; !ok {
			l[name] = []string{}
		}
	}
	return nil
}

// splitEntries splits s at the commas outside brackets.
func splitEntries(s string) ([]string, error) {
	var out []string
	depth, from := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			if depth++; depth > 1 {
				return nil, fmt.Errorf("%q: a '[' inside brackets", s)
			}
		case ']':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("%q: a ']' without its '['", s)
			}
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%q: a '[' without its ']'", s)
	}
	out = append(out, s[from:])
	if len(out) == 1 && strings.TrimSpace(out[0]) == "" {
		return nil, nil
	}
	return out, nil
}

// parseEntry reads one RESOURCE=[KEY,...].
func parseEntry(e string) (string, []string, error) {
	name, list, ok := strings.Cut(e, "=")
	name, list = strings.TrimSpace(name), strings.TrimSpace(list)
	if !ok || !strings.HasPrefix(list, "[") || !strings.HasSuffix(list, "]") {
		return "", nil, fmt.Errorf("%q: want RESOURCE=[KEY,...], such as configmaps=[app,team] or *=[*]",
			strings.TrimSpace(e))
	}
	if err := validResourceName(name); err != nil {
		return "", nil, fmt.Errorf("%q: %w", strings.TrimSpace(e), err)
	}
	var keys []string
	var errs []error
	for _, k := range strings.Split(list[1:len(list)-1], ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if k != "*" {
			if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("key %q: %s", k, strings.Join(msgs, "; ")))
				continue
			}
		}
		keys = append(keys, k)
	}
	if err := errors.Join(errs...); err != nil {
		return "", nil, fmt.Errorf("%q: %w", strings.TrimSpace(e), err)
	}
	return name, keys, nil
}

// validResourceName accepts "*", a resource's plural, or its plural and
// group: lower-case DNS labels joined by dots.
func validResourceName(name string) error {
	if name == "*" {
		return nil
	}
	if name == "" {
		return errors.New("no resource named")
	}
	for _, part := range strings.Split(name, ".") {
		if msgs := validation.IsDNS1123Label(part); len(msgs) > 0 {
			return fmt.Errorf("resource %q: want a resource's plural, such as configmaps, "+
				"optionally with its group (ingresses.networking.k8s.io), or *", name)
		}
	}
	return nil
}

// String writes the list back in the flag's syntax, sorted.
func (l KeyAllowList) String() string {
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(l)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name + "=[" + strings.Join(l[name], ",") + "]")
	}
	return b.String()
}

// Type names the flag's value in help.
func (l KeyAllowList) Type() string { return "RESOURCE=[KEY,...]" }

// keysFor is the set of keys kept of the resource group/resource: the
// entries "*", "resource" and "resource.group", and always.
func (l KeyAllowList) keysFor(group, resource string, always []string) keySet {
	names := []string{"*", resource}
	if group != "" {
		names = append(names, resource+"."+group)
	}
	k := keySet{keys: map[string]bool{}}
	for _, key := range always {
		k.keys[key] = true
	}
	for _, name := range names {
		for _, key := range l[name] {
			if key == "*" {
				k.all = true
			}
			k.keys[key] = true
		}
	}
	return k
}

// lastApplied is what kubectl apply keeps of an object's manifest: on a
// Secret it holds the Secret's data, so it is never kept of a Secret.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// keySet is the keys kept of one resource's labels or annotations.
type keySet struct {
	all   bool
	keys  map[string]bool
	never string // a key never kept, even by "*"
}

// keep returns the kept entries of m, sorted by key; nil when none is.
func (k keySet) keep(m map[string]string) []db.KeyValue {
	var out []db.KeyValue
	for key, value := range m {
		if (k.all || k.keys[key]) && key != k.never {
			out = append(out, db.KeyValue{Key: key, Value: value})
		}
	}
	if len(out) > 1 {
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	}
	return out
}

// fingerprint names the set: "*" or its keys, sorted.
func (k keySet) fingerprint() string {
	if k.all {
		return "*"
	}
	return strings.Join(slices.Sorted(maps.Keys(k.keys)), ",")
}
