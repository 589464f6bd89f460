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
binary, in --dir (default: this binary's directory when it is writable,
else ~/.local/bin). kubectl finds plugins in $PATH, so that 'kubectl gc why
deploy/web' runs 'kubegcd why deploy/web'. An existing kubectl-gc symlink
is replaced; a file of that name is not.

Beside it, kubectl_complete-gc: kubectl (1.26 and later) runs it to complete
the words after 'kubectl gc' on the shell. One that kubegcd did not write is
left alone.`

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
	if dir == "" {
		dir = filepath.Dir(self)
		if !writable(dir) {
			home, err := os.UserHomeDir()
			if err != nil {
				return fmt.Errorf("%s is not writable and there is no home directory: give --dir", dir)
			}
			dir = filepath.Join(home, ".local", "bin")
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
	if path, _ := e.lookupEnv("PATH"); !slices.Contains(filepath.SplitList(path), dir) {
		fmt.Fprintf(e.stderr, "warning: %s is not in $PATH, where kubectl looks for plugins\n", dir)
	}
	return nil
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
