package http

import (
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/db"
)

var updateGoldens = flag.Bool("update-goldens", false, "rewrite testdata/api from the answers encoded now")

// goldenTime is the time every golden answer uses.
var goldenTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// goldenAnswers are representative answers of the decision and diagnosis
// endpoints, built as the handlers build them: from db rows through each
// endpoint's mapping where it has one.
func goldenAnswers() map[string]any {
	later := goldenTime.Add(time.Hour)
	yes, no := true, false
	dur, transitions := int32(15), int32(2)
	age := 3.5
	target := api.Target{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "default", Name: "web-1", UID: "u-1"}
	pod := api.Target{APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "web-1-x", UID: "u-2"}
	ns := api.Target{APIVersion: "v1", Kind: "Namespace", Name: "gone", UID: "u-3"}
	cm := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "old", UID: "u-4"}
	restored := api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "old", UID: "u-5"}
	secret := api.Target{APIVersion: "v1", Kind: "Secret", Namespace: "default", Name: "creds", UID: "u-6"}
	return map[string]any{
		"error": api.Error{Error: "invalid limit \"0\": want a number from 1 to 1000"},
		"audit": auditListOf([]db.AuditEntry{
			{ID: 7, Time: goldenTime, Instance: "kubegcd-0", Controller: "ownergc", Rule: "orphaned-dependent", Action: "delete",
				Target: target, Facts: json.RawMessage(`{"owner":"u-0"}`), Reason: "owner u-0 is gone", DryRun: true, Outcome: "dry-run"},
			{ID: 6, Time: goldenTime, Instance: "kubegcd-0", Controller: "operator", Action: "release", Reason: "checked", Outcome: "applied", Error: ""},
			{ID: 5, Time: goldenTime, Controller: "podgc", Rule: "terminated", Action: "delete", Target: pod, Outcome: "failed", Error: "forbidden"},
		}, 5),
		"audit-empty": auditListOf([]db.AuditEntry{}, 0),
		"audit-null":  auditListOf(nil, 0),
		"pending": pendingListOf([]db.Pending{
			{Controller: "ownergc", Rule: "orphaned-dependent", Action: "delete", Reason: "owner gone", Since: goldenTime,
				NotBefore: &later, Target: target, ResourceVersion: "12"},
			{Controller: "ttl", Rule: "ttl", Action: "delete", Reason: "expired", Since: goldenTime, Target: pod},
		}, "abc", goldenTime),
		"pending-empty": pendingListOf([]db.Pending{}, "", goldenTime),
		"overview": overviewOf(map[api.Controller]int{"ownergc": 2, "podgc": 0, "svgc": 0, "ttl": 1},
			[]api.DeletionBucket{{Start: goldenTime, Applied: 1, DryRun: 2}, {Start: later}},
			[]api.DeletionBucket{{Start: goldenTime, Applied: 3}}),
		"stuck": api.StuckList{Items: []api.StuckItem{
			{Target: ns, DeletionRequested: goldenTime, Age: 600, State: api.StateNamespaceTerminating,
				Blockers: []api.Blocker{{Type: api.BlockerNamespaceContent, Target: &pod, Counts: map[string]int{"Pod": 3}, Reason: "left",
					Blockers: []api.Blocker{{Type: api.BlockerFinalizer, Finalizer: "example.com/x", Reason: "held"}}},
					{Type: api.BlockerDiscovery, GroupVersion: "metrics.k8s.io/v1beta1", Reason: "fails"}},
				Conditions: []api.Condition{{Type: "NamespaceContentRemaining", Status: "True", Reason: "SomeResourcesRemain", Message: "pods left"},
					{Type: "NamespaceDeletionDiscoveryFailure", Status: "False"}},
				Explanation: "it waits"},
			{Target: target, DeletionRequested: goldenTime, Age: 1, State: api.StateFinalizing, Blockers: []api.Blocker{}, Explanation: "x"},
		}, Truncated: true, MinAge: "5m0s"},
		"stuck-empty": api.StuckList{Items: []api.StuckItem{}, MinAge: "0s"},
		"lint": api.LintReport{Items: []api.LintFinding{
			{Rule: api.LintDanglingOwner.ID, Name: api.LintDanglingOwner.Name, Severity: api.LintDanglingOwner.Severity,
				Target: pod, OwnerReference: api.OwnerRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-0", UID: "u-0", Controller: &yes, BlockOwnerDeletion: &no},
				Message: "owner gone"},
			{Rule: api.LintCrossNamespace.ID, Name: api.LintCrossNamespace.Name, Severity: api.LintCrossNamespace.Severity,
				Target: target, OwnerReference: api.OwnerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "u-9"}},
		}, Counts: map[string]int{"KG-LINT-01": 1, "KG-LINT-03": 1}, CountsAt: goldenTime, Truncated: true},
		"lint-empty": api.LintReport{Items: []api.LintFinding{}, Counts: map[string]int{}, CountsAt: goldenTime},
		"leases": api.LeaseList{Items: []api.LeaseItem{
			{Lease: api.Lease{Namespace: "kube-system", Name: "kube-controller-manager", UID: "l-1",
				HolderIdentity: new("a"), LeaseDurationSeconds: &dur, AcquireTime: &goldenTime, RenewTime: &later, LeaseTransitions: &transitions,
				Role: api.LeaseRoleLeaderElection, RenewAgeSeconds: &age, Expired: false},
				HolderChanges: []api.HolderChange{{Holder: "a", Since: &goldenTime, Seen: later}, {Holder: "", Seen: later}},
				Gaps:          []api.LeaseGap{{From: goldenTime, To: &later}, {From: later}}},
			{Lease: api.Lease{Namespace: "kube-node-lease", Name: "n1", UID: "l-2", Role: api.LeaseRoleNodeHeartbeat, Expired: true},
				HolderChanges: []api.HolderChange{}, Gaps: []api.LeaseGap{}},
		}},
		"leases-empty": api.LeaseList{Items: []api.LeaseItem{}},
		// Coordinated leader election: strategy, preferred holder,
		// candidates and findings.
		"leases-coordinated": leaseListOf(leaseFixture(goldenTime), nil, goldenTime),
		"released":           api.ReleaseResult{Status: api.StatusReleased},
		"rules":              testRuleList(),
		"rules-empty":        api.RuleList{Items: []api.RuleInfo{}, Errors: []api.RuleError{}, Dir: "/etc/kubegcd/rules.d", Files: []string{}},
		"rule-matches": api.RuleMatchList{Items: []api.RuleMatch{
			{UID: "u-1", APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "old", Reason: "unreferenced since 2026-01-01",
				Since: &goldenTime, LastMatched: &later},
			{UID: "u-2", APIVersion: "v1", Kind: "Namespace", Name: "tmp", Reason: "kubegcd.io/ttl: soon does not parse",
				Finding: true, Since: &goldenTime},
		}, Next: "abc"},
		"rule-evaluation": ruleEvaluationOf(&RuleEvaluation{Rules: []EvaluatedRule{
			{ID: "unused-configmaps", Hash: "h1", At: goldenTime, Duration: 1500 * time.Microsecond,
				Matches: []db.RuleMatch{{UID: "u-2", Reason: "b"}, {UID: "u-1", Reason: "a"}, {UID: "gone"}}},
			{ID: "endless", Hash: "h2", At: goldenTime, Duration: 10 * time.Second, Error: "over the time limit: it ran longer than 10s"},
		}, Errors: []api.RuleError{{File: "body", Line: 3, Rule: "attach", Field: "rules[2].select", Detail: "not allowed: ATTACH",
			Message: "body:3: rules[2].select: not allowed: ATTACH"}}},
			map[string]api.Target{"u-1": target, "u-2": pod}),
		"deleted-copies": api.DeletedCopyList{Items: []api.DeletedCopy{
			deletedCopyOf(db.DeletedCopy{Target: cm, Resource: "configmaps", Controller: api.ControllerRules,
				RuleID: "unused-configmaps", RuleHash: "h1", TakenAt: goldenTime, Size: 312,
				RestoredUID: "u-5", RestoredAt: &later, RestoredBy: "alice from 127.0.0.1:5000 (kubegcd)"}),
			deletedCopyOf(db.DeletedCopy{Target: secret, Resource: "secrets", Controller: api.ControllerOwnerGC,
				TakenAt: goldenTime, Size: 140, SecretDataDropped: true}),
		}, Next: "abc"},
		"deleted-copies-empty": api.DeletedCopyList{Items: []api.DeletedCopy{}},
		"deleted-copy": api.DeletedCopyDetail{Copy: deletedCopyOf(db.DeletedCopy{Target: cm, Resource: "configmaps",
			Controller: api.ControllerOwnerGC, TakenAt: goldenTime, Size: 312}),
			Object: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"old","namespace":"default","uid":"u-4"},"data":{"k":"v"}}`)},
		"restored": api.RestoreResult{Target: restored, DeletedUID: "u-4",
			DroppedOwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-0"}}},
		"restored-secret": api.RestoreResult{Target: api.Target{APIVersion: "v1", Kind: "Secret", Namespace: "default",
			Name: "creds", UID: "u-7"}, DeletedUID: "u-6", SecretDataEmpty: true},
		"history-restored": api.ObjectHistory{Target: &restored, Items: []api.HistoryItem{}, Audit: []api.AuditEntry{},
			RestoredFrom: restorationOf(&db.DeletedCopy{Target: cm, Controller: api.ControllerRules, RuleID: "unused-configmaps",
				TakenAt: goldenTime, RestoredUID: "u-5", RestoredAt: &later, RestoredBy: "alice"})},
	}
}

// TestAPIGoldens encodes each golden answer as writeJSON sends it, compact
// and indented, and compares it with testdata/api/<name>.json: the wire
// stays byte for byte what it was when the goldens were written.
func TestAPIGoldens(t *testing.T) {
	for name, v := range goldenAnswers() {
		t.Run(name, func(t *testing.T) {
			var got []byte
			for _, ua := range []string{"Go-http-client/1.1", "curl/8.5.0"} {
				r := httptest.NewRequest("GET", "/", nil)
				r.Header.Set("User-Agent", ua)
				w := httptest.NewRecorder()
				writeJSON(w, r, 200, v)
				got = append(got, w.Body.Bytes()...)
			}
			path := filepath.Join("testdata", "api", name+".json")
			if *updateGoldens {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s changed:\n got: %s\nwant: %s", name, got, want)
			}
		})
	}
}
