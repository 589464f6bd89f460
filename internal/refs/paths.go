package refs

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"
)

// Path declares references that a kind kubegcd does not know makes: the
// values a JSONPath finds in each of its objects name objects of the
// target kind. A Gateway's certificate Secrets, say:
//
//	Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret
//
// A value the path finds is either a name, or a map with a name and
// optionally a namespace. A map that names another kind or group than
// the target's, as Gateway API references may, is another path's. A
// name alone is in the referrer's namespace.
type Path struct {
	// Group and Kind select the referrers.
	Group, Kind string
	// JSONPath is a kubectl-style template, braces included.
	JSONPath string
	// TargetGroup and TargetKind name what the values refer to.
	TargetGroup, TargetKind string
	// TargetClusterScoped is set when the target kind is cluster-scoped:
	// its references carry no namespace.
	TargetClusterScoped bool

	parsed *jsonpath.JSONPath
}

// ParsePath reads a path in the flag's syntax, KIND[.GROUP]:{JSONPATH}:KIND[.GROUP],
// kinds named as kubectl names a resource's kind with its group. The
// JSONPath must parse.
func ParsePath(s string) (Path, error) {
	open := strings.Index(s, ":{")
	closing := strings.LastIndex(s, "}:")
	if open < 0 || closing < open {
		return Path{}, fmt.Errorf("%q: want KIND[.GROUP]:{JSONPATH}:KIND[.GROUP], such as "+
			"Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret", s)
	}
	p := Path{JSONPath: s[open+1 : closing+1]}
	p.Kind, p.Group = splitKind(s[:open])
	p.TargetKind, p.TargetGroup = splitKind(s[closing+2:])
	if p.Kind == "" || p.TargetKind == "" {
		return Path{}, fmt.Errorf("%q: the referrer's kind and the target's kind must both be named", s)
	}
	if err := p.Compile(); err != nil {
		return Path{}, err
	}
	return p, nil
}

// splitKind splits Kind.group.example.com into its kind and group.
func splitKind(s string) (kind, group string) {
	kind, group, _ = strings.Cut(strings.TrimSpace(s), ".")
	return kind, group
}

// Compile parses the JSONPath; Of calls it when it was not called.
func (p *Path) Compile() error {
	jp := jsonpath.New(p.Kind).AllowMissingKeys(true)
	if err := jp.Parse(p.JSONPath); err != nil {
		return fmt.Errorf("%s: JSONPath %s: %w", p.Kind, p.JSONPath, err)
	}
	p.parsed = jp
	return nil
}

// String writes the path in the flag's syntax.
func (p Path) String() string {
	return joinKind(p.Kind, p.Group) + ":" + p.JSONPath + ":" + joinKind(p.TargetKind, p.TargetGroup)
}

func joinKind(kind, group string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// OfUnstructured returns the references the paths declare for an object.
// Paths of other kinds are left out. A value of the wrong shape is an
// error, which names the object; the other values still count.
func OfUnstructured(u *unstructured.Unstructured, paths []Path) ([]Ref, error) {
	var c collector
	var errs []string
	gvk := u.GroupVersionKind()
	for i := range paths {
		p := &paths[i]
		if p.Kind != gvk.Kind || p.Group != gvk.Group {
			continue
		}
		if p.parsed == nil {
			if err := p.Compile(); err != nil {
				return nil, err
			}
		}
		results, err := p.parsed.FindResults(u.Object)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, values := range results {
			for _, v := range values {
				if err := c.value(u.GetNamespace(), p, v); err != nil {
					errs = append(errs, err.Error())
				}
			}
		}
	}
	var err error
	if len(errs) > 0 {
		err = fmt.Errorf("%s %s/%s: %s", gvk.Kind, u.GetNamespace(), u.GetName(), strings.Join(errs, "; "))
	}
	return c.sorted(), err
}

// value adds the reference one JSONPath value makes.
func (c *collector) value(namespace string, p *Path, v reflect.Value) error {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	r := Ref{Group: p.TargetGroup, Kind: p.TargetKind, Namespace: namespace, Via: p.JSONPath}
	switch v.Kind() {
	case reflect.String:
		r.Name = v.String()
	case reflect.Map:
		m, ok := v.Interface().(map[string]any)
		if !ok {
			return fmt.Errorf("%s: a value is not an object of strings", p.JSONPath)
		}
		r.Name, _ = m["name"].(string)
		if ns, _ := m["namespace"].(string); ns != "" {
			r.Namespace = ns
		}
		// Gateway API references name their kind; one of another kind
		// is not this path's.
		if kind, _ := m["kind"].(string); kind != "" && kind != p.TargetKind {
			return nil
		}
		if group, ok := m["group"].(string); ok && group != p.TargetGroup {
			return nil
		}
	default:
		return fmt.Errorf("%s: a value is a %s, not a name or an object with a name", p.JSONPath, v.Kind())
	}
	if p.TargetClusterScoped {
		r.Namespace = ""
	}
	c.add(r)
	return nil
}
