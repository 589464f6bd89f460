package app

import (
	"strings"
	"testing"
	"time"
)

func TestGraphStreamStallFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    time.Duration
		wantErr string
	}{
		{name: "default", want: 30 * time.Second},
		{name: "set", args: []string{"--graph-stream-stall-timeout", "3s"}, want: 3 * time.Second},
		{name: "under a second", args: []string{"--graph-stream-stall-timeout=500ms"},
			wantErr: "invalid --graph-stream-stall-timeout 500ms: must be at least 1s"},
		{name: "zero", args: []string{"--graph-stream-stall-timeout=0"}, wantErr: "invalid --graph-stream-stall-timeout 0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseRunFlags(tc.args...)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one with %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case c.graphStreamStall != tc.want:
				t.Errorf("stall timeout %s, want %s", c.graphStreamStall, tc.want)
			}
		})
	}
}
