package db

import (
	"encoding/json"
	"testing"
)

// The small structs kept in JSON columns: their stored form, and back.
func TestStoredFields(t *testing.T) {
	taints := []Taint{{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: "NoExecute"}, {Key: "k", Effect: "NoSchedule"}}
	const want = `[{"key":"node.kubernetes.io/out-of-service","value":"nodeshutdown","effect":"NoExecute"},{"key":"k","effect":"NoSchedule"}]`
	got, ok := jsonOrNull(taints).(string)
	if !ok || got != want {
		t.Fatalf("stored %v, want %s", jsonOrNull(taints), want)
	}
	var back []Taint
	if err := json.Unmarshal([]byte(got), &back); err != nil || len(back) != 2 || back[0] != taints[0] || back[1] != taints[1] {
		t.Errorf("read back %+v (%v), want %+v", back, err, taints)
	}
	// What the tagged struct stored before: an empty value as "".
	var old Taint
	if err := json.Unmarshal([]byte(`{"key":"k","value":"","effect":""}`), &old); err != nil || old != (Taint{Key: "k"}) {
		t.Errorf("older form read as %+v (%v)", old, err)
	}
	if err := json.Unmarshal([]byte(`{"key":1}`), &old); err == nil {
		t.Error("a number as key read without an error")
	}
	b, err := marshalFields("a", `"quoted"`, "b", "", "c", "ü")
	if err != nil || string(b) != `{"a":"\"quoted\"","c":"ü"}` {
		t.Errorf("marshalFields: %s, %v", b, err)
	}
}
