package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegcd/kubegcd/internal/api"
	"github.com/kubegcd/kubegcd/internal/diagnose"
)

// parseRunFlags runs `kubegcd run args` as Main does, with a daemon that
// only keeps its configuration: the configuration, or the one line that
// kubegcd prints before it exits 2.
func parseRunFlags(args ...string) (*runConfig, error) {
	var got *runConfig
	var stdout, stderr bytes.Buffer
	p := &program{stdout: &stdout, stderr: &stderr, daemon: func(_ context.Context, cfg *runConfig, _ *slog.Logger) error {
		got = cfg
		return nil
	}}
	code := p.main(context.Background(), append([]string{"run"}, args...))
	switch {
	case code == exitOK && got != nil:
		return got, nil
	case code == exitUsage && stdout.Len() == 0 && strings.Count(stderr.String(), "\n") == 1:
		return nil, errors.New(strings.TrimSuffix(stderr.String(), "\n"))
	}
	return nil, fmt.Errorf("exit %d, stdout %q, stderr %q: want 0 and a configuration, or 2 and one line", code, stdout.String(), stderr.String())
}

func TestParseRunFlags(t *testing.T) {
	dir := t.TempDir()
	cfgFile := func(content string) string {
		p := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".conf")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		args    func() []string
		wantErr string
		check   func(t *testing.T, c *runConfig)
	}{
		{name: "defaults", args: func() []string { return nil }, check: func(t *testing.T, c *runConfig) {
			if !c.dryRun || c.dbPath != "kubegcd.db" || c.blastRadiusResume != "auto" || c.listen != "127.0.0.1:8080" || c.discoveryInterval != 30*time.Second ||
				strings.Join(api.Strings(c.controllers), ",") != "ownergc,podgc,ttl,svgc,lcgc" || c.logFormat != "auto" || c.leaseCandidateGCPeriod != 30*time.Minute {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "config file, command line wins", args: func() []string {
			return []string{"--config", cfgFile("# kubegcd\ndb = /var/lib/kubegcd/k.db\n--dry-run=false\nlisten = \"0.0.0.0:9000\"\n\ncontrollers=podgc\n"),
				"--listen", "127.0.0.1:1"}
		}, check: func(t *testing.T, c *runConfig) {
			if c.dbPath != "/var/lib/kubegcd/k.db" || c.dryRun || c.listen != "127.0.0.1:1" || strings.Join(api.Strings(c.controllers), ",") != "podgc" {
				t.Errorf("config: %+v", c)
			}
		}},
		{name: "config unknown setting", args: func() []string { return []string{"--config", cfgFile("colour = blue\n")} },
			wantErr: `:1: unknown setting "colour"`},
		{name: "config without =", args: func() []string { return []string{"--config", cfgFile("db\n")} },
			wantErr: ":1: want 'flag = value'"},
		{name: "config bad value", args: func() []string { return []string{"--config", cfgFile("\ndry-run = perhaps\n")} },
			wantErr: `:2: invalid value "perhaps" for dry-run`},
		{name: "config missing", args: func() []string { return []string{"--config", filepath.Join(dir, "none")} },
			wantErr: "no such file"},
		{name: "duplicate controllers collapse", args: func() []string { return []string{"--controllers", "ttl, ttl,svgc"} },
			check: func(t *testing.T, c *runConfig) {
				if strings.Join(api.Strings(c.controllers), ",") != "ttl,svgc" {
					t.Errorf("controllers %v", c.controllers)
				}
			}},
		{name: "short discovery interval", args: func() []string { return []string{"--discovery-interval", "10ms"} },
			wantErr: "at least 1s"},
		{name: "stray argument", args: func() []string { return []string{"now"} }, wantErr: `unexpected argument "now"`},
		{name: "blast-radius resume", args: func() []string { return []string{"--blast-radius-resume=manual"} },
			check: func(t *testing.T, c *runConfig) {
				if c.blastRadiusResume != "manual" {
					t.Errorf("blast-radius resume %q", c.blastRadiusResume)
				}
			}},
		{name: "bad blast-radius resume", args: func() []string { return []string{"--blast-radius-resume", "later"} },
			wantErr: `invalid --blast-radius-resume "later": want auto or manual`},
		{name: "stuck after, and who collects", args: func() []string { return []string{"--stuck-after", "90s", "--controllers", "podgc"} },
			check: func(t *testing.T, c *runConfig) {
				if c.stuckAfter != 90*time.Second || c.garbageCollector() != diagnose.UpstreamGC {
					t.Errorf("stuck after %s, collector %v", c.stuckAfter, c.garbageCollector())
				}
			}},
		{name: "negative stuck after", args: func() []string { return []string{"--stuck-after", "-1m"} }, wantErr: "invalid --stuck-after -1m0s"},
		{name: "lint counts' age", args: func() []string { return nil }, check: func(t *testing.T, c *runConfig) {
			if c.lintCountsMaxAge != 30*time.Second {
				t.Errorf("lint counts' max age %s, want 30s", c.lintCountsMaxAge)
			}
		}},
		{name: "lint counts at every request", args: func() []string { return []string{"--lint-counts-max-age", "0"} },
			check: func(t *testing.T, c *runConfig) {
				if c.lintCountsMaxAge != 0 {
					t.Errorf("lint counts' max age %s, want 0", c.lintCountsMaxAge)
				}
			}},
		{name: "negative lint counts' age", args: func() []string { return []string{"--lint-counts-max-age", "-1s"} },
			wantErr: "invalid --lint-counts-max-age -1s"},
		{name: "deleted copies' defaults", args: func() []string { return nil }, check: func(t *testing.T, c *runConfig) {
			if c.deletedCopiesRetention != 720*time.Hour || c.deletedCopiesMaxBytes != 1<<30 || c.keepDeletedSecrets ||
				len(c.deletedCopiesFor) != 0 {
				t.Errorf("copies: retention %s, max %d bytes, secrets %v, for %v", c.deletedCopiesRetention,
					c.deletedCopiesMaxBytes, c.keepDeletedSecrets, c.deletedCopiesFor)
			}
		}},
		{name: "deleted copies for collectors", args: func() []string {
			return []string{"--deleted-copies-for", "ownergc, podgc,ownergc", "--keep-deleted-secrets", "--deleted-copies-max-bytes=0"}
		}, check: func(t *testing.T, c *runConfig) {
			if strings.Join(api.Strings(c.deletedCopiesFor), ",") != "ownergc,podgc" || !c.keepDeletedSecrets ||
				c.deletedCopiesMaxBytes != 0 {
				t.Errorf("copies for %v, secrets %v, max %d", c.deletedCopiesFor, c.keepDeletedSecrets, c.deletedCopiesMaxBytes)
			}
		}},
		{name: "deleted copies for the rules", args: func() []string { return []string{"--deleted-copies-for=rules"} },
			wantErr: `invalid --deleted-copies-for: unknown controller "rules" (known: ownergc, podgc, ttl, svgc, lcgc)`},
		{name: "deleted copies kept briefly", args: func() []string { return []string{"--deleted-copies-retention=10m"} },
			wantErr: "invalid --deleted-copies-retention 10m0s: must be at least 1h"},
		{name: "deleted copies' negative bound", args: func() []string { return []string{"--deleted-copies-max-bytes=-1"} },
			wantErr: "invalid --deleted-copies-max-bytes -1: must be 0 (no bound) or more"},
		{name: "history retention default", args: func() []string { return nil }, check: func(t *testing.T, c *runConfig) {
			if c.historyRetention != 7*24*time.Hour {
				t.Errorf("history retention %s, want 168h", c.historyRetention)
			}
		}},
		{name: "history retention forever", args: func() []string { return []string{"--history-retention=0"} },
			check: func(t *testing.T, c *runConfig) {
				if c.historyRetention != 0 {
					t.Errorf("history retention %s, want 0", c.historyRetention)
				}
			}},
		{name: "history retention short", args: func() []string { return []string{"--history-retention", "30m"} },
			wantErr: "invalid --history-retention 30m0s: must be 0 (forever) or at least 1h"},
		{name: "history retention negative", args: func() []string { return []string{"--history-retention=-1h"} },
			wantErr: "invalid --history-retention -1h0m0s"},
		{name: "history retention not a duration", args: func() []string { return []string{"--history-retention", "7d"} },
			wantErr: `kubegcd: invalid --history-retention "7d": want a duration such as 90s, 5m or 168h, whose largest unit is h (see 'kubegcd help run')`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseRunFlags(tc.args()...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// The example config shipped for systemd must stay valid.
func TestExampleConfigParses(t *testing.T) {
	c, err := parseRunFlags("--config", "../../deploy/kubegcd.conf")
	if err != nil {
		t.Fatal(err)
	}
	// No kubeconfig: the one the unit passes as a credential is read.
	if c.dbPath != "/var/lib/kubegcd/kubegcd.db" || !c.dryRun || c.logFormat != "auto" || c.kubeconfig != "" {
		t.Errorf("example config read as %+v", c)
	}
}

// A repeatable flag may be given on several lines of the config file, and
// leader election's timings are read and checked.
func TestConfigRepeatableAndLeaderFlags(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k.conf")
	if err := os.WriteFile(p, []byte(
		"terminated-pod-gc-threshold-namespace = ci=200\nterminated-pod-gc-threshold-namespace = nightly=0\n"+
			"leader-elect-lease-duration = 30s\nleader-elect-renew-deadline = 20s\nleader-elect-retry-period = 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseRunFlags("--config", p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.namespaceThresholds) != 2 || c.namespaceThresholds["ci"] != 200 || c.namespaceThresholds["nightly"] != 0 {
		t.Errorf("namespace thresholds %v", c.namespaceThresholds)
	}
	if l := c.leader; !l.Enabled || l.LeaseDuration != 30*time.Second || l.RenewDeadline != 20*time.Second || l.RetryPeriod != 5*time.Second {
		t.Errorf("leader config %+v", l)
	}
	for _, bad := range [][]string{
		{"--terminated-pod-gc-threshold-namespace", "ci"},
		{"--terminated-pod-gc-threshold-namespace", "ci=-1"},
		{"--leader-elect-retry-period", "0s"},
		// The fence (3s less 2s) leaves less than two retry periods.
		{"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms"},
		{"--podgc-period", "100ms"},
		{"--terminated-pod-max-age", "-1h"},
	} {
		if _, err := parseRunFlags(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestAllowedHosts(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{nil, "127.0.0.1", ""},
		{[]string{"--listen", ":8080", "--insecure-allow-unauthenticated"}, "", ""},
		{[]string{"--listen", "kubegcd.internal:8080", "--allowed-hosts", " a.example, B.example ,", "--auth-token-file", "t"},
			"kubegcd.internal,a.example,B.example", ""},
		{[]string{"--allowed-hosts", "*"}, "127.0.0.1,*", ""},
		{[]string{"--allowed-hosts", "::1"}, "127.0.0.1,::1", ""},
		{[]string{"--allowed-hosts", "a.example:8080"}, "", `"a.example:8080" is not a host name`},
		{[]string{"--allowed-hosts", "http://a.example"}, "", `"http://a.example" is not a host name`},
	}
	for _, tc := range tests {
		c, err := parseRunFlags(tc.args...)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err = %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if got := strings.Join(c.allowedHosts, ","); got != tc.want {
			t.Errorf("%v: allowed hosts %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestHidePassword(t *testing.T) {
	tests := []struct {
		name, server, s, want string
	}{
		{"the URL", "https://kube:s3cret@api.example:6443", "https://kube:s3cret@api.example:6443",
			"https://kube:xxxxx@api.example:6443"},
		{"in an error", "https://kube:s3cret@api.example:6443/prefix",
			`Get "https://kube:s3cret@api.example:6443/prefix/version": EOF`, `Get "https://kube:xxxxx@api.example:6443/prefix/version": EOF`},
		{"malformed", "https://kube:s3cret@api.example:port", `parse "https://kube:s3cret@api.example:port": invalid port`,
			`parse "https://kube:xxxxx@api.example:port": invalid port`},
		{"an @ in the password", "https://kube:s3c@ret@api.example", "https://kube:s3c@ret@api.example", "https://kube:xxxxx@api.example"},
		{"user only", "https://kube@api.example", "https://kube@api.example", "https://kube@api.example"},
		{"no user info", "https://api.example", "https://api.example", "https://api.example"},
		{"an @ in the path", "https://api.example/a:b@c", "https://api.example/a:b@c", "https://api.example/a:b@c"},
		{"no scheme", "api.example:6443", "api.example:6443", "api.example:6443"},
		{"no scheme, a password", "kube:s3cret@api.example:6443", `"https://kube:s3cret@api.example:6443"`, `"https://kube:xxxxx@api.example:6443"`},
	}
	for _, tc := range tests {
		if got := hidePassword(tc.s, tc.server); got != tc.want {
			t.Errorf("%s: hidePassword(%q, %q) = %q, want %q", tc.name, tc.s, tc.server, got, tc.want)
		}
	}
}

// TestListenNeedsAuthentication: a --listen address other machines reach
// needs a way to authenticate its callers, or the override said aloud.
func TestListenNeedsAuthentication(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--listen", "127.0.0.1:8080"}, ""},
		{[]string{"--listen", "[::1]:8080"}, ""},
		{[]string{"--listen", "localhost:8080"}, ""},
		{[]string{"--listen", ":8080"}, "refusing --listen :8080 without authentication"},
		{[]string{"--listen", "0.0.0.0:8080"}, "give --auth-token-file or --client-ca-file"},
		{[]string{"--listen", "10.0.0.5:8080"}, "--insecure-allow-unauthenticated"},
		{[]string{"--listen", "0.0.0.0:8080", "--auth-token-file", "tokens"}, ""},
		{[]string{"--listen", "0.0.0.0:8080", "--client-ca-file", "ca.pem", "--tls-cert-file", "c", "--tls-private-key-file", "k"}, ""},
		{[]string{"--listen", "0.0.0.0:8080", "--insecure-allow-unauthenticated"}, ""},
		{[]string{"--tls-cert-file", "c"}, "give both or neither"},
		{[]string{"--tls-private-key-file", "k"}, "give both or neither"},
		{[]string{"--client-ca-file", "ca.pem"}, "client certificates need TLS"},
	}
	for _, tc := range tests {
		_, err := parseRunFlags(tc.args...)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.wantErr)
		case err != nil && strings.Contains(err.Error(), "\n"):
			t.Errorf("%v: error %q is not one line", tc.args, err)
		}
	}
}

// TestEveryConfigErrorReported: kubegcd run names every bad value at once,
// each as its own clause naming the flag, all on the one line it prints
// before it exits 2.
func TestEveryConfigErrorReported(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"one bad flag", []string{"--gc-workers", "0"}, "kubegcd: invalid --gc-workers 0: must be at least 1"},
		{"three bad flags", []string{"--log-level", "loud", "--gc-workers", "0", "--podgc-period", "100ms"},
			`kubegcd: [invalid --log-level "loud": want debug, info, warn or error, invalid --gc-workers 0: must be at least 1, ` +
				`invalid --podgc-period 100ms: must be at least 1s]`},
		{"lcgc's period under a second", []string{"--lease-candidate-gc-period", "500ms"},
			"kubegcd: invalid --lease-candidate-gc-period 500ms: must be at least 1s"},
		{"each unknown controller and each bad host", []string{"--controllers", "ownergc,nope,never", "--allowed-hosts", "a:1,b.example,c/d"},
			`kubegcd: [invalid --controllers: unknown controller "nope" (known: ownergc, podgc, ttl, svgc, lcgc), ` +
				`invalid --controllers: unknown controller "never" (known: ownergc, podgc, ttl, svgc, lcgc), ` +
				`invalid --allowed-hosts: "a:1" is not a host name (no scheme, port or path), ` +
				`invalid --allowed-hosts: "c/d" is not a host name (no scheme, port or path)]`},
		{"a bad listen address is not also unauthenticated", []string{"--listen", "nohostport", "--tls-cert-file", "c"},
			`kubegcd: [invalid --tls-cert-file/--tls-private-key-file: give both or neither, ` +
				`invalid --listen "nohostport": want HOST:PORT, such as 127.0.0.1:8080]`},
		{"leader election: no retry period to compare with", []string{"--leader-elect-name", "", "--leader-elect-retry-period", "0s",
			"--leader-elect-lease-duration", "1s"},
			`kubegcd: [invalid --leader-elect-namespace/--leader-elect-name: must not be empty, ` +
				`invalid --leader-elect-retry-period 0s: must be positive]`},
		{"leader election: renew deadline and lease duration", []string{"--leader-elect-renew-deadline", "2s", "--leader-elect-lease-duration", "2s"},
			`kubegcd: [invalid --leader-elect-renew-deadline 2s: must be more than 1.2 × --leader-elect-retry-period (2s), ` +
				`invalid --leader-elect-lease-duration 2s: must be more than --leader-elect-renew-deadline (2s)]`},
		{"leader election off: its timings are not checked", []string{"--leader-elect=false", "--leader-elect-retry-period", "0s",
			"--stuck-after", "-1s"}, "kubegcd: invalid --stuck-after -1s: must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRunFlags(tc.args...)
			if err == nil || err.Error() != tc.want {
				t.Errorf("err = %v\nwant  %s", err, tc.want)
			}
		})
	}
}

// TestListFlags: the list and map flags take a comma-separated value or
// several flags, from the command line or the config file, and a bad
// entry is refused with the flag named.
func TestListFlags(t *testing.T) {
	conf := func(t *testing.T, content string) string {
		p := filepath.Join(t.TempDir(), "k.conf")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const (
		nsFlag = "--terminated-pod-gc-threshold-namespace"
		all    = "ownergc,podgc,ttl,svgc,lcgc"
		local  = "127.0.0.1" // the host of the default --listen
	)
	tests := []struct {
		name       string
		args       func(t *testing.T) []string
		thresholds map[string]int
		// controllers and allowed hosts, joined with ",".
		controllers, hosts string
		wantErr            string
	}{
		{name: "defaults", args: func(*testing.T) []string { return nil }, controllers: all, hosts: local},
		{name: "thresholds repeated", args: func(*testing.T) []string { return []string{nsFlag, "ci=200", nsFlag, "nightly=0"} },
			thresholds: map[string]int{"ci": 200, "nightly": 0}, controllers: all, hosts: local},
		{name: "thresholds comma-separated", args: func(*testing.T) []string { return []string{nsFlag + "=ci=200,nightly=0", nsFlag, "ci=3"} },
			thresholds: map[string]int{"ci": 3, "nightly": 0}, controllers: all, hosts: local},
		{name: "thresholds in the config file", args: func(t *testing.T) []string {
			return []string{"--config", conf(t, "terminated-pod-gc-threshold-namespace = a=1,b=2\nterminated-pod-gc-threshold-namespace = c=3\n")}
		}, thresholds: map[string]int{"a": 1, "b": 2, "c": 3}, controllers: all, hosts: local},
		{name: "thresholds on the command line win over the file", args: func(t *testing.T) []string {
			return []string{nsFlag, "x=9", "--config", conf(t, "terminated-pod-gc-threshold-namespace = a=1\n")}
		}, thresholds: map[string]int{"x": 9}, controllers: all, hosts: local},
		{name: "threshold without a count", args: func(*testing.T) []string { return []string{nsFlag, "ci"} },
			wantErr: `invalid --terminated-pod-gc-threshold-namespace "ci": want NAME=NUMBER pairs separated by commas`},
		{name: "threshold not a number", args: func(*testing.T) []string { return []string{nsFlag, "ci=many"} },
			wantErr: `invalid --terminated-pod-gc-threshold-namespace "ci=many": want NAME=NUMBER pairs separated by commas`},
		{name: "negative threshold", args: func(*testing.T) []string { return []string{nsFlag, "ci=-1"} },
			wantErr: `kubegcd: invalid --terminated-pod-gc-threshold-namespace: count -1 of namespace "ci": must be 0 or more`},
		{name: "threshold of a name no namespace has", args: func(*testing.T) []string { return []string{nsFlag, "Not_A_Namespace=3,ok=1"} },
			wantErr: `kubegcd: invalid --terminated-pod-gc-threshold-namespace: namespace "Not_A_Namespace": a lowercase RFC 1123 label`},
		{name: "controllers repeated", args: func(*testing.T) []string { return []string{"--controllers", "ttl", "--controllers", "svgc,ttl"} },
			controllers: "ttl,svgc", hosts: local},
		{name: "no controllers", args: func(*testing.T) []string { return []string{"--controllers="} }, controllers: "", hosts: local},
		{name: "controllers in the config file", args: func(t *testing.T) []string {
			return []string{"--config", conf(t, "controllers = podgc, ttl\n")}
		}, controllers: "podgc,ttl", hosts: local},
		{name: "controller quoted badly", args: func(*testing.T) []string { return []string{"--controllers", `tt"l`} },
			wantErr: `invalid --controllers "tt\"l": want values separated by commas, quoted as in CSV`},
		{name: "hosts repeated", args: func(*testing.T) []string {
			return []string{"--allowed-hosts", "a.example", "--allowed-hosts", "b.example,c.example"}
		},
			controllers: all, hosts: local + ",a.example,b.example,c.example"},
		{name: "hosts in the config file", args: func(t *testing.T) []string {
			return []string{"--config", conf(t, "allowed-hosts = a.example,b.example\n")}
		}, controllers: all, hosts: local + ",a.example,b.example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseRunFlags(tc.args(t)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(c.namespaceThresholds, tc.thresholds) {
				t.Errorf("namespace thresholds %v, want %v", c.namespaceThresholds, tc.thresholds)
			}
			if got := strings.Join(api.Strings(c.controllers), ","); got != tc.controllers {
				t.Errorf("controllers %q, want %q", got, tc.controllers)
			}
			if got := strings.Join(c.allowedHosts, ","); got != tc.hosts {
				t.Errorf("allowed hosts %q, want %q", got, tc.hosts)
			}
		})
	}
}
