// Command gendocs writes kubegcd's man pages, one per command, from the
// commands and their flags (cobra/doc), so that they never drift from
// --help.
//
//	go run ./hack/gendocs [--dir bin/man]
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra/doc"
	flag "github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/app"
)

func main() {
	dir := flag.String("dir", "bin/man", "directory to write the man pages (section 1) into")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "gendocs: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	if err := writeManPages(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func writeManPages(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root := app.Command()
	root.InitDefaultCompletionCmd() // cobra adds it when the binary runs
	// No date in the pages: a rebuild is byte for byte the same, as a
	// reproducible package wants.
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "KUBEGCD", Section: "1", Source: "kubegcd", Manual: "kubegcd manual"}
	return doc.GenManTree(root, header, dir)
}
