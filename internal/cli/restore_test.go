package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
)

// copiesServer answers /deleted-copies with copies (filtered by name) and
// a restore with restored, or a 409 with refusal.
type copiesServer struct {
	copies   []api.DeletedCopy
	refusal  string
	restored api.RestoreResult
	// posted is the path and body of the restore asked for.
	posted string
}

func (s *copiesServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/deleted-copies":
		out := api.DeletedCopyList{Items: []api.DeletedCopy{}}
		for _, dc := range s.copies {
			if name := r.URL.Query().Get("name"); name == "" || name == dc.Target.Name {
				out.Items = append(out.Items, dc)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/restore"):
		b, _ := io.ReadAll(r.Body)
		s.posted = r.URL.Path + " " + string(b)
		if s.refusal != "" {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(api.Error{Error: s.refusal})
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(s.restored)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"no such endpoint"}`)
	}
}

func TestRestore(t *testing.T) {
	taken := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	cm := func(uid, ns string, restoredAs string) api.DeletedCopy {
		return api.DeletedCopy{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg", UID: uid},
			Resource: "configmaps", Controller: api.ControllerRules, Rule: "stale", TakenAt: taken, RestoredUID: restoredAs}
	}
	made := api.RestoreResult{Target: api.Target{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "cfg", UID: "new"},
		DeletedUID: "u1", DroppedOwnerReferences: []api.OwnerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "o1"}}}
	tests := []struct {
		name       string
		copies     []api.DeletedCopy
		refusal    string
		args       []string
		code       int
		wantPosted string
		wantOut    string
		wantErr    string
	}{
		{name: "one copy", copies: []api.DeletedCopy{cm("u1", "a", "")}, args: []string{"restore", "cm/cfg", "-n", "a"},
			wantPosted: `/objects/u1/restore {}`,
			wantOut: "ConfigMap a/cfg restored as uid new (the deleted object's uid was u1)\n" +
				"  ownerReference dropped: ConfigMap owner (uid o1) no longer exists\n"},
		{name: "an empty Secret asked for", copies: []api.DeletedCopy{cm("u1", "a", "")},
			args: []string{"restore", "cm/cfg", "--allow-empty-secret"}, wantPosted: `/objects/u1/restore {"allowEmptySecret":true}`},
		{name: "several copies", copies: []api.DeletedCopy{cm("u2", "a", ""), cm("u1", "b", "")},
			args: []string{"restore", "configmap", "cfg"}, code: 1,
			wantErr: "u2    ConfigMap a/cfg   60m ago   rule stale   <none>\nu1    ConfigMap b/cfg   60m ago   rule stale   <none>\n" +
				`kubegcd: 2 copies of configmap "cfg": give --uid with one of the UIDs listed above` + "\n"},
		{name: "several copies, one picked", copies: []api.DeletedCopy{cm("u2", "a", ""), cm("u1", "b", "")},
			args: []string{"restore", "configmap/cfg", "--uid", "u1"}, wantPosted: `/objects/u1/restore {}`},
		{name: "one left to restore", copies: []api.DeletedCopy{cm("u2", "a", "n2"), cm("u1", "a", "")},
			args: []string{"restore", "configmap/cfg"}, wantPosted: `/objects/u1/restore {}`},
		{name: "every copy restored: the server says so", copies: []api.DeletedCopy{cm("u2", "a", "n2")},
			refusal: "restore refused: the copy of ConfigMap a/cfg (uid u2) was already restored as uid n2",
			args:    []string{"restore", "configmap/cfg"}, wantPosted: `/objects/u2/restore {}`, code: 1,
			wantErr: "restore refused: the copy of ConfigMap a/cfg (uid u2) was already restored as uid n2\n"},
		{name: "no copy", args: []string{"restore", "cm/cfg", "-n", "a"}, code: 1,
			wantErr: `kubegcd: no copy of cm "cfg" is kept in namespace a (see 'get deleted-copies')`},
		{name: "no copy of that uid", copies: []api.DeletedCopy{cm("u1", "a", "")},
			args: []string{"restore", "cm/cfg", "--uid", "x"}, code: 1, wantErr: `has uid x: the copies are listed above`},
		{name: "no name", args: []string{"restore", "cm"}, code: 2, wantErr: "want KIND/NAME or KIND NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &copiesServer{copies: tt.copies, refusal: tt.refusal, restored: made}
			srv := httptest.NewServer(s)
			defer srv.Close()
			code, out, errOut := runRulesCLI(t, srv, nil, Local{}, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.code, out, errOut)
			}
			if tt.wantPosted != "" && s.posted != tt.wantPosted+"\n" && s.posted != tt.wantPosted {
				t.Errorf("posted %q, want %q", s.posted, tt.wantPosted)
			}
			if tt.wantPosted == "" && tt.code != 0 && s.posted != "" {
				t.Errorf("a refused command posted %q", s.posted)
			}
			if tt.wantOut != "" && out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestGetDeletedCopies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, apiGolden(t, "deleted-copies"))
	}))
	defer srv.Close()
	code, out, errOut := runRulesCLI(t, srv, nil, Local{}, "get", "deleted-copies", "-o", "wide", "--limit", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "NAMESPACE   KIND        NAME    DELETED BY               AGE   RESTORED AS   API VERSION   UID   SIZE   SECRET DATA\n" +
		"default     ConfigMap   old     rule unused-configmaps   60m   u-5           v1            u-4   312    <none>\n" +
		"default     Secret      creds   ownergc                  60m   <none>        v1            u-6   140    dropped\n"
	if out != want {
		t.Errorf("table:\n%s\nwant:\n%s", out, want)
	}
}

func TestWhyRestored(t *testing.T) {
	taken := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	restoredAt := taken.Add(10 * time.Minute)
	d := api.ObjectDetail{
		Object: api.Object{UID: "new", APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "cfg", Finalizers: []string{},
			OwnerReferences: []api.ObjectOwnerRef{}},
		Owners: []api.Owner{}, Dependents: []api.Dependent{}, Lint: []api.LintFinding{},
		History: api.RecentHistory{Items: []api.HistoryItem{}},
		RestoredFrom: &api.Restoration{DeletedUID: "old", RestoredUID: "new", DeletedBy: api.ControllerRules, Rule: "stale",
			TakenAt: taken, RestoredAt: &restoredAt, RestoredBy: "alice"},
		SparedBy: []api.SparedBy{{Rule: "stale", RuleHash: "h1", Since: restoredAt}},
	}
	var b bytes.Buffer
	if err := printWhy(&b, &d, taken.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want := "\nRestored:\n  from uid old, deleted by rule stale 60m ago; restored 50m ago by alice\n" +
		"  rule stale leaves it alone while its text hashes to h1 (since 50m ago)\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("why does not say\n%s\nin:\n%s", want, b.String())
	}
}
