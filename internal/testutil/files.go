package testutil

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// FilesIn lists what dir holds, every level, relative to it, in
// filepath.WalkDir's order.
func FilesIn(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
