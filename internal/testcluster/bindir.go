package testcluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const modulePath = "github.com/kubegcd/kubegcd"

// binaries are the executables every cluster runs; BinDir checks all of them
// so a missing one is reported up front rather than as a confusing exec
// failure. kube-controller-manager is not among them: only some tests start
// one (StartControllerManager checks it), and the demo does without.
var binaries = []string{"etcd", "kube-apiserver"}

// BinDir returns the directory holding etcd and kube-apiserver (and, when
// built, kube-controller-manager): $KUBEGCD_BIN_DIR if set, else <repo root>/bin, where
// the repo root is the nearest ancestor of the working directory whose go.mod
// declares this module (go test runs in the package directory, so walking up is
// needed).
func BinDir() (string, error) {
	dir := os.Getenv("KUBEGCD_BIN_DIR")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, name := range binaries {
		if err := checkBin(dir, name); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// checkBin reports, with how to build it, when dir holds no executable name.
func checkBin(dir, name string) error {
	p := filepath.Join(dir, name)
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%s not found in %s (run `make kube-bins` or set KUBEGCD_BIN_DIR): %w", name, dir, err)
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file (run `make kube-bins`)", p)
	}
	return nil
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if declaresModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod declaring module %s above %s (set KUBEGCD_BIN_DIR, or run `make kube-bins` in the repo)", modulePath, wd)
		}
	}
}

// declaresModule reports whether the go.mod at path has `module <modulePath>`.
func declaresModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}
