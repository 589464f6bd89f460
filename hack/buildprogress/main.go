// Command buildprogress runs a `go build -v` and condenses the package
// names it prints into a count of the packages compiled. On a terminal the
// count is one line that updates every second. Elsewhere (a log, CI) a line
// comes every 100 packages, or after 30 s without one. Whatever else the
// build prints, such as compile errors and module downloads, passes through
// to stderr as it comes. It exits with the build's status.
//
//	buildprogress LABEL -- go build -v -o bin/kubegcd ./cmd/kubegcd
//
// `make demo` builds kubegcd and the control plane through it, so that a
// build of several minutes says what it is doing.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"time"
)

const (
	// every is how many packages a line reports off a terminal.
	every = 100
	// quiet is the longest a log goes without a line while the build runs:
	// a large binary's link step compiles no package for a minute.
	quiet = 30 * time.Second
	// tick is how often a terminal's line shows the time spent.
	tick = time.Second
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, isTerminal(os.Stdout), terminalWidth()))
}

// run runs args, LABEL -- COMMAND [ARG...], and returns the exit status.
func run(args []string, stdout, stderr io.Writer, tty bool, width int) int {
	if len(args) < 3 || args[1] != "--" || args[0] == "" {
		fmt.Fprintln(stderr, "usage: buildprogress LABEL -- go build -v [build flags] PACKAGES")
		return 2
	}
	cmd := exec.Command(args[2], args[3:]...)
	cmd.Stdout = stdout
	out, err := cmd.StderrPipe()
	if err != nil {
		fmt.Fprintln(stderr, "buildprogress:", err)
		return 1
	}
	p := newProgress(args[0], stdout, stderr, tty, width, time.Now)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "buildprogress:", err)
		return 1
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.tick()
			}
		}
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		p.line(sc.Text())
	}
	// A line too long for the scanner, and the rest after it, still reach
	// stderr.
	if sc.Err() != nil {
		_, _ = io.Copy(stderr, out)
	}
	err = cmd.Wait()
	close(stop)
	<-ticked
	p.done(err == nil)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(stderr, "buildprogress:", err)
		return 1
	}
}

// packageLine matches what `go build -v` prints for each package it
// compiles: its import path alone on a line. Errors have spaces or start
// with '#'.
var packageLine = regexp.MustCompile(`^[A-Za-z0-9_.~+-]+(/[A-Za-z0-9_.~+-]+)*$`)

// progress turns a build's lines into its report. Its methods may be called
// from two goroutines: the build's output and the ticker.
type progress struct {
	mu       sync.Mutex
	label    string
	out, err io.Writer
	tty      bool
	width    int
	now      func() time.Time

	start, reported time.Time
	packages        int
	last            string
	// shown: a terminal's progress line is on screen, to be cleared
	// before anything else is written.
	shown bool
}

func newProgress(label string, out, errw io.Writer, tty bool, width int, now func() time.Time) *progress {
	p := &progress{label: label, out: out, err: errw, tty: tty, width: width, now: now}
	p.start, p.reported = now(), now()
	if tty {
		p.draw()
	} else {
		fmt.Fprintf(out, "building %s…\n", label)
	}
	return p
}

// line takes one line the build printed.
func (p *progress) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !packageLine.MatchString(s) {
		p.clear()
		fmt.Fprintln(p.err, s)
		if p.tty {
			p.draw()
		}
		return
	}
	p.packages++
	p.last = s
	switch {
	case p.tty:
		p.draw()
	case p.packages%every == 0:
		p.report()
	}
}

// tick shows the time spent: on a terminal every tick, elsewhere after
// quiet without a line.
func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.tty:
		p.draw()
	case p.now().Sub(p.reported) >= quiet:
		p.report()
	}
}

// done ends the report: the count and the time, or that the build failed.
func (p *progress) done(ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if ok {
		fmt.Fprintf(p.out, "built %s: %s compiled in %s\n", p.label, packages(p.packages), p.elapsed())
		return
	}
	fmt.Fprintf(p.err, "building %s failed after %s: %s compiled\n", p.label, p.elapsed(), packages(p.packages))
}

// report writes one line of a log.
func (p *progress) report() {
	p.reported = p.now()
	fmt.Fprintf(p.out, "building %s… %s compiled, %s\n", p.label, packages(p.packages), p.elapsed())
}

// draw writes a terminal's line over the one before, cut to the width.
func (p *progress) draw() {
	s := fmt.Sprintf("building %s… %s compiled, %s", p.label, packages(p.packages), p.elapsed())
	if p.last != "" {
		s += ": " + p.last
	}
	if r := []rune(s); p.width > 1 && len(r) > p.width-1 {
		s = string(r[:p.width-2]) + "…"
	}
	fmt.Fprintf(p.out, "\r\033[K%s", s)
	p.shown = true
}

// clear removes a terminal's progress line.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.out, "\r\033[K")
		p.shown = false
	}
}

func (p *progress) elapsed() time.Duration {
	return p.now().Sub(p.start).Round(time.Second)
}

func packages(n int) string {
	if n == 1 {
		return "1 package"
	}
	return strconv.Itoa(n) + " packages"
}

// isTerminal: f is a character device, and $TERM does not say that it
// cannot move the cursor.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// terminalWidth is $COLUMNS, which shells set, or 80.
func terminalWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}
