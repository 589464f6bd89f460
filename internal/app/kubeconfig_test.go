package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
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
			rc, err := c.restConfig(func(string, ...any) {})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(rc.Host, "/"); got != tt.want {
				t.Errorf("server %s, want %s", got, tt.want)
			}
		})
	}
}

// TestKubeconfigServerPassword: the user info of the kubeconfig's server
// URL never stays in the client's host, which client-go quotes in its log
// lines; it is sent as basic auth when nothing else authenticates, and
// left out when a token, a username or a plugin does.
func TestKubeconfigServerPassword(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name               string
		server, user       string // the kubeconfig's cluster server and user entry
		wantHost           string
		wantUser, wantPass string
		wantWarning        bool // that the URL's user and password are not sent
	}{
		{name: "alone", server: "https://kubeadmin:Pw-1@api.example:6443", user: "{}",
			wantHost: "https://api.example:6443", wantUser: "kubeadmin", wantPass: "Pw-1"},
		{name: "with a path", server: "https://kubeadmin:Pw-1@api.example:6443/prefix", user: "{}",
			wantHost: "https://api.example:6443/prefix", wantUser: "kubeadmin", wantPass: "Pw-1"},
		{name: "escaped", server: "https://kube%20admin:p%40ss%3Aw@api.example:6443", user: "{}",
			wantHost: "https://api.example:6443", wantUser: "kube admin", wantPass: "p@ss:w"},
		{name: "no scheme", server: "kubeadmin:Pw-1@api.example:6443", user: "{}",
			wantHost: "api.example:6443", wantUser: "kubeadmin", wantPass: "Pw-1"},
		{name: "a user without password", server: "https://kubeadmin@api.example:6443", user: "{}",
			wantHost: "https://api.example:6443", wantUser: "kubeadmin"},
		{name: "beside a token", server: "https://kubeadmin:Pw-1@api.example:6443", user: "{token: t}",
			wantHost: "https://api.example:6443", wantWarning: true},
		{name: "beside a username", server: "https://kubeadmin:Pw-1@api.example:6443", user: "{username: u, password: p}",
			wantHost: "https://api.example:6443", wantUser: "u", wantPass: "p", wantWarning: true},
		{name: "beside a plugin", server: "https://kubeadmin:Pw-1@api.example:6443",
			user:     "{exec: {apiVersion: client.authentication.k8s.io/v1, command: kubectl-login, interactiveMode: Never}}",
			wantHost: "https://api.example:6443", wantWarning: true},
		{name: "no user info", server: "https://api.example:6443", user: "{token: t}", wantHost: "https://api.example:6443"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprint(i))
			content := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
				"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: %s\ncurrent-context: c\n", tt.server, tt.user)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := parseRunFlags("--kubeconfig", path)
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			rc, err := c.restConfig(func(msg string, args ...any) { warnings = append(warnings, fmt.Sprint(msg, args)) })
			if err != nil {
				t.Fatal(err)
			}
			if got := len(warnings) > 0; got != tt.wantWarning {
				t.Errorf("warnings %q, want one: %v", warnings, tt.wantWarning)
			}
			for _, w := range warnings {
				if strings.Contains(w, "Pw-1") || !strings.Contains(w, "kubeadmin") {
					t.Errorf("warning %q: want the user named and the password not", w)
				}
			}
			if rc.Host != tt.wantHost || rc.Username != tt.wantUser || rc.Password != tt.wantPass {
				t.Errorf("host %q, basic auth %q:%q; want %q, %q:%q", rc.Host, rc.Username, rc.Password, tt.wantHost, tt.wantUser, tt.wantPass)
			}
			// client-go refuses basic auth beside a token.
			if _, err := rest.HTTPClientFor(rc); err != nil {
				t.Errorf("no client for the configuration: %v", err)
			}
		})
	}
}
