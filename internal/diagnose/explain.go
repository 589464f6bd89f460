package diagnose

import (
	"fmt"
	"strings"

	"github.com/kubegcd/kubegcd/internal/api"
)

// ExplainObject completes why, the words on whether an object is pending,
// with what /stuck and /lint know of it: while it is being deleted, what
// holds it and who should let it go (stuck; nil when it is not being
// deleted); and, unless a decision is pending, which already is the answer,
// what is wrong with its ownerReferences: how long one has dangled, or that
// ownergc can never resolve one.
func ExplainObject(why string, pending bool, stuck *api.StuckItem, findings []api.LintFinding) string {
	parts := []string{why}
	if stuck != nil && stuck.Explanation != "" {
		parts = append(parts, stuck.Explanation)
	}
	if !pending {
		for _, f := range findings {
			parts = append(parts, fmt.Sprintf("Its ownerReference to %s %s: %s (%s %s, %s).",
				f.OwnerReference.Kind, f.OwnerReference.Name, strings.TrimSuffix(f.Message, "."), f.Rule, f.Name, f.Severity))
		}
	}
	return strings.Join(parts, " ")
}
