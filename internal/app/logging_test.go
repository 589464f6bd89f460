package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestJournalHandler(t *testing.T) {
	var buf bytes.Buffer
	logger := newLogger(&buf, slog.LevelDebug, logFormatJournal).With("component", "test")
	logger.Debug("looking", "uid", "u1")
	logger.Info("started", "listen", "127.0.0.1:8080")
	logger.WithGroup("g").Warn("slow", "after", "2s")
	logger.Error("failed", "err", "two\nlines")
	want := []string{
		`<7>level=DEBUG msg=looking component=test uid=u1`,
		`<6>level=INFO msg=started component=test listen=127.0.0.1:8080`,
		`<4>level=WARN msg=slow component=test g.after=2s`,
		`<3>level=ERROR msg=failed component=test err="two\nlines"`,
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")); diff != "" {
		t.Errorf("journal lines (-want +got):\n%s", diff)
	}
}

// TestLogFormatAuto: auto writes journal lines only to the stream
// $JOURNAL_STREAM names, text (with a time) elsewhere.
func TestLogFormatAuto(t *testing.T) {
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	journal, other := open("journal"), open("other")
	var st syscall.Stat_t
	if err := syscall.Fstat(int(journal.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	stream := fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	tests := []struct {
		name, env, format string
		w                 *os.File
		wantPrefix        string
	}{
		{name: "journal stream", env: stream, format: logFormatAuto, w: journal, wantPrefix: "<6>level=INFO msg=hello"},
		{name: "stderr redirected elsewhere", env: stream, format: logFormatAuto, w: other, wantPrefix: "time="},
		{name: "no journal", env: "", format: logFormatAuto, w: journal, wantPrefix: "time="},
		{name: "text chosen", env: stream, format: logFormatText, w: journal, wantPrefix: "time="},
		{name: "json chosen", env: stream, format: logFormatJSON, w: journal, wantPrefix: `{"time":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("JOURNAL_STREAM", tt.env)
			off, err := tt.w.Seek(0, 2)
			if err != nil {
				t.Fatal(err)
			}
			newLogger(tt.w, slog.LevelInfo, tt.format).Info("hello")
			b, err := os.ReadFile(tt.w.Name())
			if err != nil {
				t.Fatal(err)
			}
			if got := string(b[off:]); !strings.HasPrefix(got, tt.wantPrefix) {
				t.Errorf("logged %q, want it to start with %q", got, tt.wantPrefix)
			}
		})
	}
}

// TestFatalLineInJournal: the one line that says why kubegcd exits is at
// error priority in the journal, and plain elsewhere.
func TestFatalLineInJournal(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\n"+
		"contexts:\n- name: c\n  context: {cluster: c}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, journal := range []bool{true, false} {
		t.Run(fmt.Sprint("journal=", journal), func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			t.Setenv("JOURNAL_STREAM", "")
			want := "kubegcd: "
			if journal {
				var st syscall.Stat_t
				if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
					t.Fatal(err)
				}
				t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
				want = "<3>kubegcd: "
			}
			// A database in a directory that does not exist: the run fails
			// after the logger is set up.
			code := Main(t.Context(), []string{"run", "--kubeconfig", kubeconfig, "--db", filepath.Join(dir, "missing", "k.db")}, io.Discard, f)
			b, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if last := lines[len(lines)-1]; code != exitError || !strings.HasPrefix(last, want) {
				t.Errorf("exit %d, last line %q; want %d and a line starting %q", code, last, exitError, want)
			}
		})
	}
}

// TestServerErrorLog: the HTTP server's own errors become lines of the
// daemon's log format, at most the limit a window; the count of the rest
// follows when the window ends, with the next line or, without one, from
// a timer.
func TestServerErrorLog(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1_000_000, 0)
	var timers []time.Duration
	var fire func()
	s := &serverErrors{logger: newLogger(&buf, slog.LevelInfo, logFormatJSON), limit: 3, window: time.Minute,
		now: func() time.Time { return now }, afterFunc: func(d time.Duration, f func()) { timers, fire = append(timers, d), f }}
	errorLog := log.New(s, "", 0)

	for i := range 5 {
		errorLog.Printf("http: TLS handshake error from 127.0.0.1:%d: EOF", 40000+i)
	}
	now = now.Add(20 * time.Second)
	errorLog.Printf("http: TLS handshake error from 127.0.0.1:40005: EOF")
	now = now.Add(40 * time.Second) // the next window
	errorLog.Printf("http: TLS handshake error from 127.0.0.1:40006: EOF")
	for range 2 {
		errorLog.Printf("http: TLS handshake error from 127.0.0.1:40007: EOF")
	}
	errorLog.Printf("http: TLS handshake error from 127.0.0.1:40008: EOF") // dropped, said by the timer
	fire()

	var got []string
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		what := rec["err"]
		if what == nil {
			what = rec["count"]
		}
		got = append(got, fmt.Sprintf("%v %v: %v", rec["level"], rec["msg"], what))
	}
	want := []string{
		"WARN http server error: http: TLS handshake error from 127.0.0.1:40000: EOF",
		"WARN http server error: http: TLS handshake error from 127.0.0.1:40001: EOF",
		"WARN http server error: http: TLS handshake error from 127.0.0.1:40002: EOF",
		"WARN more http server errors, not logged: 3",
		"WARN http server error: http: TLS handshake error from 127.0.0.1:40006: EOF",
		"WARN http server error: http: TLS handshake error from 127.0.0.1:40007: EOF",
		"WARN http server error: http: TLS handshake error from 127.0.0.1:40007: EOF",
		"WARN more http server errors, not logged: 1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]time.Duration{time.Minute, time.Minute}, timers); diff != "" {
		t.Errorf("timers set for the end of each window (-want +got):\n%s", diff)
	}
}
