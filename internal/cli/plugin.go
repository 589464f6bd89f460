package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

const pluginHelp = `Installs kubegcd as a kubectl plugin: a symlink named kubectl-gc to this
binary, in --dir. kubectl finds plugins in $PATH, so that 'kubectl gc why
deploy/web' runs 'kubegcd why deploy/web'.

Without --dir, the plugin goes in the first directory on $PATH that can be
written and is not a system directory. ~/.local/bin and ~/bin are made
when $PATH names them and they are missing. When $PATH names no such
directory, the plugin goes in ~/.local/bin, and one line says how to add
that to $PATH. System directories are where packages install: /bin, /sbin,
and every directory under /usr, /opt and /snap, /usr/local/bin included.
kubegcd writes in one only when --dir names it.

An existing kubectl-gc symlink is replaced; a file of that name is not.
Beside it goes kubectl_complete-gc: kubectl (1.26 and later) runs it to
complete the words after 'kubectl gc' on the shell. One that kubegcd did
not write is left alone.`

func pluginCommand(e *env) *cobra.Command {
	cmd := newCommand("kubectl-plugin install [--dir DIR]", "install the kubectl plugin: kubectl gc …", pluginHelp)
	cmd.ValidArgs = []string{"install"}
	dir := cmd.Flags().String("dir", "", "where to create the kubectl-gc symlink")
	_ = cmd.MarkFlagDirname("dir")
	cmd.RunE = func(_ *cobra.Command, args []string) error { return installPlugin(e, *dir, args) }
	return cmd
}

func installPlugin(e *env, dir string, args []string) error {
	if len(args) != 1 || args[0] != "install" {
		return usagef("want: kubectl-plugin install [--dir DIR]")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return fmt.Errorf("finding this binary: %w", err)
	}
	path, _ := e.lookupEnv("PATH")
	if dir == "" {
		home, _ := e.lookupEnv("HOME")
		if dir, err = pluginDir(path, home, filepath.Dir(self)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	link := filepath.Join(dir, PluginName)
	if st, err := os.Lstat(link); err == nil {
		if st.Mode()&fs.ModeSymlink == 0 {
			return fmt.Errorf("%s exists and is not a symlink: remove it first", link)
		}
		if err := os.Remove(link); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(self, link); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "installed %s -> %s\n", link, self)
	complete := filepath.Join(dir, completionName)
	if err := writeCompletion(complete, link); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "installed %s\n", complete)
	if !onPath(path, dir) {
		fmt.Fprintf(e.stderr, "warning: %s is not in $PATH, where kubectl looks for plugins; add it: export PATH=\"%s:$PATH\"\n", dir, dir)
	}
	return nil
}

// pluginDir chooses where the plugin goes without --dir. kubectl runs only
// plugins on $PATH, so the choice follows $PATH's order: the first directory
// that can be written, skipping the system's (systemDir), which belong to
// packages. ~/.local/bin and ~/bin are made when $PATH names them. Failing
// that, ~/.local/bin, which Debian's ~/.profile adds to $PATH once it
// exists.
func pluginDir(path, home, selfDir string) (string, error) {
	var homeDirs []string
	if home != "" {
		homeDirs = []string{filepath.Join(home, ".local", "bin"), filepath.Join(home, "bin")}
	}
	for _, p := range filepath.SplitList(path) {
		if p == "" || !filepath.IsAbs(p) || systemDir(p) {
			continue // the working directory is no place for a plugin
		}
		p = filepath.Clean(p)
		if slices.ContainsFunc(homeDirs, func(h string) bool { return samePath(p, h) }) && os.MkdirAll(p, 0o755) != nil {
			continue
		}
		if writable(p) {
			return p, nil
		}
	}
	if len(homeDirs) > 0 {
		return homeDirs[0], nil
	}
	if !systemDir(selfDir) && writable(selfDir) {
		return selfDir, nil
	}
	return "", fmt.Errorf("$PATH names no writable directory for the plugin but system ones, and there is no home directory: give --dir")
}

// systemDir reports whether dir, or where its symlinks lead, is where the
// system's packages install executables: /bin, /sbin, or a directory under
// /usr (/usr/local/bin included), /opt or /snap.
func systemDir(dir string) bool {
	is := func(d string) bool {
		d = filepath.Clean(d)
		if d == "/bin" || d == "/sbin" {
			return true
		}
		for _, root := range []string{"/usr", "/opt", "/snap"} {
			if d == root || strings.HasPrefix(d, root+"/") {
				return true
			}
		}
		return false
	}
	if is(dir) {
		return true
	}
	real, err := filepath.EvalSymlinks(dir)
	return err == nil && is(real)
}

// onPath reports whether $PATH (path) names dir.
func onPath(path, dir string) bool {
	return slices.ContainsFunc(filepath.SplitList(path), func(p string) bool { return p != "" && samePath(p, dir) })
}

// samePath reports whether a and b name the same directory, through
// symlinks too (/bin and /usr/bin on a merged-/usr system).
func samePath(a, b string) bool {
	a, b = filepath.Clean(a), filepath.Clean(b)
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// completionName is the executable kubectl runs to complete a plugin's
// words: kubectl_complete-<plugin>.
const completionName = "kubectl_complete-gc"

// completionMark starts every completion script kubegcd writes: one that
// does not start with it is someone else's.
const completionMark = "#!/bin/sh\n# Written by kubegcd kubectl-plugin install:"

// writeCompletion writes the script kubectl runs to complete `kubectl gc`:
// the plugin's own words, from cobra's __complete, in the format kubectl
// expects.
func writeCompletion(path, plugin string) error {
	if old, err := os.ReadFile(path); err == nil && !strings.HasPrefix(string(old), completionMark) {
		return fmt.Errorf("%s exists and kubegcd did not write it: remove it first", path)
	}
	script := fmt.Sprintf("%s kubectl completes 'kubectl gc' through it.\nexec '%s' __complete \"$@\"\n",
		completionMark, strings.ReplaceAll(plugin, "'", `'\''`))
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writable reports whether a file can be created in dir.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".kubegcd-probe-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}
