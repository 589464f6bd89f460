package db

import (
	"encoding/json"
	"testing"
)

// TestConditionsStored pins the JSON that the namespaces table keeps of a
// namespace's conditions, and that it reads back.
func TestConditionsStored(t *testing.T) {
	conds := []Condition{
		{Type: "NamespaceContentRemaining", Status: "True", Reason: "SomeResourcesRemain", Message: "pods left"},
		{Type: "NamespaceDeletionDiscoveryFailure", Status: "False"},
	}
	const want = `[{"type":"NamespaceContentRemaining","status":"True","reason":"SomeResourcesRemain","message":"pods left"},` +
		`{"type":"NamespaceDeletionDiscoveryFailure","status":"False"}]`
	got, ok := jsonOrNull(conds).(string)
	if !ok || got != want {
		t.Fatalf("stored %v, want %s", jsonOrNull(conds), want)
	}
	var back []Condition
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0] != conds[0] || back[1] != conds[1] {
		t.Errorf("read back %+v, want %+v", back, conds)
	}
}
