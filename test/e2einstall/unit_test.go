package e2einstall

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// templateUnit is the shipped template unit, whose instances the test runs
// as systemd would.
const templateUnit = "../../deploy/kubegcd@.service"

// unitService is the [Service] section of a unit file: each key's values,
// in order.
func unitService(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			out[k] = append(out[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// instance is one instance of the template unit, started as systemd
// starts it, with every path it names mapped under root.
type instance struct {
	name string
	cmd  *exec.Cmd
	log  string
	// listen is the address of its HTTP API, from its config file.
	listen string
	db     string
	done   chan error
}

// TestTemplateUnitRunsTwoInstances: two instances of kubegcd@.service, each
// with the files cluster add --name wrote for it, run side by side against
// the cluster, each answering /readyz on its own port with its own
// database. There is no systemd here: the test does what the unit asks of
// systemd for each instance (the instance's ExecStart=, WorkingDirectory=,
// StateDirectory= and LoadCredential=), with the unit's paths under a
// directory of the test's.
func TestTemplateUnitRunsTwoInstances(t *testing.T) {
	unit := unitService(t, templateUnit)
	root := t.TempDir()
	mapped := strings.NewReplacer("/usr/local/bin/kubegcd", kubegcdBin,
		"/etc/kubegcd", filepath.Join(root, "etc/kubegcd"), "/var/lib/kubegcd", filepath.Join(root, "var/lib/kubegcd"))
	one := func(key string) string {
		t.Helper()
		if len(unit[key]) != 1 {
			t.Fatalf("%s has %d %s= lines, want 1", templateUnit, len(unit[key]), key)
		}
		return unit[key][0]
	}
	confDir := filepath.Join(root, "etc/kubegcd")

	var instances []*instance
	for _, name := range []string{"prod", "staging"} {
		expand := func(s string) string { return strings.ReplaceAll(s, "%i", name) }
		// The instance's files, as the operator makes them.
		out := clusterCmd(t, "add", "--name", name, "--config-dir", confDir, "--token-duration", "1h")
		t.Cleanup(func() { clusterCmd(t, "remove", "--name", name, "--config-dir", confDir) })
		if !strings.Contains(out, "run it: kubegcd run --config "+filepath.Join(confDir, name+".conf")) {
			t.Errorf("cluster add --name %s --config-dir does not say how to run it:\n%s", name, out)
		}

		// StateDirectory=: the database's directory, which the config
		// cluster add wrote must name.
		state := "/var/lib/" + expand(one("StateDirectory"))
		conf := filepath.Join(confDir, name+".conf")
		data := string(readFile(t, conf))
		db := regexp.MustCompile(`(?m)^db = (.*)$`).FindStringSubmatch(data)
		listen := regexp.MustCompile(`(?m)^listen = (.*)$`).FindStringSubmatch(data)
		if db == nil || filepath.Dir(db[1]) != state || listen == nil {
			t.Fatalf("%s: db %v, listen %v; want a database in %s, the unit's StateDirectory=", conf, db, listen, state)
		}
		if err := os.WriteFile(conf, []byte(mapped.Replace(data)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(mapped.Replace(state), 0o700); err != nil {
			t.Fatal(err)
		}

		// LoadCredential=ID:PATH: a copy of PATH as $CREDENTIALS_DIRECTORY/ID.
		creds := filepath.Join(root, "run/credentials", "kubegcd@"+name+".service")
		if err := os.MkdirAll(creds, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, lc := range unit["LoadCredential"] {
			id, src, _ := strings.Cut(expand(lc), ":")
			if err := os.WriteFile(filepath.Join(creds, id), readFile(t, mapped.Replace(src)), 0o400); err != nil {
				t.Fatal(err)
			}
		}

		// ExecStart=, in WorkingDirectory=, with none of the caller's
		// kubeconfig to fall back on.
		args := strings.Fields(mapped.Replace(expand(one("ExecStart"))))
		in := &instance{name: name, listen: listen[1], db: mapped.Replace(db[1]), log: filepath.Join(root, name+".log"), done: make(chan error, 1)}
		logFile, err := os.Create(in.log)
		if err != nil {
			t.Fatal(err)
		}
		defer logFile.Close()
		in.cmd = exec.Command(args[0], args[1:]...)
		in.cmd.Dir = mapped.Replace(expand(one("WorkingDirectory")))
		in.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "CREDENTIALS_DIRECTORY=" + creds}
		in.cmd.Stdout, in.cmd.Stderr = logFile, logFile
		instances = append(instances, in)
	}
	if instances[0].listen == instances[1].listen {
		t.Fatalf("both instances listen on %s", instances[0].listen)
	}

	// Both at once.
	for _, in := range instances {
		if err := in.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { in.done <- in.cmd.Wait() }()
		t.Cleanup(func() {
			_ = in.cmd.Process.Kill()
			if t.Failed() {
				t.Logf("kubegcd@%s's log:\n%s", in.name, readFile(t, in.log))
			}
		})
	}
	client := &http.Client{Timeout: 5 * time.Second}
	eventually(t, 2*time.Minute, func() error {
		for _, in := range instances {
			select {
			case err := <-in.done:
				in.done <- err
				return fmt.Errorf("kubegcd@%s exited: %v", in.name, err)
			default:
			}
			resp, err := client.Get("http://" + in.listen + "/readyz")
			if err != nil {
				return fmt.Errorf("kubegcd@%s: %w", in.name, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("kubegcd@%s: /readyz %d", in.name, resp.StatusCode)
			}
		}
		return nil
	})
	for _, in := range instances {
		if _, err := os.Stat(in.db); err != nil {
			t.Errorf("kubegcd@%s's database: %v", in.name, err)
		}
		if log := string(readFile(t, in.log)); !strings.Contains(log, in.db) {
			t.Errorf("kubegcd@%s's log does not name its database %s:\n%s", in.name, in.db, log)
		}
	}

	// SIGTERM, as systemctl stop sends (KillSignal=): each stops cleanly.
	for _, in := range instances {
		if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range instances {
		select {
		case err := <-in.done:
			if err != nil {
				t.Errorf("kubegcd@%s after SIGTERM: %v", in.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("kubegcd@%s did not stop within 30 s of SIGTERM", in.name)
		}
	}
}
