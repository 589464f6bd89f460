package rules

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegcd/kubegcd/internal/db"
)

// Error is one reason a rule, or a whole rules file, is refused: where,
// and why, worded as Kubernetes validation words a field's error.
type Error struct {
	File string
	Line int
	// RuleID is the refused rule's id, when it has one.
	RuleID string
	// Field is the field's path (rules[2].interval); empty for an error
	// of the whole file.
	Field string
	// Detail says what is wrong.
	Detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Detail)
	return b.String()
}

// ParseOptions tune Parse.
type ParseOptions struct {
	// LabelKept says whether the mirror keeps a label key; exclude.labels
	// may only name kept keys, since the others are never there. Nil
	// takes every key as kept.
	LabelKept func(key string) bool
}

// Parse reads a rules file: a YAML mapping whose rules: is a list of
// rules. It returns each rule that is valid, and every error found, each
// with the file, the line and the field. A rule with an error is left
// out; the others are not. A file that is not YAML, or not such a
// mapping, gives no rules. Parse checks the fields, not the SELECTs:
// Load does that on the database.
func Parse(file string, data []byte, opts ParseOptions) ([]*Rule, []*Error) {
	p := &parser{file: file, opts: opts}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		detail := "not YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")
		return nil, []*Error{{File: file, Line: yamlErrorLine(err), Detail: detail}}
	}
	if doc.Kind == 0 {
		return nil, nil // an empty file holds no rules
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, []*Error{{File: file, Line: root.Line, Detail: "must be a mapping with rules: a list of rules"}}
	}
	var list *yaml.Node
	p.fields(root, nil, func(k, v *yaml.Node, fp *field.Path) {
		key := k.Value
		switch key {
		case "rules":
			list = v
		default:
			p.unknown(k, "", fp, []string{"rules"})
		}
	})
	if list == nil {
		if len(p.errs) == 0 {
			p.errs = append(p.errs, &Error{File: file, Line: root.Line, Field: "rules", Detail: "Required value"})
		}
		return nil, p.errs
	}
	rulesPath := field.NewPath("rules")
	if list.Kind != yaml.SequenceNode {
		if !isNull(list) {
			p.fail(list, "", field.Invalid(rulesPath, kindName(list), "must be a list of rules"))
		}
		return nil, p.errs
	}
	var out []*Rule
	for i, item := range list.Content {
		if r := p.rule(resolve(item), rulesPath.Index(i)); r != nil {
			out = append(out, r)
		}
	}
	return out, p.errs
}

// yamlErrorLine is the line a yaml error names, or 0.
var yamlLine = regexp.MustCompile(`line (\d+)`)

func yamlErrorLine(err error) int {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

type parser struct {
	file string
	opts ParseOptions
	errs []*Error
}

// fail records e, found at node n, for the rule id.
func (p *parser) fail(n *yaml.Node, id string, e *field.Error) {
	p.errs = append(p.errs, &Error{File: p.file, Line: n.Line, RuleID: id, Field: e.Field,
		Detail: e.ErrorBody()})
}

// unknown records a field that is not one of known.
func (p *parser) unknown(n *yaml.Node, id string, at *field.Path, known []string) {
	p.errs = append(p.errs, &Error{File: p.file, Line: n.Line, RuleID: id, Field: at.String(),
		Detail: "unknown field (known: " + strings.Join(known, ", ") + ")"})
}

// fields calls fn with each key of mapping m and its value, refusing a key
// given twice or that is not a string.
func (p *parser) fields(m *yaml.Node, at *field.Path, fn func(k, v *yaml.Node, fp *field.Path)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.fail(k, "", field.Invalid(at, kindName(k), "keys must be strings"))
			continue
		}
		fp := at.Child(k.Value)
		if seen[k.Value] {
			p.fail(k, "", field.Duplicate(fp, k.Value))
			continue
		}
		seen[k.Value] = true
		fn(k, v, fp)
	}
}

var ruleFields = []string{"id", "description", "select", "params", "exclude", "interval", "schedule",
	"action", "occurrences", "limits", "notify_before", "propagation"}

// overrideFields are those a file entry with a built-in's id may set.
var overrideFields = []string{"id", "params", "exclude", "interval", "schedule", "action", "occurrences", "limits", "notify_before",
	"propagation"}

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// rule reads one entry of rules:, or returns nil after recording why not.
func (p *parser) rule(n *yaml.Node, at *field.Path) *Rule {
	before := len(p.errs)
	if n.Kind != yaml.MappingNode {
		p.fail(n, "", field.Invalid(at, kindName(n), "must be a mapping"))
		return nil
	}
	values := map[string]*yaml.Node{}
	p.fields(n, at, func(k, v *yaml.Node, fp *field.Path) {
		key := k.Value
		if !slices.Contains(ruleFields, key) {
			p.unknown(k, "", fp, ruleFields)
			return
		}
		values[key] = v
	})
	r := &Rule{Interval: DefaultInterval, Mode: ModeReport, Occurrences: DefaultOccurrences,
		Propagation: DefaultPropagation, Source: Source{File: p.file, Line: n.Line}, lines: map[string]int{},
		path: at.String()}
	for k, v := range values {
		r.lines[k] = v.Line
	}
	idNode := values["id"]
	if idNode == nil {
		p.fail(n, "", field.Required(at.Child("id"), ""))
	} else if id, ok := p.str(idNode, "", at.Child("id")); ok {
		r.ID = id
		for _, msg := range validation.IsDNS1123Label(id) {
			p.fail(idNode, "", field.Invalid(at.Child("id"), id, msg))
		}
	}
	// Errors from here on name the rule.
	defer func() {
		for _, e := range p.errs[before:] {
			e.RuleID = r.ID
		}
	}()
	base := builtinByID(r.ID)
	if base != nil {
		for k, v := range values {
			if !slices.Contains(overrideFields, k) {
				p.fail(v, r.ID, field.Forbidden(at.Child(k),
					fmt.Sprintf("%s is a built-in rule: an entry with its id may set only %s", r.ID,
						strings.Join(overrideFields[1:], ", "))))
			}
		}
		r.Description, r.Select = base.Description, base.Select
		r.Params = base.cloneParams()
		r.Interval = base.Interval
		r.Source.BuiltIn = true
	}
	if v := values["description"]; v != nil && base == nil {
		r.Description, _ = p.str(v, r.ID, at.Child("description"))
	}
	if v := values["select"]; v != nil && base == nil {
		if s, ok := p.str(v, r.ID, at.Child("select")); ok {
			if strings.TrimSpace(s) == "" {
				p.fail(v, r.ID, field.Required(at.Child("select"), "one SELECT over the rules' views"))
			}
			r.Select = s
		}
	} else if base == nil {
		p.fail(n, r.ID, field.Required(at.Child("select"), "one SELECT over the rules' views"))
	}
	if v := values["params"]; v != nil {
		p.params(v, r, base, at.Child("params"))
	}
	if v := values["exclude"]; v != nil {
		p.exclude(v, r, at.Child("exclude"))
	}
	if v := values["interval"]; v != nil {
		if d, ok := p.duration(v, r.ID, at.Child("interval")); ok {
			if d < time.Second {
				p.fail(v, r.ID, field.Invalid(at.Child("interval"), v.Value, "must be at least 1s"))
			}
			r.Interval = d
		}
	}
	if v := values["schedule"]; v != nil {
		p.schedule(v, r, values["interval"] != nil, at.Child("schedule"))
	}
	p.acting(values, r, base, at)
	if len(p.errs) > before {
		return nil
	}
	r.Hash = r.hash()
	return r
}

// acting reads the fields that say how a rule acts on what it matches:
// action, occurrences, limits, notify_before and propagation.
func (p *parser) acting(values map[string]*yaml.Node, r *Rule, base *builtin, at *field.Path) {
	if v := values["action"]; v != nil {
		if s, ok := p.str(v, r.ID, at.Child("action")); ok {
			r.Mode = Mode(s)
			if !slices.Contains([]Mode{ModeReport, ModeDelete}, r.Mode) {
				p.fail(v, r.ID, field.NotSupported(at.Child("action"), s, []Mode{ModeReport, ModeDelete}))
			} else if r.Mode == ModeDelete && base != nil && base.reportOnly {
				p.fail(v, r.ID, field.Forbidden(at.Child("action"),
					r.ID+" reports; it matches what refers to a missing object, not garbage"))
			}
		}
	}
	if v := values["occurrences"]; v != nil {
		if n, ok := p.integer(v, r.ID, at.Child("occurrences")); ok {
			if n < 1 {
				p.fail(v, r.ID, field.Invalid(at.Child("occurrences"), n, "must be a positive integer"))
			}
			r.Occurrences = int(n)
		}
	}
	if v := values["limits"]; v != nil {
		p.limits(v, r, at.Child("limits"))
	}
	if v := values["notify_before"]; v != nil {
		r.NotifyBefore, _ = p.duration(v, r.ID, at.Child("notify_before"))
	}
	if v := values["propagation"]; v != nil {
		if s, ok := p.str(v, r.ID, at.Child("propagation")); ok {
			r.Propagation = s
			valid := []string{"Background", "Foreground", "Orphan"}
			if !slices.Contains(valid, s) {
				p.fail(v, r.ID, field.NotSupported(at.Child("propagation"), s, valid))
			}
		}
	}
}

// scheduleParser reads crontab's five fields (minute, hour, day of
// month, month, day of week) and the descriptors @yearly, @annually,
// @monthly, @weekly, @daily, @midnight and @hourly, each optionally after
// CRON_TZ=Zone (or TZ=Zone). Seconds are not a field: a pass more often
// than once a minute is interval's job, as is @every, which parseSchedule
// refuses.
var scheduleParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// schedule reads a rule's schedule, which replaces its interval: one may
// not set both.
func (p *parser) schedule(v *yaml.Node, r *Rule, withInterval bool, at *field.Path) {
	expr, ok := p.str(v, r.ID, at)
	if !ok {
		return
	}
	if withInterval {
		p.fail(v, r.ID, field.Forbidden(at, "may not be set with interval: a rule has one or the other"))
		return
	}
	s, err := parseSchedule(expr, time.Now())
	if err != nil {
		p.fail(v, r.ID, field.Invalid(at, expr, err.Error()))
		return
	}
	r.Schedule, r.schedule, r.Interval = expr, s, 0
}

// parseSchedule parses a cron expression. Its times are UTC unless it
// names a zone, so that every host reads it alike. It refuses an
// expression with no time in the five years after now.
func parseSchedule(expr string, now time.Time) (*schedule, error) {
	zoned := strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=")
	if zoned {
		// The library slices the zone up to a space, and panics without one.
		_, zoneAndFields, _ := strings.Cut(expr, "=")
		zone, fields, _ := strings.Cut(zoneAndFields, " ")
		if zone == "" || strings.TrimSpace(fields) == "" {
			return nil, errors.New("must be CRON_TZ=, a time zone, a space and the fields (CRON_TZ=Europe/Paris 0 2 * * 0)")
		}
	}
	parsed, err := scheduleParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("must be a cron expression: %w", err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		// @every: a constant delay, not a time of the clock.
		return nil, errors.New("must be a time of the clock, not @every: set interval instead")
	}
	s := &schedule{spec: *spec, loc: spec.Location}
	if !zoned {
		// Without a zone the library takes the time it is given as the
		// local time (cron's habit); a rule file says the same everywhere.
		s.loc = time.UTC
	}
	s.spec.Location = time.UTC
	if s.next(now).IsZero() {
		return nil, errors.New("no time matches it in the next five years")
	}
	return s, nil
}

func (p *parser) params(n *yaml.Node, r *Rule, base *builtin, at *field.Path) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, r.ID, field.Invalid(at, kindName(n), "must be a mapping of names to values"))
		return
	}
	if r.Params == nil {
		r.Params = map[string]any{}
	}
	p.fields(n, at, func(k, v *yaml.Node, fp *field.Path) {
		name := k.Value
		if !paramName.MatchString(name) || name == "now" {
			p.fail(v, r.ID, field.Invalid(fp, name,
				"must be a name of letters, digits and _ (not now, which is the pass's time)"))
			return
		}
		if v.Kind != yaml.ScalarNode {
			p.fail(v, r.ID, field.Invalid(fp, kindName(v), "must be text, a number, a bool or null"))
			return
		}
		var val any
		if err := v.Decode(&val); err != nil {
			p.fail(v, r.ID, field.Invalid(fp, v.Value, err.Error()))
			return
		}
		switch x := val.(type) {
		case int:
			val = int64(x)
		case uint64:
			if x > math.MaxInt64 {
				p.fail(v, r.ID, field.Invalid(fp, v.Value, "is too large"))
				return
			}
			val = int64(x)
		case int64, float64, bool, string, nil:
		default:
			// Timestamps and the like: bound as written.
			val = v.Value
		}
		if base != nil {
			spec, ok := base.param(name)
			if !ok {
				p.fail(v, r.ID, field.NotSupported(fp, name, base.paramNames()))
				return
			}
			if spec.duration {
				s, isText := val.(string)
				if _, err := db.ParseDuration(s); !isText || err != nil {
					p.fail(v, r.ID, field.Invalid(fp, v.Value, "must be a duration such as 90s, 15m, 24h, 7d or 1w"))
					return
				}
			}
		}
		r.Params[name] = val
	})
}

func (p *parser) exclude(n *yaml.Node, r *Rule, at *field.Path) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, r.ID, field.Invalid(at, kindName(n), "must be a mapping of namespaces, labels and names"))
		return
	}
	valid := []string{"namespaces", "labels", "names"}
	p.fields(n, at, func(k, v *yaml.Node, fp *field.Path) {
		key := k.Value
		if !slices.Contains(valid, key) {
			p.unknown(k, r.ID, fp, valid)
			return
		}
		list, ok := p.strings(v, r.ID, fp)
		if !ok {
			return
		}
		for i, s := range list {
			item := resolve(v.Content[i])
			switch key {
			case "namespaces", "names":
				if _, err := path.Match(s, ""); err != nil || s == "" {
					p.fail(item, r.ID, field.Invalid(fp.Index(i), s, "must be a name or a glob (* ? [a-z])"))
				}
			case "labels":
				if strings.TrimSpace(s) == "" {
					p.fail(item, r.ID, field.Invalid(fp.Index(i), s, "must be a label selector, not empty (which selects everything)"))
					continue
				}
				sel, err := labels.Parse(s)
				if err != nil {
					p.fail(item, r.ID, field.Invalid(fp.Index(i), s, err.Error()))
					continue
				}
				reqs, _ := sel.Requirements()
				for _, req := range reqs {
					if p.opts.LabelKept != nil && !p.opts.LabelKept(req.Key()) {
						p.fail(item, r.ID, field.Invalid(fp.Index(i), s,
							fmt.Sprintf("the mirror does not keep the label %s, so no object has it there: "+
								"add it to --mirror-labels", req.Key())))
					}
				}
			}
		}
		switch key {
		case "namespaces":
			r.Exclude.Namespaces = list
		case "labels":
			r.Exclude.Labels = list
		case "names":
			r.Exclude.Names = list
		}
	})
}

func (p *parser) limits(n *yaml.Node, r *Rule, at *field.Path) {
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, r.ID, field.Invalid(at, kindName(n), "must be a mapping of max_count and max_percent"))
		return
	}
	valid := []string{"max_count", "max_percent"}
	p.fields(n, at, func(k, v *yaml.Node, fp *field.Path) {
		key := k.Value
		switch key {
		case "max_count":
			if n, ok := p.integer(v, r.ID, fp); ok {
				if n < 1 {
					p.fail(v, r.ID, field.Invalid(fp, n, "must be a positive integer"))
				}
				r.Limits.MaxCount = int(n)
			}
		case "max_percent":
			f, err := strconv.ParseFloat(v.Value, 64)
			if v.Kind != yaml.ScalarNode || err != nil || !(f > 0 && f <= 100) {
				p.fail(v, r.ID, field.Invalid(fp, v.Value, "must be a number above 0 and at most 100"))
				return
			}
			r.Limits.MaxPercent = f
		default:
			p.unknown(k, r.ID, fp, valid)
		}
	})
}

// str reads a string scalar.
func (p *parser) str(n *yaml.Node, id string, at *field.Path) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" && n.Tag != "!!int" && n.Tag != "!!float" && n.Tag != "!!bool" {
		p.fail(n, id, field.Invalid(at, kindName(n), "must be a string"))
		return "", false
	}
	return n.Value, true
}

// strings reads a list of strings.
func (p *parser) strings(n *yaml.Node, id string, at *field.Path) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, id, field.Invalid(at, kindName(n), "must be a list of strings"))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, item := range n.Content {
		s, good := p.str(resolve(item), id, at.Index(i))
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

func (p *parser) integer(n *yaml.Node, id string, at *field.Path) (int64, bool) {
	v, err := strconv.ParseInt(n.Value, 10, 32)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
		p.fail(n, id, field.Invalid(at, n.Value, "must be an integer"))
		return 0, false
	}
	return v, true
}

func (p *parser) duration(n *yaml.Node, id string, at *field.Path) (time.Duration, bool) {
	d, err := db.ParseDuration(n.Value)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" && n.Tag != "!!int" || err != nil {
		p.fail(n, id, field.Invalid(at, n.Value, "must be a duration such as 90s, 15m, 24h, 7d or 1w"))
		return 0, false
	}
	return d, true
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// kindName names what a node holds, for an error.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return n.Value
	}
	return "?"
}
