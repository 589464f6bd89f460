package rules

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DefaultDir is where rule files are read from unless --rules-dir says
// otherwise.
const DefaultDir = "/etc/kubegcd/rules.d"

// LoadOptions tune Load.
type LoadOptions struct {
	ParseOptions
	// Check prepares each rule's SELECT (Evaluator.Check); nil checks
	// only the fields.
	Check func(context.Context, *Rule) *Error
}

// Set is what Load found.
type Set struct {
	// Rules are those that run: the built-ins first, in their order, each
	// as a file overrides it; then the files' rules, by file name and in
	// each file's order.
	Rules []*Rule
	// Errors say why each refused file or rule is refused, with its
	// file and line.
	Errors []*Error
	// Files are the rule files read.
	Files []string
}

// Load reads every *.yaml and *.yml file of dir (not its subdirectories;
// names starting with "." are skipped), in name order, and returns the
// built-in rules with the files' rules. A file or a rule with an error is
// refused, with its file, line and why, and the others load: a rule file
// never stops the daemon. An entry with a built-in's id overrides that
// built-in's params, exclude and interval; refused, it leaves the
// built-in as shipped. An id defined twice is refused the second time. A
// directory that does not exist holds no rules; one that cannot be read
// is an error.
func Load(ctx context.Context, dir string, opts LoadOptions) (*Set, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("rules: %w", err)
	}
	set := &Set{}
	var parsed []*Rule
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || strings.HasPrefix(name, ".") || ext != ".yaml" && ext != ".yml" {
			continue
		}
		file := filepath.Join(dir, name)
		data, err := os.ReadFile(file)
		if err != nil {
			set.Errors = append(set.Errors, &Error{File: file, Detail: err.Error()})
			continue
		}
		set.Files = append(set.Files, file)
		rules, errs := Parse(file, data, opts.ParseOptions)
		parsed = append(parsed, rules...)
		set.Errors = append(set.Errors, errs...)
	}
	set.Rules, set.Errors = merge(ctx, parsed, set.Errors, opts.Check)
	return set, nil
}

// merge puts the parsed rules over the built-ins, refusing a second
// definition of an id and a rule whose SELECT check fails.
func merge(ctx context.Context, parsed []*Rule, errs []*Error,
	check func(context.Context, *Rule) *Error) ([]*Rule, []*Error) {
	out := Builtins()
	first := map[string]*Rule{}
	for _, r := range parsed {
		if prev, ok := first[r.ID]; ok {
			errs = append(errs, &Error{File: r.Source.File, Line: r.lines["id"], RuleID: r.ID, Field: r.path + ".id",
				Detail: fmt.Sprintf("Duplicate value: %q: first defined at %s:%d", r.ID, prev.Source.File, prev.Source.Line)})
			continue
		}
		first[r.ID] = r
		if check != nil {
			if err := check(ctx, r); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if i := slices.IndexFunc(out, func(b *Rule) bool { return b.Source.BuiltIn && b.ID == r.ID }); i >= 0 {
			out[i] = r
			continue
		}
		out = append(out, r)
	}
	if check != nil {
		// The built-ins as shipped are checked too: a schema they no
		// longer fit is said at once.
		kept := out[:0]
		for _, r := range out {
			if r.Source.File == "" {
				if err := check(ctx, r); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			kept = append(kept, r)
		}
		out = kept
	}
	return out, errs
}

// Position is "file:line" of r's definition, or "built-in".
func (r *Rule) Position() string {
	if r.Source.File == "" {
		return "built-in"
	}
	return r.Source.File + ":" + strconv.Itoa(r.Source.Line)
}
