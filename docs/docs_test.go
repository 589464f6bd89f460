package docs_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	kubehttp "github.com/kubegcd/kubegcd/internal/http"
	"github.com/kubegcd/kubegcd/internal/mdanchor"
)

// root is the repository, one directory up.
const root = ".."

// TestSizes: the README reads in five minutes, and the design doc in
// twenty; the benchmark page holds current results only.
func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		file string
		max  int64
	}{
		{"README.md", 12 << 10},
		{"docs/architecture.md", 25 << 10},
		// 11 KB: the cleanup rules add their passes' and ingest's figures
		// (issue 48), the referrers' ingest (48), the rules' deletions (49)
		// and the cold start (51).
		{"docs/benchmarks.md", 11 << 10},
	} {
		fi, err := os.Stat(filepath.Join(root, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > tc.max {
			t.Errorf("%s is %d bytes, more than %d", tc.file, fi.Size(), tc.max)
		}
	}
}

// markdownFiles are the repository's own Markdown files, as git tracks or
// would track them: not the vendored libraries' or the build's.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "dist", "node_modules", "vendor", "testdata", "screenshots":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchors returns the anchors of a Markdown file's headings, with GitHub's
// -1, -2 … for repeated ones.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		a := mdanchor.Of(strings.ReplaceAll(m[1], "`", ""))
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestLinks: every relative link in a Markdown file names a file that
// exists, and every #anchor a heading of the file it points into.
func TestLinks(t *testing.T) {
	texts := map[string]string{}
	read := func(path string) (string, bool) {
		if s, ok := texts[path]; ok {
			return s, true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		texts[path] = string(b)
		return texts[path], true
	}
	for _, file := range markdownFiles(t) {
		text, _ := read(file)
		for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %s: no such file", file, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			destText, _ := read(dest)
			if !anchors(destText)[frag] {
				t.Errorf("%s: link %s: %s has no heading with anchor #%s", file, target, dest, frag)
			}
		}
	}
}

// TestEveryRouteDocumented: docs/api.md names every route the API serves,
// as "METHOD /path".
func TestEveryRouteDocumented(t *testing.T) {
	h, err := kubehttp.NewHandler(kubehttp.Options{Profiling: true})
	if err != nil {
		t.Fatal(err)
	}
	api, err := os.ReadFile("api.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		// A wildcard or a parameter ends what the doc must spell out.
		if i := strings.IndexAny(route, "*{"); i >= 0 && !strings.HasPrefix(route[i:], "{uid}") {
			route = route[:i]
		}
		n++
		if !bytes.Contains(api, []byte("`"+method+" "+route)) {
			t.Errorf("docs/api.md does not document %s %s", method, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Fatalf("walked %d routes: the router was not walked whole", n)
	}
}

// Every rule id the code writes is explained in docs/rules.md: web's
// TestRulesJS checks it, as it builds the UI's links to each rule from
// that file.

// TestNoPathOutsideTheRepository: no file the repository ships points at a
// directory beside it, which a user who clones it does not have.
func TestNoPathOutsideTheRepository(t *testing.T) {
	out, err := exec.Command("git", "-C", root, "grep", "-n", "-I", "-e", "\\.\\./"+"shared", "--", ".").CombinedOutput()
	if err == nil {
		t.Errorf("files name a directory outside the repository:\n%s", out)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("git grep: %v: %s", err, out)
	}
}

// TestFiguresOnlyInBenchmarks: measured figures live in docs/benchmarks.md,
// not in any other Markdown file. A setting (a debounce of 100 ms)
// is no figure; latencies by percentile, microseconds, rates and a
// before → after are.
func TestFiguresOnlyInBenchmarks(t *testing.T) {
	figure := regexp.MustCompile(`\bp(50|90|99)\b|[0-9] ?µs\b|[0-9] ?[a-z]*/s\b|[0-9][^ ]* ?(ms|s|µs|MB|%)? ?→ ?[0-9]`)
	for _, file := range markdownFiles(t) {
		if filepath.Base(file) == "benchmarks.md" || filepath.Base(file) == "CHANGELOG.md" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := figure.FindString(line); m != "" {
				t.Errorf("%s:%d: a measured figure (%q) belongs in docs/benchmarks.md: %s", file, i+1, m, line)
			}
		}
	}
}
