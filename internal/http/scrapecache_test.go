package http

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestScrapeCache checks that a result serves scrapes for its TTL, that it
// is loaded anew after, and that a failed load is not kept.
func TestScrapeCache(t *testing.T) {
	clock := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	loads := 0
	var fail error
	c := scrapeCache[int]{ttl: 30 * time.Second, now: func() time.Time { return clock },
		load: func(context.Context, time.Time) (int, error) {
			loads++
			return loads, fail
		}}
	tests := []struct {
		name    string
		advance time.Duration
		fail    error
		want    int
		wantErr bool
	}{
		{name: "first scrape loads", want: 1},
		{name: "within the TTL", advance: 29 * time.Second, want: 1},
		{name: "at the TTL", advance: time.Second, want: 2},
		{name: "a failed load", advance: 30 * time.Second, fail: errors.New("locked"), wantErr: true},
		{name: "is not kept", want: 4},
		{name: "kept again", advance: time.Second, want: 4},
	}
	for _, tt := range tests {
		clock, fail = clock.Add(tt.advance), tt.fail
		got, at, err := c.get()
		if (err != nil) != tt.wantErr || !tt.wantErr && got != tt.want || !at.Equal(clock) {
			t.Errorf("%s: get() = %d, %v, %v; want %d, error %v, %v", tt.name, got, at, err, tt.want, tt.wantErr, clock)
		}
	}
}
