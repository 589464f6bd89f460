package openapi

import (
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/kubegcd/kubegcd/internal/api"
)

// enums are the values a string property of an answer takes, by
// "Schema.property", from package api's vocabulary.
var enums = map[string][]string{
	"AuditEntry.controller":               api.Strings(api.AuditControllers),
	"AuditEntry.outcome":                  api.Strings(api.Outcomes),
	"Pending.controller":                  api.Strings(api.Controllers),
	"ControllerStatus.name":               api.Strings(api.Controllers),
	"LeaseItem.role":                      api.Strings(api.LeaseRoles),
	"LeaseFinding.kind":                   api.Strings(api.LeaseFindingKinds),
	"LintFinding.severity":                api.Strings(api.Severities),
	"LintFinding.rule":                    lintRuleIDs(),
	"StuckItem.state":                     api.Strings(api.StuckStates),
	"Blocker.type":                        api.Strings(api.BlockerTypes),
	"CascadeItem.action":                  api.Strings(api.CascadeActions),
	"HistoryItem.event":                   api.Strings(api.HistoryEvents),
	"Owner.state":                         api.Strings(api.OwnerStates),
	"ReleaseResult.status":                {api.StatusReleased},
	"EnforcementStatus.blastRadiusResume": api.Strings(api.BlastRadiusResumes),
}

func lintRuleIDs() []string {
	var ids []string
	for _, r := range api.LintRules {
		ids = append(ids, r.ID)
	}
	return ids
}

// addEnums sets the enum of each property enums names in defs.
func addEnums(defs map[string]*jsonschema.Schema) {
	for key, values := range enums {
		name, prop, _ := strings.Cut(key, ".")
		s := defs[name]
		if s == nil || s.Properties == nil {
			continue
		}
		p, ok := s.Properties.Get(prop)
		if !ok {
			continue
		}
		p.Enum = nil
		for _, v := range values {
			p.Enum = append(p.Enum, v)
		}
	}
}
