package clusteradd

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/kubegcd/kubegcd/internal/cmdline"
)

// DefaultConfigDir is where the units read their files: kubegcd.service
// /etc/kubegcd/kubegcd.conf and the credential /etc/kubegcd/kubeconfig,
// kubegcd@NAME.service /etc/kubegcd/NAME.conf and NAME.kubeconfig.
const DefaultConfigDir = "/etc/kubegcd"

// stateDir is where kubegcd@NAME.service keeps its database: its
// StateDirectory=kubegcd/%i.
const stateDir = "/var/lib/kubegcd"

// firstPort is the shipped config's listen port, where the search for a
// free one starts.
const firstPort = 8080

// instanceName is a name systemd takes as an instance as it is (no
// escaping) and that makes a file name.
var instanceName = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)

func checkName(name string) error {
	switch {
	case name == "":
		return nil
	case !instanceName.MatchString(name):
		return cmdline.Usagef("invalid --name %q: want lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit, at most 64", name)
	case name == "kubegcd":
		return cmdline.Usagef("--name kubegcd: kubegcd.conf is kubegcd.service's; choose another name, or none for kubegcd.service")
	}
	return nil
}

// paths are the files cluster add writes.
type paths struct {
	kubeconfig string
	// conf is "" without --name: kubegcd.service's config file is the
	// package's, which cluster add leaves alone.
	conf string
}

func pathsFor(configDir, name, out string) paths {
	var p paths
	switch {
	case name != "":
		p.kubeconfig = filepath.Join(configDir, name+".kubeconfig")
		p.conf = filepath.Join(configDir, name+".conf")
	default:
		// The credential kubegcd.service loads.
		p.kubeconfig = filepath.Join(configDir, "kubeconfig")
	}
	if out != "" {
		p.kubeconfig = out
	}
	return p
}

// instanceConf is the shipped config file made the instance name's: its
// database in the instance's state directory, listening on port, and its
// comments naming the instance's kubeconfig.
func instanceConf(name string, port int) ([]byte, error) {
	db := filepath.Join(stateDir, name, "kubegcd.db")
	var out bytes.Buffer
	fmt.Fprintf(&out, "# kubegcd@%s's settings, which kubegcd cluster add wrote from the shipped\n"+
		"# kubegcd.conf. kubegcd@%s.service reads them; the unit passes the\n"+
		"# credential %s.kubeconfig.\n\n", name, name, name)
	var db1, listen1 bool
	for _, line := range strings.SplitAfter(string(shippedConf), "\n") {
		key, _, _ := strings.Cut(line, "=")
		switch strings.TrimSpace(key) {
		case "db":
			line, db1 = "db = "+db+"\n", true
		case "listen":
			line, listen1 = "listen = 127.0.0.1:"+strconv.Itoa(port)+"\n", true
		}
		out.WriteString(strings.ReplaceAll(line, DefaultConfigDir+"/kubeconfig", DefaultConfigDir+"/"+name+".kubeconfig"))
	}
	if !db1 || !listen1 {
		return nil, fmt.Errorf("the shipped kubegcd.conf sets no db or no listen")
	}
	return out.Bytes(), nil
}

// listenKey matches a config file's listen line: its key with or without
// dashes, and its address.
var listenKey = regexp.MustCompile(`(?m)^\s*(?:--)?listen\s*=\s*(\S+)\s*$`)

// freePort is the first port from firstPort on that no config file in
// dir listens on and that free says is free on this host.
func freePort(dir string, free func(port int) bool) (int, error) {
	taken := map[int]bool{}
	confs, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
	for _, c := range confs {
		data, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		for _, m := range listenKey.FindAllSubmatch(data, -1) {
			if _, port, err := net.SplitHostPort(string(m[1])); err == nil {
				if p, err := strconv.Atoi(port); err == nil {
					taken[p] = true
				}
			}
		}
	}
	for p := firstPort; p < firstPort+1000; p++ {
		if !taken[p] && free(p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d for the instance's listen", firstPort, firstPort+999)
}

// loopbackFree reports whether nothing listens on port on loopback.
func loopbackFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
