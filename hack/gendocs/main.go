// Command gendocs writes kubegcd's man pages, one per command, and its
// Markdown references (docs/flags.md, docs/cli.md, docs/metrics.md), from
// the commands, their flags and the metrics' descriptors, so that they
// never drift from --help and /metrics. It builds docs/openapi.json, the
// document the binary embeds and GET /openapi/v3 serves, from
// api.Operations and package api's types and doc comments, and the
// reference of docs/api.md from that document.
//
//	go run ./hack/gendocs [--dir bin/man]
//	go run ./hack/gendocs --markdown docs
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra/doc"
	flag "github.com/spf13/pflag"

	"github.com/kubegcd/kubegcd/internal/app"
)

func main() {
	opts, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(2)
	}
	err = func() error {
		if opts.markdown != "" {
			if err := writeMarkdown(context.Background(), opts.markdown); err != nil {
				return err
			}
			if !opts.manGiven {
				return nil
			}
		}
		return writeManPages(opts.man)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// options are what gendocs writes where.
type options struct {
	man, markdown string
	manGiven      bool // --dir given: with --markdown, the man pages too
}

// parseArgs reads gendocs's flags into a set of its own, not
// pflag.CommandLine: cobra adds that set's flags to every command, and
// they would be documented as kubegcd's.
func parseArgs(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("gendocs", flag.ContinueOnError)
	fs.StringVar(&o.man, "dir", "bin/man", "directory to write the man pages (section 1) into")
	fs.StringVar(&o.markdown, "markdown", "",
		"directory to write flags.md, cli.md, metrics.md, openapi.json and api.md into "+
			"(metrics.md and api.md keep what lies outside their generated parts); "+
			"the man pages are then written only when --dir is given")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.manGiven = fs.Changed("dir")
	return o, nil
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

// markdownDocs are the references writeMarkdown writes, by file name:
// the Markdown ones and the API's OpenAPI document.
var markdownDocs = []string{"flags.md", "cli.md", "metrics.md", "openapi.json", "api.md"}

// partlyGenerated are the references whose text outside their markers is
// written by hand.
var partlyGenerated = []string{"metrics.md", "api.md"}

// writeMarkdown writes each of markdownDocs into dir, rendered from what
// the file holds now (see render).
func writeMarkdown(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range markdownDocs {
		path := filepath.Join(dir, name)
		old, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		text, err := render(ctx, name, old)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(path, text, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// render is the reference name as it should read, given the file as it
// reads now (nil when there is none): flags.md and cli.md are generated
// whole, metrics.md and api.md between their markers only.
func render(ctx context.Context, name string, old []byte) ([]byte, error) {
	switch name {
	case "flags.md":
		return flagsDoc(), nil
	case "cli.md":
		return cliDoc(), nil
	case "metrics.md":
		return metricsDoc(ctx, old)
	case "openapi.json":
		return openAPIDocument()
	case "api.md":
		return apiDoc(old)
	}
	return nil, fmt.Errorf("no such reference")
}
