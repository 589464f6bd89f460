package http

import (
	"context"
	"sync"
	"time"
)

// scrapeCacheTTL is how long a metric's aggregate query serves scrapes:
// several Prometheus servers scraping every few seconds need not each run
// a query that reads the whole mirror.
const scrapeCacheTTL = 30 * time.Second

// scrapeTimeout bounds a scrape's query: Prometheus's default scrape
// timeout.
const scrapeTimeout = 10 * time.Second

// scrapeCache keeps the result of one query for ttl. Concurrent scrapes wait
// for one query rather than run several, and a failed query is not kept.
type scrapeCache[T any] struct {
	ttl  time.Duration
	now  func() time.Time
	load func(ctx context.Context, now time.Time) (T, error)

	mu     sync.Mutex
	loaded bool
	at     time.Time
	val    T
}

// get returns the kept result, or loads it anew once it is ttl old, and the
// time of the scrape.
func (c *scrapeCache[T]) get() (T, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.loaded && now.Sub(c.at) < c.ttl {
		return c.val, now, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	v, err := c.load(ctx, now)
	if err != nil {
		var zero T
		return zero, now, err
	}
	c.val, c.at, c.loaded = v, now, true
	return v, now, nil
}
