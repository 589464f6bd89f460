package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The audit sinks' flags: a log path whose directory is missing, or a
// webhook kubeconfig that does not parse, stop kubegcd at start with one
// line naming the flag; good ones reach the configuration.
func TestAuditSinkFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kubeconfig := write("webhook.kubeconfig", `apiVersion: v1
kind: Config
clusters:
- name: logs
  cluster: {server: "https://logs.example.com/audit"}
contexts:
- name: default
  context: {cluster: logs, user: ""}
current-context: default
`)
	garbage := write("garbage.kubeconfig", "{not: [yaml")
	missingDir := filepath.Join(dir, "missing", "audit.log")
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "log and webhook", args: []string{"--audit-log-path", filepath.Join(dir, "audit.log"),
			"--audit-log-maxsize", "5", "--audit-log-maxbackup", "3", "--audit-webhook-config-file", kubeconfig}},
		{name: "standard output", args: []string{"--audit-log-path", "-"}},
		{name: "log directory missing", args: []string{"--audit-log-path", missingDir},
			wantErr: "kubegcd: invalid --audit-log-path " + missingDir + ": its directory " + filepath.Dir(missingDir) +
				" must exist"},
		{name: "webhook kubeconfig missing", args: []string{"--audit-webhook-config-file", filepath.Join(dir, "nope")},
			wantErr: "kubegcd: invalid --audit-webhook-config-file " + filepath.Join(dir, "nope") +
				": want a kubeconfig that names the receiver: stat " + filepath.Join(dir, "nope") +
				": no such file or directory"},
		{name: "webhook kubeconfig garbage", args: []string{"--audit-webhook-config-file", garbage},
			wantErr: "kubegcd: invalid --audit-webhook-config-file " + garbage +
				": want a kubeconfig that names the receiver: "},
		{name: "batch larger than the buffer", args: []string{"--audit-webhook-batch-buffer-size", "10",
			"--audit-webhook-batch-max-size", "20"},
			wantErr: "kubegcd: invalid --audit-webhook-batch-max-size 20: " +
				"must be at least 1 and at most --audit-webhook-batch-buffer-size"},
		{name: "no rotation size", args: []string{"--audit-log-maxsize", "0"},
			wantErr: "kubegcd: invalid --audit-log-maxsize 0: must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseRunFlags(tc.args...)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v\nwant  %s…", err, tc.wantErr)
			case tc.wantErr != "":
				return
			}
			s := cfg.auditSinks
			if tc.name == "log and webhook" && (s.log.MaxSizeMB != 5 || s.log.MaxBackups != 3 ||
				s.webhookURL.String() != "https://logs.example.com/audit" || s.webhookClient == nil) {
				t.Errorf("configuration %+v", s)
			}
		})
	}
}
