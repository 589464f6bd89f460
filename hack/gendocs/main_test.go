package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegcd/kubegcd/internal/app"
)

// TestManPages: a page for kubegcd and for each of its commands, each
// listing the command's flags, and the same bytes when written again.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := writeManPages(dir); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{"kubegcd.1": "--version", "kubegcd-completion-bash.1": "--no-descriptions"}
	for _, c := range app.Command().Commands() {
		if c.IsAvailableCommand() {
			pages["kubegcd-"+c.Name()+".1"] = "--help"
		}
	}
	pages["kubegcd-run.1"] = "--leader-elect-renew-deadline"
	pages["kubegcd-get.1"] = "--all-namespaces"
	again := t.TempDir()
	if err := writeManPages(again); err != nil {
		t.Fatal(err)
	}
	for name, flag := range pages {
		page, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !strings.Contains(string(page), `\fB`+flag) {
			t.Errorf("%s does not list %s", name, flag)
		}
		if second, _ := os.ReadFile(filepath.Join(again, name)); string(second) != string(page) {
			t.Errorf("%s differs when written again", name)
		}
	}
}
