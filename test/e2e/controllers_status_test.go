package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStatusListsEveryController: /status and `kubegcd status` list every
// running controller, the queue-driven ownergc and svgc as well as the
// periodic podgc and ttl: each with its last pass, and ownergc and svgc
// with their queue's depth.
func TestStatusListsEveryController(t *testing.T) {
	d := daemons.Start(t, "", "--dry-run=true", "--resync-period=2s", "--podgc-period=1s")
	d.WaitReady(t, 60*time.Second)
	type controller struct {
		Name       string     `json:"name"`
		LastPass   *time.Time `json:"lastPass"`
		LastWork   *time.Time `json:"lastWork"`
		QueueDepth *int       `json:"queueDepth"`
	}
	eventually(t, 30*time.Second, func() error {
		var st struct{ Controllers []controller }
		d.GetJSON(t, "/status", http.StatusOK, &st)
		var names []string
		for _, c := range st.Controllers {
			names = append(names, c.Name)
			if c.LastPass == nil {
				return fmt.Errorf("%s: no pass yet", c.Name)
			}
			queued := c.Name == "ownergc" || c.Name == "svgc"
			if queued != (c.QueueDepth != nil) {
				return stopError{Err: fmt.Errorf("%s: queueDepth %v; want one for ownergc and svgc only", c.Name, c.QueueDepth)}
			}
		}
		if want := []string{"lcgc", "ownergc", "podgc", "svgc", "ttl"}; !slices.Equal(names, want) {
			return fmt.Errorf("/status lists controllers %v, want %v", names, want)
		}
		return nil
	})
	out := cliOK(t, d, []string{"QUEUE", "LAST WORK"}, "status")
	for _, name := range []string{"lcgc", "ownergc", "podgc", "svgc", "ttl"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name {
				found = true
			}
		}
		if !found {
			t.Errorf("kubegcd status lists no %s:\n%s", name, out)
		}
	}
}
