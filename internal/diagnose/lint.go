package diagnose

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

// CheckRef applies the rules to one ownerReference. A reference whose owner
// cannot be resolved (kind not served, scope impossible) gets only that
// finding: what the mirror holds under its UID says nothing then.
// The mirror preselects the references this may flag (migration 0007's
// lint candidates); a new rule goes into both (TestLintMirror checks that
// they agree).
func CheckRef(l *db.LintRef, now time.Time) []api.LintFinding {
	return checkRef(l, now, true)
}

// checkRef is CheckRef, with the words of each finding only when words is
// set: a report counts many more findings than it keeps.
func checkRef(l *db.LintRef, now time.Time, words bool) []api.LintFinding {
	var out []api.LintFinding
	add := func(r api.LintRule, format string, args ...any) {
		f := api.LintFinding{Rule: r.ID, Name: r.Name, Severity: r.Severity, Target: l.Dependent, OwnerReference: api.OwnerRef(l.Ref)}
		if words {
			f.Message = fmt.Sprintf(format, args...)
		}
		out = append(out, f)
	}
	ref := l.Ref
	owner := ownerName(ref)
	if l.EarlierControllers > 0 {
		add(api.LintMultipleControllers, "this is controller reference number %d of the object, which may have only one: "+
			"the API server refuses a second today, so it was written before that check or around it, and controllers "+
			"that look for their controller reference see only the first", l.EarlierControllers+1)
	}
	o := l.Owner
	switch {
	case !l.KindServed:
		add(api.LintOwnerKindUnserved, "no resource in the mirror serves %s (its CRD removed, no version of it served, "+
			"or a kind that cannot be listed, watched and deleted): the garbage collector cannot resolve owner %s "+
			"and never collects this object for it (kubernetes#102641)", kindOf(ref.APIVersion, ref.Kind), ref.Name)
	case l.Dependent.Namespace == "" && l.KindNamespaced:
		add(api.LintClusterScopedDependent, "the object is cluster-scoped but its owner %s is of a namespaced kind, which "+
			"cannot own it: the garbage collector never deletes it for this reference and reports "+
			"OwnerRefInvalidNamespace", owner)
	case o == nil && l.SameNameUID != "":
		add(api.LintUIDMismatch, "owner %s was re-created: it now has uid %s, not %s. The garbage collector goes by "+
			"UID, so it takes the owner for gone and %s. Point the reference at the new uid if that is not "+
			"intended", owner, l.SameNameUID, ref.UID, goneOwnerFate)
	case o == nil:
		add(api.LintDanglingOwner, "%s", lazy(func() string { return danglingMessage(l, owner, now) }))
	case o.Namespace != "" && o.Namespace != l.Dependent.Namespace:
		add(api.LintCrossNamespace, "owner %s (uid %s) is in namespace %q, not in the object's own namespace %q: a "+
			"namespaced owner must be in its dependent's namespace, so the garbage collector takes it for absent "+
			"and %s", owner, ref.UID, o.Namespace, l.Dependent.Namespace, goneOwnerFate)
	case o.Kind != ref.Kind || o.Name != ref.Name || groupOf(o.APIVersion) != groupOf(ref.APIVersion):
		add(api.LintUIDMismatch, "uid %s is %s %q, not %s: the reference's kind or name does not match the object "+
			"with its UID, so the garbage collector takes the owner for gone and %s",
			ref.UID, kindOf(o.APIVersion, o.Kind), o.Name, owner, goneOwnerFate)
	case isTrue(ref.BlockOwnerDeletion) && !isTrue(ref.Controller) && !o.Deleting:
		// Controllers set blockOwnerDeletion on every controller reference
		// as a matter of course; on another reference it is a choice.
		add(api.LintBlockLiveOwner, "blockOwnerDeletion is set on a reference that is not the controller reference, "+
			"to owner %s, which is not being deleted: it has no effect until the owner is deleted in the "+
			"foreground, and then the owner waits (its foregroundDeletion finalizer stays) until this object is "+
			"gone; check that holding it is intended", owner)
	}
	return out
}

// lazy defers a message to when fmt prints it.
type lazy func() string

func (f lazy) String() string { return f() }

// ownerName names a reference's owner in words.
func ownerName(ref api.OwnerRef) string {
	return fmt.Sprintf("%s %q", kindOf(ref.APIVersion, ref.Kind), ref.Name)
}

// goneOwnerFate is what the garbage collector does about a reference to an
// owner it takes for gone.
const goneOwnerFate = "deletes this object, or only removes this reference when another owner holds the object"

// danglingMessage says what the mirror knows of how long a reference has
// been dangling: the mirror keeps no record of when an owner went, but the
// dependent's age bounds it, ownergc's pending decision dates it, and an
// owner kubegcd deleted itself has an audit row.
func danglingMessage(l *db.LintRef, owner string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no object with uid %s is in the mirror: owner %s is gone, or never existed. ", l.Ref.UID, owner)
	if l.OwnerDeletedAt != nil {
		fmt.Fprintf(&b, "kubegcd deleted it at %s (%s ago). ", l.OwnerDeletedAt.UTC().Format(time.RFC3339), age(now, *l.OwnerDeletedAt))
	}
	if l.DependentCreated != nil {
		fmt.Fprintf(&b, "Dangling for at most %s: this object was created at %s",
			age(now, *l.DependentCreated), l.DependentCreated.UTC().Format(time.RFC3339))
	} else {
		b.WriteString("This object's creation time is not mirrored")
	}
	if l.PendingSince != nil {
		fmt.Fprintf(&b, "; ownergc has had a decision pending about it since %s (%s ago)",
			l.PendingSince.UTC().Format(time.RFC3339), age(now, *l.PendingSince))
	}
	if l.OwnerDeletedAt == nil {
		b.WriteString("; when the owner went is not recorded")
	}
	b.WriteString(". Once a live GET confirms the owner absent, the garbage collector " + goneOwnerFate + ".")
	return b.String()
}

func age(now, t time.Time) string {
	return max(now.Sub(t), 0).Round(time.Second).String()
}

func isTrue(b *bool) bool { return b != nil && *b }

// kindOf names a kind with its group, as kubectl does: Kind.group.
func kindOf(apiVersion, kind string) string {
	if g := groupOf(apiVersion); g != "" {
		return kind + "." + g
	}
	return kind
}

// groupOf returns the group of an apiVersion ("" for the core group).
func groupOf(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// LintSource is what lint reads: every ownerReference of a namespace with
// its surroundings, streamed.
type LintSource interface {
	LintRefs(ctx context.Context, namespace string, fn func(*db.LintRef) error) error
	FillDangling(ctx context.Context, refs []*db.LintRef) error
}

// LintFilter selects findings. Zero fields match everything.
type LintFilter struct {
	// Namespace keeps the objects of one namespace.
	Namespace string
	// Rule (an ID or a name) and Severity select the items.
	Rule     string
	Severity api.Severity
	// Limit bounds the items.
	Limit int
}

// RuleByName returns the rule with that ID or name.
func RuleByName(s string) (api.LintRule, bool) {
	for _, r := range api.LintRules {
		if s == r.ID || s == r.Name {
			return r, true
		}
	}
	return api.LintRule{}, false
}

// errEnough ends Lint's stream once it holds what it reports.
var errEnough = errors.New("enough findings")

// Lint streams the ownerReferences of f.Namespace through the rules until
// it has f.Limit findings that f selects and knows whether there are more:
// an unfiltered lint reads about Limit candidates, whatever the mirror
// holds, while a rule or severity that matches few findings may read every
// candidate of the namespace before it has its items. Memory stays bounded
// by the limit. What the mirror knows of when a kept reference began to
// dangle is read after, for those alone. The report's counts are left
// empty: they are CountLint's.
func Lint(ctx context.Context, src LintSource, f LintFilter, now time.Time) (*api.LintReport, error) {
	rep := &api.LintReport{Items: []api.LintFinding{}}
	want := func(fd *api.LintFinding) bool {
		return (f.Rule == "" || f.Rule == fd.Rule || f.Rule == fd.Name) && (f.Severity == "" || f.Severity == fd.Severity)
	}
	var dangling []*db.LintRef // of the kept items, in their order
	err := src.LintRefs(ctx, f.Namespace, func(l *db.LintRef) error {
		var worded []api.LintFinding // once some finding of l is kept
		for i, fd := range checkRef(l, now, false) {
			if !want(&fd) {
				continue
			}
			if len(rep.Items) >= f.Limit {
				rep.Truncated = true
				return errEnough
			}
			if worded == nil {
				worded = checkRef(l, now, true)
			}
			rep.Items = append(rep.Items, worded[i])
			if fd.Rule == api.LintDanglingOwner.ID {
				dangling = append(dangling, l.Clone())
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	if len(dangling) == 0 {
		return rep, nil
	}
	if err := src.FillDangling(ctx, dangling); err != nil {
		return nil, err
	}
	for i := range rep.Items {
		if it := &rep.Items[i]; it.Rule == api.LintDanglingOwner.ID {
			l := dangling[0]
			dangling = dangling[1:]
			it.Message = danglingMessage(l, ownerName(l.Ref), now)
		}
	}
	return rep, nil
}

// LintCounts are the numbers of findings of every rule in the whole
// mirror, by namespace, as one read found them at At.
type LintCounts struct {
	At          time.Time
	byNamespace map[string]map[string]int // rule ID → findings
	total       map[string]int
}

// Of returns every rule's count in namespace, or in the whole mirror for "".
// The map is the caller's.
func (c *LintCounts) Of(namespace string) map[string]int {
	from := c.total
	if namespace != "" {
		from = c.byNamespace[namespace]
	}
	out := make(map[string]int, len(api.LintRules))
	for _, r := range api.LintRules {
		out[r.ID] = from[r.ID]
	}
	return out
}

// CountLint counts the findings of every rule in the whole mirror, by
// namespace, in one read of every lint candidate: its cost grows with the
// findings, so its result is kept and shared (http.LintCounter), made for
// a request only while it is quick.
func CountLint(ctx context.Context, src LintSource, now time.Time) (*LintCounts, error) {
	c := &LintCounts{At: now, byNamespace: map[string]map[string]int{}, total: map[string]int{}}
	err := src.LintRefs(ctx, "", func(l *db.LintRef) error {
		for _, fd := range checkRef(l, now, false) {
			ns := c.byNamespace[l.Dependent.Namespace]
			if ns == nil {
				ns = map[string]int{}
				c.byNamespace[l.Dependent.Namespace] = ns
			}
			ns[fd.Rule]++
			c.total[fd.Rule]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// NoteDiscoveryFailures rewords the findings that an owner's kind is not
// served when discovery of the owner's API group/version fails right now
// (failures maps each to its error, as ingest reports them): the kind may
// well be served, by an aggregated API that is down, and the garbage
// collector waits for it; it does not give the object up for good.
func NoteDiscoveryFailures(findings []api.LintFinding, failures map[string]string) {
	for i := range findings {
		f := &findings[i]
		ref := f.OwnerReference
		cause, ok := failures[ref.APIVersion]
		if !ok || f.Rule != api.LintOwnerKindUnserved.ID {
			continue
		}
		f.Message = fmt.Sprintf("discovery of %s fails right now (%s): the owner's kind %s cannot be resolved, so owner %q "+
			"is neither found nor taken for absent; the garbage collector leaves this object alone and tries again "+
			"after each discovery", ref.APIVersion, cause, kindOf(ref.APIVersion, ref.Kind), ref.Name)
	}
}
