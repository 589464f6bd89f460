package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubeconfigPrecedence: --kubeconfig (command line, then config file)
// wins over the systemd credential, which wins over $KUBECONFIG (and so over
// ~/.kube/config, which client-go reads only without $KUBECONFIG).
func TestKubeconfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	// Each kubeconfig names a server of its own, which tells which was read.
	kubeconfig := func(path, server string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		content := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
			"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: c\n", server)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	flagFile := kubeconfig(filepath.Join(dir, "flag"), "https://flag:6443")
	confFile := kubeconfig(filepath.Join(dir, "conf"), "https://config-file:6443")
	credDir := filepath.Join(dir, "credentials")
	kubeconfig(filepath.Join(credDir, "kubeconfig"), "https://credential:6443")
	envFile := kubeconfig(filepath.Join(dir, "env"), "https://env:6443")
	config := filepath.Join(dir, "kubegcd.conf")
	if err := os.WriteFile(config, []byte("kubeconfig = "+confFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		args        []string
		credentials string // $CREDENTIALS_DIRECTORY
		kubeconfig  string // $KUBECONFIG
		want        string
	}{
		{name: "flag over all", args: []string{"--kubeconfig", flagFile, "--config", config}, credentials: credDir, kubeconfig: envFile,
			want: "https://flag:6443"},
		{name: "config file over the credential", args: []string{"--config", config}, credentials: credDir, kubeconfig: envFile,
			want: "https://config-file:6443"},
		{name: "credential over $KUBECONFIG", credentials: credDir, kubeconfig: envFile, want: "https://credential:6443"},
		{name: "no such credential", credentials: filepath.Join(dir, "none"), kubeconfig: envFile, want: "https://env:6443"},
		{name: "no credential", kubeconfig: envFile, want: "https://env:6443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CREDENTIALS_DIRECTORY", tt.credentials)
			t.Setenv("KUBECONFIG", tt.kubeconfig)
			c, err := parseRunFlags(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := c.restConfig()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(rc.Host, "/"); got != tt.want {
				t.Errorf("server %s, want %s", got, tt.want)
			}
		})
	}
}
