// Package liveness tells a wedged loop from a busy or idle one, for
// systemd's watchdog: each long-running loop beats whenever it makes
// progress (a turn, an item of work handed on), and a loop whose last beat
// is older than it may be is wedged. Restarting the process is then the
// only cure, and stopping the watchdog pings is how kubegcd asks for it.
package liveness

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Grace is added to twice a loop's period to get how long it may go
// without a beat: enough for a slow turn on a loaded machine (a relist
// written to a busy disk, a pass queued behind the client's rate limit),
// short enough for systemd to restart a wedged kubegcd within minutes.
const Grace = time.Minute

// Registry holds the loops to check.
type Registry struct {
	now func() time.Time

	mu    sync.Mutex
	loops []*Loop
}

// New returns an empty registry; now is the clock (time.Now when nil).
func New(now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	return &Registry{now: now}
}

// Loop is one loop's heartbeat.
type Loop struct {
	name   string
	maxGap time.Duration
	now    func() time.Time
	last   atomic.Int64 // unix nanoseconds of the last beat; 0 before the first
}

// Loop registers a loop that turns at least every period: it may go
// 2×period+Grace without a beat. A loop is checked from its first beat
// on: before it, it waits for something another loop's beats cover (the
// mirror's sync, the lease).
func (r *Registry) Loop(name string, period time.Duration) *Loop {
	l := &Loop{name: name, maxGap: 2*period + Grace, now: r.now}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loops = append(r.loops, l)
	return l
}

// Beat records progress now. A nil Loop (a loop nobody watches, as in
// tests) does nothing.
func (l *Loop) Beat() {
	if l != nil {
		l.last.Store(l.now().UnixNano())
	}
}

// Check returns an error naming every loop that has gone longer than it
// may without a beat, or nil when all are alive.
func (r *Registry) Check() error {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var wedged []string
	for _, l := range r.loops {
		last := l.last.Load()
		if last == 0 {
			continue
		}
		if gap := now.Sub(time.Unix(0, last)); gap > l.maxGap {
			wedged = append(wedged, fmt.Sprintf("%s made no progress for %s (at most %s expected)", l.name, gap.Round(time.Second), l.maxGap))
		}
	}
	if len(wedged) > 0 {
		return errors.New(strings.Join(wedged, "; "))
	}
	return nil
}
