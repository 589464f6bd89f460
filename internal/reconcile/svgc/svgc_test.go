package svgc

import (
	"testing"
	"time"

	v1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entries(versions ...string) []v1alpha1.ServerStorageVersion {
	var out []v1alpha1.ServerStorageVersion
	for i, v := range versions {
		out = append(out, v1alpha1.ServerStorageVersion{APIServerID: string(rune('a' + i)), EncodingVersion: v})
	}
	return out
}

func TestSetCommonEncodingVersion(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	v1, v2 := "g/v1", "g/v2"
	for _, c := range []struct {
		name       string
		entries    []v1alpha1.ServerStorageVersion
		old        *string
		oldCond    *v1alpha1.StorageVersionCondition
		wantCommon *string
		wantStatus v1alpha1.ConditionStatus
		wantReason string
		wantLTT    time.Time
	}{
		{"all agree", entries(v1, v1), nil, nil, &v1, v1alpha1.ConditionTrue, "CommonEncodingVersionSet", t1},
		{"disagree", entries(v1, v2), nil, nil, nil, v1alpha1.ConditionFalse, "CommonEncodingVersionUnset", t1},
		{"none", nil, &v1, nil, nil, v1alpha1.ConditionFalse, "CommonEncodingVersionUnset", t1},
		{"same status keeps its transition time", entries(v1), &v1,
			&v1alpha1.StorageVersionCondition{Type: v1alpha1.AllEncodingVersionsEqual, Status: v1alpha1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			&v1, v1alpha1.ConditionTrue, "CommonEncodingVersionSet", t0},
		{"a new common version is a transition", entries(v2), &v1,
			&v1alpha1.StorageVersionCondition{Type: v1alpha1.AllEncodingVersionsEqual, Status: v1alpha1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			&v2, v1alpha1.ConditionTrue, "CommonEncodingVersionSet", t1},
	} {
		sv := &v1alpha1.StorageVersion{Status: v1alpha1.StorageVersionStatus{StorageVersions: c.entries, CommonEncodingVersion: c.old}}
		if c.oldCond != nil {
			sv.Status.Conditions = []v1alpha1.StorageVersionCondition{*c.oldCond}
		}
		SetCommonEncodingVersion(sv, t1)
		got := sv.Status.CommonEncodingVersion
		if (got == nil) != (c.wantCommon == nil) || got != nil && *got != *c.wantCommon {
			t.Errorf("%s: common %v, want %v", c.name, got, c.wantCommon)
		}
		if len(sv.Status.Conditions) != 1 {
			t.Fatalf("%s: conditions %+v", c.name, sv.Status.Conditions)
		}
		cond := sv.Status.Conditions[0]
		if cond.Status != c.wantStatus || cond.Reason != c.wantReason || !cond.LastTransitionTime.Time.Equal(c.wantLTT) {
			t.Errorf("%s: condition %+v", c.name, cond)
		}
	}
}
