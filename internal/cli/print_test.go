package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestTablePrint(t *testing.T) {
	tb := newTable("NAMESPACE", "NAME", "AGE")
	tb.add("demo", "web", "5m")
	tb.add("", "a-much-longer-name", "2d")
	tb.add("x", "tab\there\nnewline", "1s")
	var b bytes.Buffer
	if err := tb.print(&b); err != nil {
		t.Fatal(err)
	}
	// kubectl's layout: columns three spaces apart, at least six wide; a
	// tab or newline in a cell does not break the row.
	want := "" +
		"NAMESPACE   NAME                 AGE\n" +
		"demo        web                  5m\n" +
		"            a-much-longer-name   2d\n" +
		"x           tab here newline     1s\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	tests := []struct {
		name string
		t    *time.Time
		want string
	}{
		{"seconds", at(42 * time.Second), "42s"},
		{"minutes", at(5 * time.Minute), "5m"},
		{"minutes and seconds", at(5*time.Minute + 30*time.Second), "5m30s"},
		{"hours", at(3*time.Hour + 10*time.Minute), "3h10m"},
		{"days", at(49 * time.Hour), "2d1h"},
		{"many days", at(9 * 24 * time.Hour), "9d"},
		{"years", at(800 * 24 * time.Hour), "2y70d"},
		{"unset", nil, "<unknown>"},
		{"zero", &time.Time{}, "<unknown>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := age(tt.t, now); got != tt.want {
				t.Errorf("age = %q, want %q", got, tt.want)
			}
		})
	}
	if got := ago(nil, now); got != "<never>" {
		t.Errorf("ago(nil) = %q, want <never>", got)
	}
	if got := ago(at(2*time.Minute), now); got != "2m ago" {
		t.Errorf("ago(2m) = %q, want 2m ago", got)
	}
}

func TestPrintRaw(t *testing.T) {
	body := []byte(`{"items":[{"name":"web"}]}` + "\n")
	want := "{\n  \"items\": [\n    {\n      \"name\": \"web\"\n    }\n  ]\n}\n"
	var j, y bytes.Buffer
	if err := printRaw(&j, outJSON, body); err != nil {
		t.Fatal(err)
	}
	if j.String() != want {
		t.Errorf("json: %q, want the answer indented, %q", j.Bytes(), want)
	}
	if err := printRaw(&y, outYAML, body); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("items:\n- name: web\n", y.String()); diff != "" {
		t.Errorf("yaml (-want +got):\n%s", diff)
	}
}

func TestUseColor(t *testing.T) {
	tty := openTerminal(t)
	tests := []struct {
		name string
		w    io.Writer
		env  map[string]string
		want bool
	}{
		{"terminal", tty, nil, true},
		{"terminal, NO_COLOR", tty, map[string]string{"NO_COLOR": "1"}, false},
		{"terminal, NO_COLOR empty", tty, map[string]string{"NO_COLOR": ""}, true},
		{"buffer", &bytes.Buffer{}, nil, false},
		{"file", mustCreate(t), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := useColor(tt.w, envOf(tt.env)); got != tt.want {
				t.Errorf("useColor = %v, want %v", got, tt.want)
			}
		})
	}
}

// openTerminal opens the terminal side of a new pseudo-terminal: a
// terminal that every Linux machine, CI's containers included, can make.
func openTerminal(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close() })
	// unlockpt, then ptsname, as posix_openpt's callers do.
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

func mustCreate(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestPlurals(t *testing.T) {
	for kind, want := range map[string]string{"Pod": "Pods", "ReplicaSet.apps": "ReplicaSets.apps", "Ingress": "Ingresses",
		"NetworkPolicy": "NetworkPolicies", "Gateway": "Gateways", "Endpoints": "Endpoints", "Mesh": "Meshes", "Box": "Boxes",
		"PodDisruptionBudget.policy": "PodDisruptionBudgets.policy", "": ""} {
		if got := kindPlural(kind); got != want {
			t.Errorf("kindPlural(%q) = %q, want %q", kind, got, want)
		}
	}
	if got := count(1, "object", "objects") + ", " + count(0, "object", "objects") + ", " + count(int64(2), "Pod", "Pods"); got != "1 object, 0 objects, 2 Pods" {
		t.Errorf("count: %q", got)
	}
}
