package openapi

import (
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/kubegcd/kubegcd/internal/api"
)

// typeEnums are the values each string type of package api's vocabulary
// takes, for every property of that type.
var typeEnums = map[reflect.Type][]string{
	reflect.TypeFor[api.Controller]():        api.Strings(api.AuditControllers),
	reflect.TypeFor[api.Outcome]():           api.Strings(api.Outcomes),
	reflect.TypeFor[api.LeaseRole]():         api.Strings(api.LeaseRoles),
	reflect.TypeFor[api.LeaseFindingKind]():  api.Strings(api.LeaseFindingKinds),
	reflect.TypeFor[api.Severity]():          api.Strings(api.Severities),
	reflect.TypeFor[api.StuckState]():        api.Strings(api.StuckStates),
	reflect.TypeFor[api.BlockerType]():       api.Strings(api.BlockerTypes),
	reflect.TypeFor[api.CascadeAction]():     api.Strings(api.CascadeActions),
	reflect.TypeFor[api.HistoryEvent]():      api.Strings(api.HistoryEvents),
	reflect.TypeFor[api.OwnerState]():        api.Strings(api.OwnerStates),
	reflect.TypeFor[api.BlastRadiusResume](): api.Strings(api.BlastRadiusResumes),
}

// typeEnum is the schema of a property of one of typeEnums' types; nil
// for any other type.
func typeEnum(t reflect.Type) *jsonschema.Schema {
	values, ok := typeEnums[t]
	if !ok {
		return nil
	}
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// enums are the values a string property of an answer takes, by
// "Schema.property", where its type allows more: only the controllers
// hold pending decisions and report their passes, and the rule ids and
// the release's status have no type of their own.
var enums = map[string][]string{
	"Pending.controller":    api.Strings(api.DecidingControllers),
	"ControllerStatus.name": api.Strings(api.Controllers),
	"LintFinding.rule":      lintRuleIDs(),
	"ReleaseResult.status":  {api.StatusReleased},
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
