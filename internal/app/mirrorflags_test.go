package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMirrorFlags: --mirror-labels, --mirror-annotations and
// --reference-path parse at start, from the command line or the config
// file, and a bad value is a usage error (exit 2) naming its flag.
func TestMirrorFlags(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "kubegcd.conf")
	if err := os.WriteFile(conf, []byte("mirror-labels = configmaps=[app,team],*=[example.com/owner]\n"+
		"reference-path = Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret\n"),
		0o600); err != nil {
		t.Fatal(err)
	}
	badConf := filepath.Join(t.TempDir(), "bad.conf")
	if err := os.WriteFile(badConf, []byte("reference-path = Gateway:{.spec:Secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                string
		args                []string
		labels, annotations string
		paths               string
		wantErr             string
	}{
		{name: "none", args: nil},
		{name: "repeated", args: []string{"--mirror-labels", "pods=[app]", "--mirror-labels=*=[team]",
			"--mirror-annotations", "secrets=[*]", "--reference-path", "Certificate.cert-manager.io:{.spec.secretName}:Secret",
			"--reference-path", "Widget.example.com:{.spec.configs[*].name}:ConfigMap"},
			labels: "*=[team],pods=[app]", annotations: "secrets=[*]",
			paths: "Certificate.cert-manager.io:{.spec.secretName}:Secret Widget.example.com:{.spec.configs[*].name}:ConfigMap"},
		{name: "config file", args: []string{"--config", conf},
			labels: "*=[example.com/owner],configmaps=[app,team]",
			paths:  "Gateway.gateway.networking.k8s.io:{.spec.listeners[*].tls.certificateRefs[*]}:Secret"},
		{name: "labels without brackets", args: []string{"--mirror-labels", "pods=app"},
			wantErr: `kubegcd: invalid --mirror-labels "pods=app": "pods=app": want RESOURCE=[KEY,...]`},
		{name: "a bad annotation key", args: []string{"--mirror-annotations", "*=[not a key]"},
			wantErr: `invalid --mirror-annotations "*=[not a key]": "*=[not a key]": key "not a key"`},
		{name: "a path without JSONPath", args: []string{"--reference-path", "Gateway:Secret"},
			wantErr: `kubegcd: invalid --reference-path "Gateway:Secret": "Gateway:Secret": want KIND[.GROUP]:{JSONPATH}:KIND[.GROUP]`},
		{name: "a JSONPath that does not parse", args: []string{"--reference-path", "Gateway:{.spec[}:Secret"},
			wantErr: `invalid --reference-path "Gateway:{.spec[}:Secret": Gateway: JSONPath {.spec[}`},
		{name: "a path that would read Secrets", args: []string{"--reference-path", "Secret:{.metadata.name}:ConfigMap"},
			wantErr: `invalid --reference-path "Secret:{.metadata.name}:ConfigMap": a Secret is never read in full`},
		{name: "a bad path in the config file", args: []string{"--config", badConf},
			wantErr: `bad.conf:1: invalid value "Gateway:{.spec:Secret" for reference-path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseRunFlags(tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{c.mirrorLabels.String(), c.mirrorAnnotations.String(), c.referencePaths.String()}
			if diff := cmp.Diff([]string{tc.labels, tc.annotations, tc.paths}, got); diff != "" {
				t.Errorf("labels, annotations, paths (-want +got):\n%s", diff)
			}
		})
	}
}
