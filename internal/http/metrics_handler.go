package http

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves /metrics. A collector that fails, such as one
// whose read timed out while a cold start keeps the database busy, leaves
// out its own metrics and is logged: the others are still served. By
// default promhttp would answer 500, and every metric would be lost to
// the scrape for one slow query.
func metricsHandler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      scrapeErrorLog{log},
	})
}

// scrapeErrorLog is promhttp's error log on slog.
type scrapeErrorLog struct{ log *slog.Logger }

func (l scrapeErrorLog) Println(v ...any) {
	l.log.Warn("serving metrics", "err", fmt.Sprint(v...))
}
